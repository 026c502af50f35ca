"""The OpenAI-compatible judge adapter against a scripted OpenAI-compatible server on loopback
(error paths, usage and cost), and the PostgreSQL judgement cache."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import asyncpg
import pytest

from evalloop.adapters.judge_openai import OpenAIJudge, openai_client
from evalloop.adapters.judge_store import PgJudgementCache, latest_calibration, save_calibration
from evalloop.core.judge import DIMENSIONS, Judge, Passage, Unscored, YesNoPrompt
from evalloop.core.judge.calibration import CalibrationRecord, DimensionCalibration, IsotonicMap
from evalloop.core.judge.prompts import PROMPT_VERSION
from evalloop.errors import ConfigError


class Script:
    """What the scripted server answers: one behaviour, and a count of requests."""

    def __init__(self) -> None:
        self.mode = "yes"
        self.p_yes = 0.8
        self.calls = 0
        self.bodies: list[dict[str, Any]] = []


def _completion(script: Script) -> dict[str, Any]:
    if script.mode == "no_logprobs":
        logprobs = None
    else:
        top = (
            [{"token": "Maybe", "logprob": -0.1, "bytes": None}]
            if script.mode == "unparseable"
            else [
                {"token": "Yes", "logprob": math.log(script.p_yes), "bytes": None},
                {"token": "No", "logprob": math.log(1 - script.p_yes), "bytes": None},
            ]
        )
        logprobs = {"content": [{**top[0], "top_logprobs": top}]}
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Yes"},
                "finish_reason": "length",
                "logprobs": logprobs,
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
    }


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            script.bodies.append(json.loads(self.rfile.read(length)))
            script.calls += 1
            if script.mode == "slow":
                time.sleep(1.5)
            status = {"500": 500, "400": 400}.get(script.mode, 200)
            body = (
                {"error": {"message": f"scripted {status}", "type": "x"}}
                if status != 200
                else _completion(script)
            )
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()


PROMPT = YesNoPrompt("sys", "Is it? Answer Yes or No.")


def _judge(base_url: str, **kw: Any) -> OpenAIJudge:
    timeout_s = kw.pop("timeout_s", 5.0)
    return OpenAIJudge(
        openai_client(base_url, timeout_s=timeout_s),
        "scripted",
        **{"retries": 1, "timeout_s": timeout_s, **kw},
    )


async def test_p_yes_reads_logprobs_and_counts_usage_and_cost(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    judge = _judge(url, usd_per_mtok_prompt=2.0, usd_per_mtok_completion=10.0)
    assert isinstance(judge, Judge)
    assert await judge.p_yes(PROMPT) == pytest.approx(0.8)
    body = script.bodies[0]
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 10
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Is it? Answer Yes or No."},
    ]
    usage = judge.usage()
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 100, 1)
    assert usage.cost_usd == pytest.approx((100 * 2.0 + 1 * 10.0) / 1e6)


@pytest.mark.parametrize(
    ("mode", "reason", "calls"),
    [
        ("500", "judge_error", 2),  # retried once, then unscored
        ("400", "judge_error", 1),  # a bad request is not retried
        ("no_logprobs", "no_logprobs", 1),
        ("unparseable", "unparseable", 1),
    ],
)
async def test_p_yes_error_paths_are_unscored(
    scripted: tuple[str, Script], mode: str, reason: str, calls: int
) -> None:
    url, script = scripted
    script.mode = mode
    result = await _judge(url).p_yes(PROMPT)
    assert isinstance(result, Unscored)
    assert result.reason == reason
    assert script.calls == calls


async def test_timeout_is_unscored_after_bounded_retries(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.mode = "slow"
    result = await _judge(url, timeout_s=0.3).p_yes(PROMPT)
    assert isinstance(result, Unscored) and result.reason == "timeout"
    assert script.calls == 2


async def test_judge_without_passages_leaves_context_dimensions_unscored(
    scripted: tuple[str, Script],
) -> None:
    url, script = scripted
    j = await _judge(url).judge(case_id="c1", question="q?", answer="an answer", passages=[])
    assert not j.all_scored
    assert {d for d, s in j.scores.items() if not s.scored} == {
        "groundedness",
        "faithfulness",
        "context_utilization",
    }
    assert j.scores["groundedness"].unscored_reason == "no_context"
    assert j.scores["safety"].raw == pytest.approx(0.8)
    assert j.scores["safety"].score == pytest.approx(0.8)  # uncalibrated: identity
    assert j.scores["safety"].advisory  # uncalibrated: every dimension advisory
    assert j.calibration_id == "uncalibrated"
    assert script.calls == 4
    assert j.usage.calls == 4 and j.usage.prompt_tokens == 400


async def test_hand_off_answer_leaves_context_dimensions_not_applicable(
    scripted: tuple[str, Script],
) -> None:
    url, script = scripted
    answer = (
        "Of course. I'm escalating this to a human HR advisor now. A member of the HR team "
        "will contact you directly and in confidence, usually within one working day."
    )
    j = await _judge(url).judge(
        case_id="e006",
        question="Connect me with a real person please.",
        answer=answer,
        passages=[Passage("hr-policy/leave/annual", "Staff get 18 days.")],
    )
    assert {d for d, s in j.scores.items() if not s.scored} == {
        "groundedness",
        "faithfulness",
        "context_utilization",
    }
    g = j.scores["groundedness"]
    assert g.score is None and g.unscored_reason == "no_claim"
    assert g.reason == (
        "unscored (no_claim): not applicable: the answer makes no factual claim (hand-off)"
    )
    assert j.scores["safety"].score == pytest.approx(0.8)
    assert script.calls == 4


def test_missing_api_key_env_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALLOOP_TEST_JUDGE_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"\$EVALLOOP_TEST_JUDGE_KEY"):
        openai_client("http://127.0.0.1:1/v1", api_key_env="EVALLOOP_TEST_JUDGE_KEY")


async def test_cached_judgement_costs_no_call_and_is_recalibrated(
    scripted: tuple[str, Script], pool: asyncpg.Pool
) -> None:
    url, script = scripted
    cache = PgJudgementCache(pool)
    passages = [Passage("p1", "Leave is 25 days.")]
    first = await _judge(url, cache=cache).judge(
        case_id="c1", question="q?", answer="25 days", passages=passages
    )
    assert first.all_scored and not first.cached and script.calls == 7
    cal = CalibrationRecord(
        "cal-1",
        "scripted",
        PROMPT_VERSION,
        "2026-01-01T00:00:00+00:00",
        {
            "safety": DimensionCalibration(
                "safety",
                "binary",
                10,
                ("x",),
                IsotonicMap((0.0, 1.0), (0.0, 0.5)),
                auc=0.9,
                advisory=False,
            )
        },
    )
    again_judge = _judge(url, cache=cache, calibration=cal)
    again = await again_judge.judge(
        case_id="c1", question="q?", answer="25 days", passages=passages
    )
    assert again.cached and script.calls == 7
    assert again_judge.usage().calls == 0 and again_judge.usage().cache_hits == 1
    assert again.scores["safety"].score == pytest.approx(0.4)  # 0.8 through the new map
    assert not again.scores["safety"].advisory and again.scores["tone"].advisory
    assert [again.scores[d].raw for d in DIMENSIONS] == pytest.approx([0.8] * 7)
    other = await again_judge.judge(
        case_id="c1", question="q?", answer="26 days", passages=passages
    )
    assert not other.cached and script.calls == 14
    await save_calibration(pool, cal)
    assert await latest_calibration(pool, "scripted", PROMPT_VERSION) == cal


async def test_transient_failures_are_not_cached(
    scripted: tuple[str, Script], pool: asyncpg.Pool
) -> None:
    url, script = scripted
    script.mode = "500"
    cache = PgJudgementCache(pool)
    kw = {"case_id": "c1", "question": "q", "answer": "a", "passages": [Passage("p", "t")]}
    failed = await _judge(url, cache=cache, retries=0).judge(**kw)  # type: ignore[arg-type]
    assert all(s.unscored_reason == "judge_error" for s in failed.scores.values())
    script.mode = "yes"
    ok = await _judge(url, cache=cache, retries=0).judge(**kw)  # type: ignore[arg-type]
    assert ok.all_scored and not ok.cached
