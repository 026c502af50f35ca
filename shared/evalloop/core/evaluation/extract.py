"""Read the agent's answer text out of an HTTP response body (``docs/rules.md#endpoint-contract``).

The contract: the runner reads back "OpenAI-style SSE streams, OpenAI chat-completion JSON,
Anthropic Messages JSON, or any JSON object with a top-level response, content, output, text,
or answer string; plain-text bodies work too". :func:`extract_text` is that one function; the
SSE *framing* (bytes -> events) is the adapter's (``evalloop.adapters.agent_body`` uses
httpx-sse) and is passed in as ``frame_sse``, so this module stays pure.

Decoding (:func:`decode_body`): a UTF-8 byte-order mark is dropped; the ``charset`` of the
``Content-Type`` is honoured (``text/plain; charset=iso-8859-1``); without one the body is
UTF-8.

Detection order (unless a ``hint`` forces one reader):

0. **HTML** -- ``Content-Type: text/html`` (or XHTML), or a body shaped like an HTML document
   (``<!doctype html`` or ``<html``): never an answer, whatever the status (a proxy's error
   page is not the agent's reply). Raises ``html_page``. **Other documents** -- a
   ``Content-Type`` that is neither ``text/*`` nor JSON (XML, PDF, images, audio, video,
   ``application/octet-stream``...), or a body opening with an XML declaration or ``%PDF-``:
   never an answer either (an S3 ``<Error>`` document is not the agent's reply). Raises
   ``non_text_document``.
1. **SSE** -- ``Content-Type: text/event-stream``, or a body whose first line is an SSE field
   (``data:``, ``event:``, ``id:``, ``retry:`` or a ``:`` comment). ``data: [DONE]`` ends the
   stream. Each event's data is read as an OpenAI chunk (choice **index 0 only**: ``n > 1``
   streams interleave several choices; ``delta.content`` and ``delta.refusal``, or
   ``text``), an Anthropic stream event (``content_block_delta`` / ``text_delta``,
   ``content_block_start`` text; an ``error`` event is an error), an OpenAI Responses event
   (``response.output_text.delta``, ``response.refusal.delta``), a generic object (first string
   among ``response``, ``content``, ``output``, ``text``, ``answer``, ``delta``), or raw text.
   Deltas are concatenated as sent (they carry their own spaces). Events that carry no text
   (``ping``, ``message_start``, tool-call deltas...) are skipped.
2. **JSON** -- ``Content-Type`` containing ``json``, or a body starting with ``{``, ``[`` or
   ``"``: an OpenAI chat completion (the choice whose ``index`` is 0, else the first one, as in
   a stream: its ``message.content``, a string or a list of text and refusal parts, and its
   ``message.refusal`` -- a decline is an answer, alone when the content is null and after the
   text when a reply has both; legacy ``text``), an Anthropic
   Message (``content`` is a list of blocks; the ``text``
   blocks are joined with ``\\n``), an OpenAI Responses object (the ``output_text`` parts of
   its ``message`` items), a JSON string, or any object with a top-level
   ``response``/``content``/``output``/``text``/``answer`` string (first found, in that order).
   A body that only *looks* like JSON but does not parse, without a JSON content type, is plain
   text.
3. **Plain text** -- anything else, stripped of surrounding whitespace.

An object with an ``error`` (not null, ``false`` or empty) is ``error_object``, even beside an
answer key (``{"error": "upstream failed", "text": "I can't..."}``: the text words the failure),
in a stream too: the text before an error event is a broken-off answer. JSON nested too deep
to decode is ``malformed_json``, in a stream too. Whatever the format, an answer with no text
(an empty body, ``{"response": ""}``, a stream or a message of tool calls only, a reply with
no letter or digit such as zero-width spaces or ``"..."``) raises
``no_text``: it is never an empty answer that could pass a gate; an answer whose text is itself
an HTML document is ``html_page``. Every failure is a :class:`MalformedResponse` whose
``reason`` names its kind; the runner reports it per case as an agent error.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from evalloop.core.evaluation.tool_calls import QUICK_REPLY_FIELD, ToolCall, arguments_text
from evalloop.errors import AgentError

__all__ = [
    "GENERIC_KEYS",
    "Extracted",
    "JsonTooDeep",
    "MalformedResponse",
    "ResponseFormat",
    "SseFramer",
    "charset_of",
    "decode_body",
    "extract_text",
    "format_hint",
    "from_json_value",
    "has_answer_text",
    "is_text_media_type",
    "loads_json",
    "looks_like_html",
    "looks_like_sse",
    "media_type",
    "read_sse_data",
]

#: The five response formats of the endpoint contract (``docs/rules.md#endpoint-contract``).
ResponseFormat = Literal["sse", "openai", "anthropic", "json", "text"]
#: The generic keys, in the contract's order: "a top-level response, content, output, text,
#: or answer string".
GENERIC_KEYS: tuple[str, ...] = ("response", "content", "output", "text", "answer")
#: Splits an event-stream text into the ``data`` of each event, in order (one string per
#: event, its ``data:`` lines joined with ``\n``; events without data are left out).
SseFramer = Callable[[str], Iterable[str]]

_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")
_BOM = "\ufeff"
_HTML_TYPES = ("text/html", "application/xhtml+xml")
# a document's opening: an optional XML declaration and comments, then a doctype or one of
# the document-level elements (a fragment such as "<b>14 days</b>" is prose, not a page)
_HTML_START = re.compile(r"(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*"
                         r"(<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>])",
                         re.IGNORECASE | re.DOTALL)
# a document of another kind, by its opening: an XML declaration or root element (a body that
# is HTML is caught first), a PDF file
_DOCUMENT_START = re.compile(r"<\?xml[\s?]|%PDF-", re.IGNORECASE)
_CHARSET = re.compile(r"""charset\s*=\s*["']?([A-Za-z0-9._:-]+)""", re.IGNORECASE)


def loads_json(text: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None
               = None) -> Any:
    """``json.loads`` for untrusted text: nesting too deep for the decoder is a decode error.

    Args:
        text: JSON text.
        object_pairs_hook: as for :func:`json.loads` (e.g. to see keys given twice).

    Returns:
        The parsed value.

    Raises:
        json.JSONDecodeError: not JSON; :class:`JsonTooDeep` (a subclass) when nested too
            deep to decode (Python's decoder recurses once per level, so a body of 100,000
            ``[`` would otherwise raise ``RecursionError``).
    """
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except RecursionError as exc:
        raise JsonTooDeep("nested too deep to decode", "", 0) from exc


class JsonTooDeep(json.JSONDecodeError):
    """JSON nested deeper than the decoder can follow (see :func:`loads_json`)."""


class MalformedResponse(AgentError):
    """The body matched none of the contract's formats, or its format carried no text.

    Attributes:
        reason: ``no_text`` (no answer text: empty body or string, tool calls only, a stream
            without data), ``html_page``, ``non_text_document`` (an XML, PDF, image, audio,
            video or ``application/octet-stream`` body), ``not_text`` (undecodable in its
            declared or default charset, or an unknown charset), ``malformed_json`` (not
            JSON, or nested too deep to decode), ``unrecognised_json`` or ``error_object``.
    """

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")

    @property
    def kind(self) -> Literal["no_text", "html_page", "non_text_document", "not_text",
                              "malformed_response"]:
        """The agent-failure kind this is reported as: ``no_text``, ``html_page``,
        ``non_text_document`` and ``not_text`` are kinds of their own, the JSON reasons are
        ``malformed_response``."""
        if self.reason == "no_text":
            return "no_text"
        if self.reason == "html_page":
            return "html_page"
        if self.reason == "non_text_document":
            return "non_text_document"
        if self.reason == "not_text":
            return "not_text"
        return "malformed_response"

    @property
    def message(self) -> str:
        """The one-line message reported with :attr:`kind` (the reason is kept when the kind
        does not already say it)."""
        return str(self) if self.kind == "malformed_response" else self.detail


@dataclass(frozen=True, slots=True)
class Extracted:
    """The answer text (never empty), the format it was read from, the tool calls the
    answer made beside its text, in order (``docs/rules.md#tool-calls``), and what it shows
    the person asking beside its text -- each citation and quick reply, one line each
    (``docs/rules.md#what-a-reply-shows-beside-its-text``)."""

    text: str
    format: ResponseFormat
    tool_calls: tuple[ToolCall, ...] = ()
    beside_text: tuple[str, ...] = ()


def _abridge(value: object, limit: int = 120) -> str:
    try:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    except RecursionError:  # parsed near the decoder's depth limit, too deep to re-encode
        text = f"(a {type(value).__name__} nested too deep to show)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def has_answer_text(text: str) -> bool:
    """Whether a reply holds any letter or digit (any script: ``str.isalnum``).

    A reply without one -- whitespace, zero-width spaces, ``"..."``, ``"—"``, emoji only -- can
    neither answer, decline nor hand off, so it is no answer
    (``docs/rules.md#endpoint-contract``).
    """
    return any(ch.isalnum() for ch in text)


def _nonempty(text: str, fmt: ResponseFormat, what: str) -> Extracted:
    stripped = text.strip()
    if not stripped:
        raise MalformedResponse("no_text", f"{what} carried no answer text")
    if not has_answer_text(stripped):
        raise MalformedResponse("no_text", f"{what} carried no letter or digit: "
                                           f"{_abridge(ascii(stripped), 60)}")
    if looks_like_html(stripped):
        raise MalformedResponse("html_page", f"{what} is an HTML page, not an answer: "
                                             f"{_abridge(' '.join(stripped.split()), 80)}")
    return Extracted(stripped, fmt)


def _with_calls(found: Extracted, calls: Iterable[ToolCall],
                beside: Iterable[str] = ()) -> Extracted:
    return Extracted(found.text, found.format, tuple(calls), tuple(dict.fromkeys(beside)))


#: The fields of a citation the person asking is shown: a linked page's title and address, a
#: cited document's title or file name, the quoted text (OpenAI ``annotations``, Anthropic
#: ``citations``; docs/rules.md#what-a-reply-shows-beside-its-text).
_CITATION_FIELDS = ("title", "url", "document_title", "filename", "cited_text")


def _citations(listed: object) -> list[str]:
    """Each citation of an ``annotations`` / ``citations`` list as one line of what it shows,
    ``"citation: <its _CITATION_FIELDS, in that order>"``; citations that show nothing are left
    out."""
    found: list[str] = []
    for item in listed if isinstance(listed, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        # OpenAI chat nests the fields under the type: {"type": "url_citation",
        # "url_citation": {"url": ..., "title": ...}}
        inner = item[kind] if isinstance(kind, str) and isinstance(item.get(kind), dict) \
            else item
        shown = [" ".join(inner[k].split()) for k in _CITATION_FIELDS
                 if isinstance(inner.get(k), str) and inner[k].strip()]
        if shown:
            found.append("citation: " + " ".join(shown))
    return found


# --------------------------------------------------------------------------- decoding


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` value, lower-cased (``None`` if absent)."""
    found = _CHARSET.search(content_type or "")
    return found.group(1).lower() if found else None


def decode_body(body: bytes | str, content_type: str | None = None) -> str:
    """Decode a body to text: declared charset, else UTF-8; a leading byte-order mark dropped.

    Args:
        body: the raw body (text is only stripped of its BOM).
        content_type: the ``Content-Type`` header, if any.

    Returns:
        The text.

    Raises:
        MalformedResponse: ``not_text`` -- an unknown charset, a codec that is no text
            encoding (``base64``, ``rot13``...), or bytes that are not text in it.
    """
    if isinstance(body, str):
        return body.removeprefix(_BOM)
    declared = charset_of(content_type)
    charset = declared or "utf-8"
    try:
        codec = codecs.lookup(charset)
    except LookupError as exc:
        raise MalformedResponse("not_text", f"unknown charset {declared!r} in Content-Type "
                                            f"{content_type!r}") from exc
    if codec.name == "utf-8":
        charset = "utf-8-sig"  # drops the BOM a Windows tool or proxy may put first
    try:
        return body.decode(charset).removeprefix(_BOM)
    except LookupError as exc:  # a codec that is no text encoding: base64, rot13, zlib...
        raise MalformedResponse("not_text", f"charset {declared!r} in Content-Type "
                                            f"{content_type!r} is not a text encoding") from exc
    except UnicodeError as exc:  # UnicodeDecodeError, and the bare error of some codecs
        where = f"the declared charset {declared}" if declared else "UTF-8 (no charset declared)"
        raise MalformedResponse("not_text", f"body is not text in {where} ({exc})") from exc


def looks_like_html(text: str, content_type: str | None = None) -> bool:
    """Whether a body is an HTML page: an HTML content type, or a document-shaped body
    (``<!doctype html``, ``<html``, ``<head`` or ``<body`` first, after whitespace, an XML
    declaration and comments)."""
    ctype = (content_type or "").lower().split(";", 1)[0].strip()
    if ctype in _HTML_TYPES:
        return True
    return _HTML_START.match(text.lstrip(_BOM + " \t\r\n")) is not None


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value, lower-cased, parameters dropped (``""`` if
    none)."""
    return (content_type or "").lower().split(";", 1)[0].strip()


def is_text_media_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` can label an answer: none at all, ``text/*`` other than
    HTML and XML, or a JSON type (``application/json``, ``application/*+json``,
    ``application/x-ndjson``). XML, PDF, images, audio, video, fonts, archives and
    ``application/octet-stream`` cannot (``docs/rules.md#endpoint-contract``)."""
    mtype = media_type(content_type)
    if not mtype:
        return True
    if mtype in _HTML_TYPES or mtype == "text/xml" or mtype.endswith("+xml"):
        return False
    return mtype.startswith("text/") or "json" in mtype


def _document_kind(body: bytes | str, content_type: str | None) -> str | None:
    """What a body that is not an answer document is, or ``None`` (a text or JSON body)."""
    if not is_text_media_type(content_type):
        return f"a body of type {media_type(content_type)}"
    head = body[:64]
    if isinstance(head, bytes):
        head = head.decode("latin-1")
    head = head.lstrip(_BOM + "\xef\xbb\xbf \t\r\n")
    found = _DOCUMENT_START.match(head)
    if found is None:
        return None
    return "a PDF document" if found.group(0).startswith("%") else "an XML document"


def looks_like_sse(text: str, content_type: str | None = None) -> bool:
    """Whether a body is an event stream: ``text/event-stream``, or a first line that is an
    SSE field (``data:``, ``event:``, ``id:``, ``retry:``, a ``:`` comment)."""
    if (content_type or "").lower().startswith("text/event-stream"):
        return True
    first = re.split(r"\r\n|\r|\n", text.lstrip(_BOM + "\r\n"), maxsplit=1)[0]
    return first.startswith(_SSE_FIELDS)


# --------------------------------------------------------------------------- JSON


#: A reply object's field of buttons or links shown beside its answer: a quick-reply field
#: (:data:`QUICK_REPLY_FIELD`), or "actions" / "links" ('"actions": [{"type": "call", "label":
#: "Call Dr Osei (mobile)", "value": "tel:+447700900614"}]').
_QUICK_REPLY_KEY = re.compile(rf"{QUICK_REPLY_FIELD}|(?:[a-z]+_)*(?:actions|links)",
                              re.IGNORECASE)
#: Other fields a chat shows beside the answer, by what they are: cards and blocks (Bot
#: Framework ``attachments``, Slack ``blocks``, ``embeds``) and the sources a retrieval answer
#: lists (``sources``, ``references``, ``documents``, ``search_results``).
_SHOWN_KEYS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_QUICK_REPLY_KEY, "quick reply"),
    (re.compile(r"(?:[a-z]+_)*(?:attachments|blocks|embeds)", re.IGNORECASE), "attachment"),
    (re.compile(r"(?:[a-z]+_)*(?:sources|references|documents|search_results)", re.IGNORECASE),
     "source"))
#: The fields of a button, card, block or source that the person asking sees or sends, in the
#: order they are shown; nested ones (a card's ``content``, a block's ``text`` object or
#: ``elements``) are read the same way.
_SHOWN_TEXT = ("title", "text", "label", "subtitle", "description", "snippet", "summary",
               "payload", "value", "url", "href", "tel", "phone", "uri", "content", "body",
               "fields", "elements", "buttons", "facts")


def _shown_strings(item: object, depth: int = 0) -> list[str]:
    """The strings a shown item holds: itself, or its :data:`_SHOWN_TEXT` fields (nested
    objects and lists read the same way, at most 6 levels deep)."""
    if depth > 6:
        return []
    if isinstance(item, str):
        return [item] if item.strip() else []
    if isinstance(item, list):
        return [t for x in item for t in _shown_strings(x, depth + 1)]
    if isinstance(item, dict):
        return [t for k in _SHOWN_TEXT if k in item for t in _shown_strings(item[k], depth + 1)]
    return []


def _quick_replies(obj: dict[str, Any]) -> list[str]:
    """Each quick reply, suggestion, button, card, block or source an object holds beside its
    text (``{"response": "...", "quick_replies": ["Becky Lawson · member #SC-20471", ...]}``,
    ``"attachments"``, ``"blocks"``, ``"sources"``), one line each, named by what it is:
    ``"quick reply: <text>"``, ``"attachment: …"``, ``"source: …"``
    (docs/rules.md#what-a-reply-shows-beside-its-text)."""
    found: list[str] = []
    for key, value in obj.items():
        what = next((name for pattern, name in _SHOWN_KEYS if pattern.fullmatch(key)), None)
        if what is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            shown = " ".join(" ".join(t.split()) for t in dict.fromkeys(_shown_strings(item)))
            if shown:
                found.append(f"{what}: {shown}")
    return found


def _parts_citations(content: list[Any]) -> list[str]:
    return [c for p in content if isinstance(p, dict)
            for c in _citations(p.get("annotations") or p.get("citations"))]


def _parts_text(content: list[Any]) -> str:
    texts = [p["text"] for p in content
             if isinstance(p, dict) and isinstance(p.get("text"), str)
             and p.get("type", "text") in ("text", "output_text")]
    refusals = [p["refusal"] for p in content
                if isinstance(p, dict) and p.get("type") == "refusal"
                and isinstance(p.get("refusal"), str)]
    # a reply with both says both: the text and the decline are scored together
    return "\n".join(t for t in (*texts, *refusals) if t.strip())


def _openai_calls(message: dict[str, Any]) -> tuple[ToolCall, ...]:
    """The tool calls of an OpenAI message (``tool_calls``, legacy ``function_call``)."""
    calls: list[ToolCall] = []
    listed = message.get("tool_calls")
    for call in listed if isinstance(listed, list) else []:
        if isinstance(call, dict):
            fn = call.get("function")
            fn = fn if isinstance(fn, dict) else call
            calls.append(ToolCall(str(fn.get("name") or ""), arguments_text(fn.get("arguments"))))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        calls.append(ToolCall(str(legacy.get("name") or ""),
                              arguments_text(legacy.get("arguments"))))
    return tuple(calls)


def _openai(obj: dict[str, Any]) -> tuple[str, tuple[ToolCall, ...], list[str]]:
    choices = obj["choices"]
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("no_text", f"OpenAI completion with no choices: {_abridge(obj)}")
    indexed = [c for c in choices if isinstance(c, dict) and c.get("index") == 0]
    choice = indexed[0] if indexed else choices[0]
    message = choice.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        text = ""
        cites = _citations(message.get("annotations")) + _quick_replies(message) \
            + _quick_replies(obj)
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = _parts_text(content)
            cites += _parts_citations(content)
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            # a decline through the refusal field is the answer -- beside the text when a
            # reply has both (the gates see what the text gives as well as the decline)
            text = f"{text}\n{refusal}" if text.strip() else refusal
        if text.strip():
            return text, _openai_calls(message), cites
        what = "tool calls only" if message.get("tool_calls") or message.get("function_call") \
            else "no content"
        raise MalformedResponse("no_text", f"OpenAI completion message with {what}")
    if isinstance(choice.get("text"), str):
        return str(choice["text"]), (), []
    raise MalformedResponse("no_text", f"OpenAI choice without message or text: "
                                       f"{_abridge(choice)}")


def _anthropic(obj: dict[str, Any]) -> tuple[str, tuple[ToolCall, ...], list[str]]:
    blocks = obj["content"]
    text_blocks = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                   and isinstance(b.get("text"), str)]
    if not any(b["text"].strip() for b in text_blocks):
        kinds = sorted({str(b.get("type")) for b in blocks if isinstance(b, dict)})
        raise MalformedResponse("no_text", f"Anthropic message without text "
                                           f"(block types: {', '.join(kinds) or 'none'})")
    calls = tuple(ToolCall(str(b.get("name") or ""), arguments_text(b.get("input")))
                  for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use")
    return "\n".join(b["text"] for b in text_blocks), calls, _parts_citations(text_blocks)


def _responses(obj: dict[str, Any]) -> tuple[str, tuple[ToolCall, ...], list[str]]:
    """An OpenAI Responses object: the ``output_text`` (else ``refusal``) parts of its
    ``message`` items; tool-call items carry no text."""
    if obj.get("error") is not None:
        raise MalformedResponse("error_object", f"agent answered an error: "
                                                f"{_abridge(obj['error'])}")
    parts = [p for item in obj["output"] if isinstance(item, dict)
             and item.get("type") == "message" and isinstance(item.get("content"), list)
             for p in item["content"]]
    text = _parts_text(parts)
    if text.strip():
        calls = tuple(ToolCall(str(i.get("name") or ""), arguments_text(i.get("arguments")))
                      for i in obj["output"] if isinstance(i, dict)
                      and i.get("type") == "function_call")
        return text, calls, _parts_citations(parts)
    kinds = sorted({str(i.get("type")) for i in obj["output"] if isinstance(i, dict)})
    raise MalformedResponse("no_text", f"OpenAI response without text (output item types: "
                                       f"{', '.join(kinds) or 'none'})")


def _has_error(obj: dict[str, Any]) -> bool:
    """Whether an object carries an error: an ``error`` that is not null, ``false`` or empty."""
    error = obj.get("error")
    return error is not None and error is not False and error not in ("", {}, [])


def from_json_value(value: Any) -> Extracted:
    """Read the answer out of a parsed JSON body (OpenAI, Anthropic, generic object, string).

    Args:
        value: the parsed JSON.

    Returns:
        The answer text (surrounding whitespace stripped, never empty) and its format.

    Raises:
        MalformedResponse: ``no_text``, ``unrecognised_json`` or ``error_object``.
    """
    if isinstance(value, str):
        return _nonempty(value, "json", "JSON string")
    if not isinstance(value, dict):
        raise MalformedResponse("unrecognised_json",
                                f"expected a JSON object or string, received "
                                f"{type(value).__name__}: {_abridge(value)}")
    if _has_error(value):
        # an error beside text is an error reply: the text is the proxy's or the agent's
        # wording of the failure, not an answer to the question
        raise MalformedResponse("error_object", f"agent answered an error: "
                                                f"{_abridge(value['error'])}")
    if "choices" in value:
        text, calls, cites = _openai(value)
        return _with_calls(_nonempty(text, "openai", "OpenAI completion"), calls, cites)
    if isinstance(value.get("content"), list):
        text, calls, cites = _anthropic(value)
        return _with_calls(_nonempty(text, "anthropic", "Anthropic message"), calls,
                           cites + _quick_replies(value))
    if value.get("object") == "response" and isinstance(value.get("output"), list):
        text, calls, cites = _responses(value)
        return _with_calls(_nonempty(text, "openai", "OpenAI response"), calls,
                           cites + _quick_replies(value))
    for key in GENERIC_KEYS:
        if isinstance(value.get(key), str):
            return _with_calls(_nonempty(value[key], "json", f"JSON {key!r}"), (),
                               _quick_replies(value))
    raise MalformedResponse(
        "unrecognised_json",
        f"expected an OpenAI, Anthropic or {{{'|'.join(GENERIC_KEYS)}}} object, received keys "
        f"{sorted(value)[:10]}")


# --------------------------------------------------------------------------- SSE payloads


@dataclass
class _StreamState:
    pieces: list[str]
    tool_calls: bool = False
    #: the citations streamed beside the text (:func:`_citations`)
    beside_text: list[str] = field(default_factory=list)
    #: streamed tool calls by (dialect, index): [name, argument pieces, whole arguments]
    calls: dict[tuple[str, object], list[Any]] = field(default_factory=dict)

    def call(self, key: tuple[str, object], name: object = None, piece: object = None,
             whole: object = None) -> None:
        """Record part of a streamed tool call: its name, a piece of its arguments, or its
        whole arguments (a final event that repeats them)."""
        self.tool_calls = True
        entry = self.calls.setdefault(key, ["", [], None])
        if isinstance(name, str) and name:
            entry[0] = name
        if isinstance(piece, str):
            entry[1].append(piece)
        if whole is not None:
            entry[2] = arguments_text(whole)

    def tool_call_list(self) -> tuple[ToolCall, ...]:
        """The streamed tool calls, in the order they began."""
        return tuple(ToolCall(name, "".join(pieces) if pieces else (whole or ""))
                     for name, pieces, whole in self.calls.values())


def _openai_chunk(obj: dict[str, Any], state: _StreamState) -> None:
    for position, choice in enumerate(obj["choices"]):
        if not isinstance(choice, dict) or choice.get("index", position) != 0:
            continue  # n > 1: read choice 0, as the JSON reader does
        delta = choice.get("delta") or choice.get("message")
        if isinstance(delta, dict):
            listed = delta.get("tool_calls")
            for position_in, call in enumerate(listed if isinstance(listed, list) else []):
                if isinstance(call, dict):
                    fn = call.get("function")
                    fn = fn if isinstance(fn, dict) else {}
                    state.call(("openai", call.get("index", position_in)), fn.get("name"),
                               fn.get("arguments"))
            legacy = delta.get("function_call")
            if isinstance(legacy, dict):
                state.call(("openai-function", 0), legacy.get("name"), legacy.get("arguments"))
            if isinstance(delta.get("content"), str):
                state.pieces.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                state.pieces.append(delta["refusal"])  # a decline streamed as a refusal
            state.beside_text += _citations(delta.get("annotations"))
        elif isinstance(choice.get("text"), str):
            state.pieces.append(choice["text"])  # legacy completions stream


def _sse_event(data: str, state: _StreamState) -> bool:
    """Read one event's data into ``state``; return whether the stream ended."""
    if data.strip() == "[DONE]":
        return True
    try:
        obj = loads_json(data)
    except JsonTooDeep as exc:
        raise MalformedResponse("malformed_json", f"stream event data {exc.msg}") from exc
    except json.JSONDecodeError:
        state.pieces.append(data)
        return False
    if not isinstance(obj, dict):
        state.pieces.append(obj if isinstance(obj, str) else data)
        return False
    kind = obj.get("type")
    if kind == "error":
        raise MalformedResponse("error_object", f"stream error event: "
                                                f"{_abridge(obj.get('error', obj))}")
    if kind == "message_stop":
        return True
    if _has_error(obj):
        # an error mid-stream (beside text or not): the text so far is a broken-off answer
        raise MalformedResponse("error_object", f"stream error event: {_abridge(obj['error'])}")
    if isinstance(obj.get("choices"), list):
        _openai_chunk(obj, state)
        return False
    if kind == "content_block_delta":
        delta = obj.get("delta") or {}
        if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
            state.pieces.append(delta["text"])
        elif delta.get("type") == "citations_delta":
            state.beside_text += _citations([delta.get("citation")])
        elif delta.get("type") == "input_json_delta":
            state.call(("anthropic", obj.get("index")), piece=delta.get("partial_json"))
        return False
    if kind == "content_block_start":
        block = obj.get("content_block") or {}
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            state.pieces.append(block["text"])
        elif block.get("type") == "tool_use":
            # the input usually streams as input_json_delta; a non-empty one here is whole
            given = block.get("input")
            state.call(("anthropic", obj.get("index")), block.get("name"),
                       whole=given if given else None)
        return False
    if kind in ("response.output_text.delta", "response.refusal.delta") \
            and isinstance(obj.get("delta"), str):
        state.pieces.append(obj["delta"])
        return False
    if kind == "response.output_text.annotation.added":
        state.beside_text += _citations([obj.get("annotation")])
        return False
    if kind == "response.function_call_arguments.delta":
        state.call(("responses", obj.get("output_index", obj.get("item_id"))),
                   piece=obj.get("delta"))
        return False
    if kind in ("response.output_item.added", "response.output_item.done") \
            and isinstance(obj.get("item"), dict) and obj["item"].get("type") == "function_call":
        item = obj["item"]
        state.call(("responses", obj.get("output_index", item.get("id"))), item.get("name"),
                   whole=item.get("arguments") if kind.endswith("done") else None)
        return False
    if isinstance(kind, str) and kind.startswith(("message_", "response.", "content_block")):
        return False
    if kind == "ping":
        return False
    for key in (*GENERIC_KEYS, "delta"):
        if isinstance(obj.get(key), str):
            state.pieces.append(obj[key])
            return False
    return False


def read_sse_data(events: Iterable[str]) -> Extracted:
    """Read the answer out of an event stream's events (their ``data``, already framed).

    Args:
        events: each event's data, in order (see :data:`SseFramer`).

    Returns:
        The concatenated text (surrounding whitespace stripped, never empty), format ``sse``.

    Raises:
        MalformedResponse: ``no_text`` (no data events, or none carrying text -- e.g. tool
            calls only) or ``error_object`` (a stream ``error`` event).
    """
    state = _StreamState(pieces=[])
    count = 0
    for data in events:
        count += 1
        if _sse_event(data, state):
            break
    if count == 0:
        raise MalformedResponse("no_text", "event stream carried no data events")
    text = "".join(state.pieces).strip()
    if not text:
        what = "tool calls only" if state.tool_calls else f"{count} event(s) without text"
        raise MalformedResponse("no_text", f"event stream carried no answer text ({what})")
    return _with_calls(_nonempty(text, "sse", "event stream"), state.tool_call_list(),
                       state.beside_text)


# --------------------------------------------------------------------------- dispatch

_HINTS: dict[str, ResponseFormat | None] = {
    "auto": None, "": None, "sse": "sse", "openai-sse": "sse", "anthropic-sse": "sse",
    "stream": "sse", "openai": "openai", "anthropic": "anthropic", "json": "json",
    "text": "text", "plain": "text",
}


def format_hint(value: str | None) -> ResponseFormat | None:
    """Map a configured format name to a reader hint (``None`` = detect per response).

    Accepts the five formats plus the agent registry's names (``auto``, ``openai-sse``,
    ``anthropic-sse``, ``plain``), case-insensitively.

    Raises:
        ValueError: an unknown name (the message lists the accepted ones).
    """
    if value is None:
        return None
    key = value.strip().lower()
    if key not in _HINTS:
        raise ValueError(f"expected a response format among {sorted(_HINTS)}, received {value!r}")
    return _HINTS[key]


def extract_text(body: bytes | str, content_type: str | None = None, *,
                 hint: ResponseFormat | None = None, frame_sse: SseFramer) -> Extracted:
    """Extract the answer text from an agent's response body.

    Args:
        body: the raw body (bytes are decoded by :func:`decode_body`).
        content_type: the response's ``Content-Type`` header, if any.
        hint: force one reader (``sse``, ``openai``, ``anthropic``, ``json``, ``text``);
            ``None`` detects the format (see the module docstring). An HTML page is refused
            whatever the hint.
        frame_sse: splits an event stream into events' data (the adapter's httpx-sse framing).

    Returns:
        The text (surrounding whitespace stripped, never empty) and the format it was read from.

    Raises:
        MalformedResponse: ``reason`` names the kind -- ``html_page``, ``not_text``,
            ``no_text``, ``malformed_json``, ``unrecognised_json``, ``error_object``.
    """
    document = _document_kind(body, content_type)
    head = body[:4096] if isinstance(body, str) else body[:4096].decode("latin-1")
    if document is not None and not looks_like_html(head, content_type):
        raise MalformedResponse("non_text_document",
                                f"{document} is not an answer (Content-Type {content_type!r}; "
                                f"the contract reads text, an event stream or JSON)")
    text = decode_body(body, content_type)
    ctype = (content_type or "").lower()
    if looks_like_html(text, content_type):
        raise MalformedResponse("html_page", f"an HTML page, not an answer "
                                             f"(Content-Type {content_type!r}): "
                                             f"{_abridge(' '.join(text.split()), 80)}")
    if hint == "text":
        return _nonempty(text, "text", "the body")
    if hint == "sse" or (hint is None and looks_like_sse(text, content_type)):
        return read_sse_data(frame_sse(text))
    declared_json = hint in ("openai", "anthropic", "json") or "json" in ctype
    stripped = text.strip()
    if declared_json or stripped[:1] in ("{", "[", '"'):
        try:
            value = loads_json(stripped)
        except JsonTooDeep as exc:
            raise MalformedResponse("malformed_json", f"{exc.msg}: {_abridge(stripped, 40)}") \
                from exc
        except json.JSONDecodeError as exc:
            if declared_json:
                if not stripped:
                    raise MalformedResponse("no_text", "empty JSON body") from exc
                raise MalformedResponse(
                    "malformed_json", f"{exc.msg} at line {exc.lineno} column {exc.colno}: "
                                      f"{_abridge(stripped)}") from exc
        else:
            return from_json_value(value)
    return _nonempty(stripped, "text", "the body")
