"""The judge's pure side: value types and port, rubric prompts, P(yes) reading, calibration.

See ``docs/judge.md``. Adapters: ``evalloop.adapters.judge_openai`` (OpenAI-compatible endpoint,
also the embedded llama.cpp server of ``evalloop.adapters.llama_server``).
"""

from evalloop.core.judge.logprobs import p_yes_from_top_logprobs
from evalloop.core.judge.prompts import PROMPT_VERSION, RUBRICS, claim_prompt, dimension_prompt
from evalloop.core.judge.types import (
    DIMENSIONS,
    ClaimSupport,
    Dimension,
    DimensionScore,
    Judge,
    Judgement,
    JudgeUsage,
    Passage,
    Unscored,
    UnscoredReason,
    YesNoPrompt,
    answer_hash,
)

__all__ = [
    "DIMENSIONS",
    "PROMPT_VERSION",
    "RUBRICS",
    "ClaimSupport",
    "Dimension",
    "DimensionScore",
    "Judge",
    "JudgeUsage",
    "Judgement",
    "Passage",
    "Unscored",
    "UnscoredReason",
    "YesNoPrompt",
    "answer_hash",
    "claim_prompt",
    "dimension_prompt",
    "p_yes_from_top_logprobs",
]
