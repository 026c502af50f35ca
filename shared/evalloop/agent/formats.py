"""The five reply formats of the endpoint contract, rendered from one :class:`Reply`.

The contract: ``docs/rules.md#endpoint-contract``.

- ``openai``: an OpenAI chat-completion object (``choices[0].message.content``);
- ``openai-sse``: an OpenAI chat-completion *stream* (``text/event-stream``, ``data: {...}``
  chunks with ``choices[0].delta.content``, then ``data: [DONE]``);
- ``anthropic``: an Anthropic Messages object (``content`` = list of ``{"type": "text"}`` blocks);
- ``json``: a generic object ``{"response": ...}``;
- ``text``: the reply as ``text/plain``.

Every JSON format carries ``context_chunks`` (``[{"id", "text", "source", "score"}]``, the
retrieved passages) and :func:`versions` (``agent_version``, ``model_version``,
``prompt_version``); the SSE
stream carries them on its last data chunk; plain text in the ``X-Context-Chunks`` header (ids).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal, get_args

from evalloop.agent.agent import AgentConfig, Reply

__all__ = ["FORMATS", "Format", "context_chunks", "render_json", "sse_events", "versions"]

Format = Literal["openai", "openai-sse", "anthropic", "json", "text"]
FORMATS: tuple[str, ...] = get_args(Format)

#: Words per SSE delta: small enough that a reader must really join the stream.
_SSE_WORDS = 4


def context_chunks(reply: Reply) -> list[dict[str, Any]]:
    """The reply's retrieved chunks as ``[{"id", "text", "source", "score"}]``."""
    return [
        {"id": c.id, "text": c.text, "source": c.document, "score": round(s, 4)}
        for c, s in zip(reply.chunks, reply.scores, strict=True)
    ]


def versions(config: AgentConfig) -> dict[str, str]:
    """``agent_version``, ``model_version`` and ``prompt_version`` of the serving agent (the
    fields an ``agent_response`` / ``agent_changed`` event carries)."""
    return {"agent_version": config.version, "model_version": config.model,
            "prompt_version": config.prompt_version}


def _tokens(text: str) -> int:
    return len(text.split())


def render_json(fmt: Format, reply: Reply, config: AgentConfig, prompt: str) -> dict[str, Any]:
    """The JSON body of ``reply`` in format ``fmt`` (``openai``, ``anthropic`` or ``json``).

    Raises:
        ValueError: ``fmt`` is not a JSON format.
    """
    extra = {"context_chunks": context_chunks(reply), **versions(config)}
    if fmt == "openai":
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": config.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": "stop",
            }],
            "usage": {
                "prompt_tokens": _tokens(prompt),
                "completion_tokens": _tokens(reply.text),
                "total_tokens": _tokens(prompt) + _tokens(reply.text),
            },
            **extra,
        }
    if fmt == "anthropic":
        return {
            "id": f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": config.model,
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": _tokens(prompt), "output_tokens": _tokens(reply.text)},
            **extra,
        }
    if fmt == "json":
        return {"response": reply.text, **extra}
    raise ValueError(f"not a JSON format: {fmt!r}; expected one of openai, anthropic, json")


def sse_events(reply: Reply, config: AgentConfig) -> Iterator[str]:
    """The reply as OpenAI chat-completion stream events (each ``data: ...\\n\\n``)."""
    cid = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {
            "id": cid, "object": "chat.completion.chunk", "created": created,
            "model": config.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    yield event({"role": "assistant", "content": ""})
    words = reply.text.split(" ")
    for i in range(0, len(words), _SSE_WORDS):
        piece = " ".join(words[i : i + _SSE_WORDS])
        yield event({"content": piece if i == 0 else " " + piece})
    yield event({}, "stop", context_chunks=context_chunks(reply), **versions(config))
    yield "data: [DONE]\n\n"
