"""Pure evaluation logic (``docs/rules.md#endpoint-contract``, ``docs/rules.md#run-gate``): eval
cases, response-text extraction, refusal/escalation gates, quality flags, result records and the
summary report.

No I/O beyond reading a named eval file; the HTTP client lives in
``evalloop.adapters.agent_client`` and the runner in ``evalloop.evaluation.runner``.
"""

from evalloop.core.evaluation.cases import EvalCase, EvalCaseError, EvalSet, load_eval_file
from evalloop.core.evaluation.extract import Extracted, MalformedResponse, extract_text
from evalloop.core.evaluation.gates import analyse, escalation_gate, refusal_gate
from evalloop.core.evaluation.results import (
    AgentFailure,
    CaseResult,
    CaseStatus,
    EvalRun,
    RunSummary,
    exit_code,
    summarise,
)
from evalloop.core.evaluation.scoring import error_result, score_response, unscored_result

__all__ = [
    "AgentFailure",
    "CaseResult",
    "CaseStatus",
    "EvalCase",
    "EvalCaseError",
    "EvalRun",
    "EvalSet",
    "Extracted",
    "MalformedResponse",
    "RunSummary",
    "analyse",
    "error_result",
    "escalation_gate",
    "exit_code",
    "extract_text",
    "load_eval_file",
    "refusal_gate",
    "score_response",
    "summarise",
    "unscored_result",
]
