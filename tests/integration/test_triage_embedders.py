"""Embedders other than MiniLM: the OpenAI adapter against a real local HTTP server (a fake of
the paid API, over real HTTP), the hashing embedder, and the embedder factory."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np
import pytest

from evalloop.adapters.embedder import (
    HashingEmbedder,
    OpenAIEmbedder,
    build_embedder,
    embed,
    normalise,
)
from evalloop.errors import EmbeddingError
from evalloop.settings import TriageSettings


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []
    mode = "ok"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, **body})
        if self.mode == "fail":
            self._send(500, {"error": {"message": "boom", "type": "server_error"}})
            return
        dim = 2 if self.mode == "wrong_dim" else 3
        data = [{"object": "embedding", "index": i,
                 "embedding": [float(len(t)), 1.0, 0.0][:dim]}
                for i, t in enumerate(body["input"])]
        data.reverse()  # the API may answer out of order; index says where each belongs
        self._send(200, {"object": "list", "data": data, "model": body["model"],
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _send(self, code: int, payload: dict) -> None:  # type: ignore[type-arg]
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.requests = []
    _Handler.mode = "ok"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_openai_embedder_batches_orders_and_normalises(server: str) -> None:
    e = OpenAIEmbedder("emb-test", 3, base_url=server, api_key="local", batch_size=2,
                       max_retries=0)
    v = await embed(e, ["abc", "", "abcd"])
    assert [r["input"] for r in _Handler.requests] == [["abc", " "], ["abcd"]]
    assert {r["path"] for r in _Handler.requests} == {"/v1/embeddings"}
    assert {r["model"] for r in _Handler.requests} == {"emb-test"}
    expected = normalise(np.array([[3, 1, 0], [1, 1, 0], [4, 1, 0]], dtype=np.float32))
    assert np.allclose(v, expected)
    assert e.name == "openai:emb-test" and v.dtype == np.float32


async def test_openai_embedder_maps_errors(server: str) -> None:
    _Handler.mode = "fail"
    e = OpenAIEmbedder("emb-test", 3, base_url=server, api_key="local", max_retries=0)
    with pytest.raises(EmbeddingError, match="embeddings request failed"):
        await embed(e, ["x"])
    _Handler.mode = "wrong_dim"
    with pytest.raises(EmbeddingError, match="expected dimension 3, got 2"):
        await embed(e, ["x"])


async def test_openai_embedder_unreachable() -> None:
    e = OpenAIEmbedder("emb-test", 3, base_url="http://127.0.0.1:9/v1", api_key="local",
                       max_retries=0, timeout_s=2.0)
    with pytest.raises(EmbeddingError, match="embeddings request failed"):
        e.encode(["x"])


def test_hashing_embedder_is_deterministic_and_lexical() -> None:
    e = HashingEmbedder(64)
    a = e.encode(["refund for a cancelled flight", "cancelled flight refund", "baggage fees",
                  ""])
    assert a.shape == (4, 64) and a.dtype == np.float32
    assert np.array_equal(a, HashingEmbedder(64).encode(
        ["refund for a cancelled flight", "cancelled flight refund", "baggage fees", ""]))
    assert np.allclose(np.linalg.norm(a[:3], axis=1), 1.0)
    assert not a[3].any()  # no words: the zero vector
    assert float(a[0] @ a[1]) > 0.5 > abs(float(a[0] @ a[2]))
    with pytest.raises(EmbeddingError, match="hashing dimension >= 8"):
        HashingEmbedder(4)


def test_factory_and_normalise_errors() -> None:
    assert build_embedder(TriageSettings(embedder="hashing")).name == "hashing:256"
    e = build_embedder(TriageSettings(embedder="openai", openai_model="m", openai_dimension=8,
                                      openai_base_url="http://127.0.0.1:9/v1"))
    assert (e.name, e.dimension) == ("openai:m", 8)
    with pytest.raises(EmbeddingError, match="2-d array"):
        normalise(np.zeros(3))


def test_loading_the_model_prints_no_progress_bar() -> None:
    """The demo's stderr stays clean: no transformers "Loading weights" bar; the bars are
    re-enabled afterwards (only the loading is quiet)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("from evalloop.adapters.embedder import MiniLMEmbedder\n"
            "from transformers.utils import logging as hf\n"
            "MiniLMEmbedder()\nprint(hf.is_progress_bar_enabled())\n")
    env = {**os.environ, "PYTHONPATH": f"{root / 'shared'}{os.pathsep}{root}"}
    env.pop("TQDM_DISABLE", None)
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Loading weights" not in out.stderr, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "True"
