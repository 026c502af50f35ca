"""The agent client passes on the passages an agent says it retrieved (its ``X-Context-Chunks``
header; ``docs/readiness.md#retrieved-context``) into each case result, against a real local
HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evalloop.adapters.agent_client import AgentClient
from evalloop.core.evaluation.cases import EvalCase
from evalloop.evaluation.runner import run_eval

HEADERS = {"with": "kb/leave/1, kb/leave/2", "empty": "", "none": None}


class _Agent(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        question = body["messages"][0]["content"]
        reply = json.dumps({"response": f"answer to {question}"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        header = HEADERS[question]
        if header is not None:
            self.send_header("X-Context-Chunks", header)
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def agent_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/chat"
    finally:
        server.shutdown()
        server.server_close()


async def test_retrieved_passages_reach_the_case_results(agent_url: str) -> None:
    async with AgentClient(agent_url, timeout_s=10) as client:
        assert (await client.ask("with")).context_ids == ("kb/leave/1", "kb/leave/2")
        assert (await client.ask("empty")).context_ids == ()
        assert (await client.ask("none")).context_ids is None
        cases = [EvalCase(id=f"c-{q}", input=q, expected_behavior="answers", category="routine")
                 for q in HEADERS]
        run = await run_eval(cases, client, concurrency=1)
    assert {r.case_id: r.retrieved_context for r in run.results} == {
        "c-with": ["kb/leave/1", "kb/leave/2"], "c-empty": [], "c-none": None}
