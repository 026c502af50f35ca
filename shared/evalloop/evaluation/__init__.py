"""Evaluation orchestration: the async runner that turns eval cases into an ``EvalRun``.

``run_eval`` is the library entry point used by ``evalloop eval run`` and by the evaluator
service; pure scoring lives in :mod:`evalloop.core.evaluation`.
"""

from evalloop.evaluation.runner import (
    ResponseSource,
    load_responses_file,
    rich_progress,
    run_eval,
    write_outputs,
)

__all__ = ["ResponseSource", "load_responses_file", "rich_progress", "run_eval", "write_outputs"]
