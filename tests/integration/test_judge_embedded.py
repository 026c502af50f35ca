"""The real embedded judge: Qwen2.5-Coder-1.5B on llama.cpp, weights joined and verified, no mocks.

Kept to nine short questions (one answer on seven dimensions, one yes/no, one claim) so it runs
in well under a minute on an idle 2-core machine.
"""

from __future__ import annotations

import pytest

from evalloop.adapters.judge_embedded import embedded_judge, shipped_calibration
from evalloop.adapters.llama_server import DEFAULT_MODEL, MODELS, materialise_model
from evalloop.core.judge import DIMENSIONS, Passage, dimension_prompt
from evalloop.core.judge.prompts import PROMPT_VERSION

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

KNOWLEDGE = [
    Passage(
        "hr-leave-1",
        "Employees get 25 days of paid annual leave per year. Unused days expire on 31 March.",
    )
]
QUESTION = "How many days of annual leave do I get?"
GROUNDED = "You get 25 days of paid annual leave per year; unused days expire on 31 March."
FABRICATED = "You get 40 days of annual leave, and unused days can be carried over forever."


def test_weights_join_to_the_published_sha256() -> None:
    path = materialise_model(MODELS[DEFAULT_MODEL])
    assert path.name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert path.stat().st_size > 900_000_000


async def test_embedded_judge_scores_a_grounded_answer_above_a_fabricated_one() -> None:
    async with embedded_judge(DEFAULT_MODEL, timeout_s=300.0) as judge:
        good = await judge.judge(
            case_id="leave", question=QUESTION, answer=GROUNDED, passages=KNOWLEDGE
        )
        bad_raw = await judge.p_yes(
            dimension_prompt(
                "groundedness", question=QUESTION, answer=FABRICATED, passages=KNOWLEDGE
            )
        )
        claim = await judge.claim_support("Unused days expire on 31 March.", KNOWLEDGE)
        usage = judge.usage()
    assert judge.model == DEFAULT_MODEL
    record = shipped_calibration(DEFAULT_MODEL)
    assert good.calibration_id == (record.calibration_id if record else "uncalibrated")
    assert good.prompt_version == PROMPT_VERSION and not good.cached
    assert set(good.scores) == set(DIMENSIONS)
    assert good.all_scored, good.unscored
    for s in good.scores.values():
        assert s.raw is not None and 0.0 <= s.raw <= 1.0
        assert s.score is not None and 0.0 <= s.score <= 1.0
    assert isinstance(bad_raw, float)
    grounded = good.scores["groundedness"]
    assert grounded.raw is not None and grounded.raw > bad_raw
    assert grounded.score is not None and grounded.score >= judge.calibration.calibrate(
        "groundedness", bad_raw
    )
    assert claim.scored and claim.nearest_passage_id == "hr-leave-1"
    assert usage.calls == 9 and usage.prompt_tokens > 0 and usage.cost_usd == 0.0
