"""Read the agent's answer text out of an HTTP response body (seed 003's endpoint contract).

Seed 003: the runner "reads back OpenAI-style SSE streams, OpenAI chat-completion JSON,
Anthropic Messages JSON, or any JSON object with a top-level response, content, output, text,
or answer string. Plain text bodies work too." :func:`extract_text` is that one function.

Detection order (unless a ``hint`` forces one reader):

1. **SSE** -- ``Content-Type: text/event-stream``, or a body whose first line is an SSE field
   (``data:``, ``event:``, ``id:`` or a ``:`` comment). Events are split on blank lines; the
   ``data:`` lines of one event are joined with ``\\n`` (the SSE spec); ``data: [DONE]`` ends
   the stream. Each event's data is read as an OpenAI chunk (``choices[].delta.content`` or
   ``choices[].text``), an Anthropic stream event (``content_block_delta`` / ``text_delta``,
   ``content_block_start`` text; an ``error`` event is an error), an OpenAI Responses event
   (``response.output_text.delta``), a generic object (first string among ``response``,
   ``content``, ``output``, ``text``, ``answer``, ``delta``), or raw text. Deltas are
   concatenated as sent (they carry their own spaces). Unknown JSON events (``ping``,
   ``message_start``...) carry no text and are skipped.
2. **JSON** -- ``Content-Type`` containing ``json``, or a body starting with ``{``, ``[`` or
   ``"``: an OpenAI chat completion (``choices[0].message.content``, a string or a list of
   text parts; legacy ``choices[0].text``), an Anthropic Message (``content`` is a list of
   blocks; the ``text`` blocks are joined with ``\\n``), a JSON string, or any object with a
   top-level ``response``/``content``/``output``/``text``/``answer`` string (first found, in
   the seed's order). A body that only *looks* like JSON but does not parse, without a JSON
   content type, is plain text.
3. **Plain text** -- anything else, stripped of surrounding whitespace.

A body the contract cannot read raises :class:`MalformedResponse` (reported per case as an
agent error, never as an empty answer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from evalloop.errors import AgentError

__all__ = [
    "GENERIC_KEYS",
    "Extracted",
    "MalformedResponse",
    "ResponseFormat",
    "extract_text",
    "format_hint",
]

#: The five response formats of seed 003's endpoint contract.
ResponseFormat = Literal["sse", "openai", "anthropic", "json", "text"]
#: seed 003: "any JSON object with a top-level response, content, output, text, or answer string".
GENERIC_KEYS: tuple[str, ...] = ("response", "content", "output", "text", "answer")
_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")


class MalformedResponse(AgentError):
    """The body matched none of the contract's formats, or its format carried no text.

    Attributes:
        reason: ``not_utf8``, ``malformed_json``, ``unrecognised_json``, ``no_text``,
            ``error_object`` or ``empty_stream``.
    """

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True, slots=True)
class Extracted:
    """The answer text and the format it was read from."""

    text: str
    format: ResponseFormat


def _abridge(value: object, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parts_text(content: list[Any]) -> str:
    texts = [p["text"] for p in content
             if isinstance(p, dict) and isinstance(p.get("text"), str)
             and p.get("type", "text") in ("text", "output_text")]
    return "\n".join(texts)


def _openai(obj: dict[str, Any]) -> str:
    choices = obj["choices"]
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("no_text", f"OpenAI completion with no choices: {_abridge(obj)}")
    choice = choices[0]
    message = choice.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return _parts_text(content)
        what = "tool calls only" if message.get("tool_calls") else "no content"
        raise MalformedResponse("no_text", f"OpenAI completion message with {what}")
    if isinstance(choice.get("text"), str):
        return str(choice["text"])
    raise MalformedResponse("no_text", f"OpenAI choice without message or text: "
                                       f"{_abridge(choice)}")


def _anthropic(obj: dict[str, Any]) -> str:
    blocks = obj["content"]
    text_blocks = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                   and isinstance(b.get("text"), str)]
    if not text_blocks and blocks:
        kinds = sorted({str(b.get("type")) for b in blocks if isinstance(b, dict)})
        raise MalformedResponse("no_text", f"Anthropic message without text blocks "
                                           f"(block types: {', '.join(kinds) or 'none'})")
    return "\n".join(b["text"] for b in text_blocks)


def _from_json(value: Any) -> Extracted:
    if isinstance(value, str):
        return Extracted(value, "json")
    if not isinstance(value, dict):
        raise MalformedResponse("unrecognised_json",
                                f"expected a JSON object or string, received "
                                f"{type(value).__name__}: {_abridge(value)}")
    if "choices" in value:
        return Extracted(_openai(value), "openai")
    if isinstance(value.get("content"), list):
        return Extracted(_anthropic(value), "anthropic")
    for key in GENERIC_KEYS:
        if isinstance(value.get(key), str):
            return Extracted(value[key], "json")
    if "error" in value:
        raise MalformedResponse("error_object", f"agent answered an error: "
                                                f"{_abridge(value['error'])}")
    raise MalformedResponse(
        "unrecognised_json",
        f"expected an OpenAI, Anthropic or {{{'|'.join(GENERIC_KEYS)}}} object, received keys "
        f"{sorted(value)[:10]}")


def _sse_event_text(data: str) -> tuple[str, bool]:
    """Return (text carried by one event's data, whether the stream ended)."""
    if data.strip() == "[DONE]":
        return "", True
    try:
        obj = json.loads(data)
    except json.JSONDecodeError:
        return data, False
    if not isinstance(obj, dict):
        return (obj if isinstance(obj, str) else data), False
    kind = obj.get("type")
    if kind == "error":
        raise MalformedResponse("error_object", f"stream error event: "
                                                f"{_abridge(obj.get('error', obj))}")
    if kind == "message_stop":
        return "", True
    if isinstance(obj.get("choices"), list):
        out = []
        for choice in obj["choices"]:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                out.append(delta["content"])
            elif isinstance(choice.get("text"), str):
                out.append(choice["text"])
        return "".join(out), False
    if kind == "content_block_delta":
        delta = obj.get("delta") or {}
        return (delta.get("text", "") if delta.get("type") == "text_delta" else ""), False
    if kind == "content_block_start":
        block = obj.get("content_block") or {}
        return (block.get("text", "") if block.get("type") == "text" else ""), False
    if kind == "response.output_text.delta" and isinstance(obj.get("delta"), str):
        return obj["delta"], False
    if isinstance(kind, str) and kind.startswith(("message_", "response.", "content_block")):
        return "", False
    if kind == "ping":
        return "", False
    for key in (*GENERIC_KEYS, "delta"):
        if isinstance(obj.get(key), str):
            return obj[key], False
    return "", False


def _parse_sse(text: str) -> Extracted:
    pieces: list[str] = []
    data_lines: list[str] = []
    events = 0

    def dispatch() -> bool:
        nonlocal events
        if not data_lines:
            return False
        events += 1
        chunk, done = _sse_event_text("\n".join(data_lines))
        data_lines.clear()
        pieces.append(chunk)
        return done

    for line in text.splitlines():
        if not line:
            if dispatch():
                break
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data_lines.append(value)
    else:
        dispatch()
    if events == 0:
        raise MalformedResponse("empty_stream", "event stream carried no data events")
    return Extracted("".join(pieces).strip(), "sse")


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


def _looks_like_sse(text: str) -> bool:
    first = text.lstrip("\ufeff\r\n").split("\n", 1)[0]
    return first.startswith(_SSE_FIELDS)


def extract_text(body: bytes | str, content_type: str | None = None, *,
                 hint: ResponseFormat | None = None) -> Extracted:
    """Extract the answer text from an agent's response body.

    Args:
        body: the raw body (bytes are decoded as UTF-8).
        content_type: the response's ``Content-Type`` header, if any.
        hint: force one reader (``sse``, ``openai``, ``anthropic``, ``json``, ``text``);
            ``None`` detects the format (see the module docstring).

    Returns:
        The text (surrounding whitespace stripped) and the format it was read from.

    Raises:
        MalformedResponse: the body is not UTF-8, is declared JSON but does not parse, is a JSON
            value the contract cannot read, or is an event stream with no data events.
    """
    if isinstance(body, bytes):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedResponse("not_utf8", f"body is not UTF-8 text ({exc})") from exc
    else:
        text = body
    ctype = (content_type or "").lower()
    if hint == "text":
        return Extracted(text.strip(), "text")
    if hint == "sse" or (hint is None and (
            ctype.startswith("text/event-stream") or _looks_like_sse(text))):
        return _parse_sse(text)
    declared_json = hint in ("openai", "anthropic", "json") or "json" in ctype
    stripped = text.strip()
    if declared_json or stripped[:1] in ("{", "[", '"'):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            if declared_json:
                raise MalformedResponse(
                    "malformed_json", f"{exc.msg} at line {exc.lineno} column {exc.colno}: "
                                      f"{_abridge(stripped)}") from exc
        else:
            found = _from_json(value)
            return Extracted(found.text.strip(), found.format)
    return Extracted(stripped, "text")
