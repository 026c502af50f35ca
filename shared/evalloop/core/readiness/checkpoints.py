"""The four manual checkpoints of the production gate and the reproducible sample of ten.

``docs/rules.md#production-gate``: sample conversation review (a reviewer reads 10 randomly
selected evaluation conversations), edge-case verification, persona consistency check,
escalation path test. Each is recorded as approved or rejected, with reviewer, time and note.

The sample is drawn from the run's case ids with a seed derived from the run id (SHA-256), so
anyone drawing it again for the same run gets the same ten, in the same order.

Pure: values in, values out.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

__all__ = ["CHECKPOINTS", "SAMPLE_SIZE", "CheckpointRecord", "sample_conversations",
           "sample_seed"]

#: name -> what the reviewer confirms (``docs/rules.md#production-gate``).
CHECKPOINTS: dict[str, str] = {
    "sample_review": "a reviewer read 10 randomly selected evaluation conversations and "
                     "confirms their quality",
    "edge_cases": "a reviewer tried adversarial or unusual queries not in the golden set",
    "persona_consistency": "a reviewer confirms tone and behaviour match the intended persona "
                           "across query types",
    "escalation_path": "a reviewer verified the agent escalates what it cannot handle to "
                       "human operators",
}
#: Conversations in the sample review (``docs/rules.md#production-gate``).
SAMPLE_SIZE = 10


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """One reviewer's verdict on a checkpoint of a run.

    Attributes:
        name: one of :data:`CHECKPOINTS`.
        status: ``approved`` or ``rejected``.
        reviewer: who decided.
        decided_at: when (UTC).
        note: the reviewer's note (may be empty).

    Raises:
        ValueError: (on construction) an unknown name, status or an empty reviewer.
    """

    name: str
    status: Literal["approved", "rejected"]
    reviewer: str
    decided_at: datetime
    note: str = ""

    def __post_init__(self) -> None:
        if self.name not in CHECKPOINTS:
            raise ValueError(f"expected a checkpoint among {sorted(CHECKPOINTS)}, "
                             f"received {self.name!r}")
        if self.status not in ("approved", "rejected"):
            raise ValueError(f"expected status approved or rejected, received {self.status!r}")
        if not self.reviewer.strip():
            raise ValueError("a checkpoint needs the reviewer's name; received an empty one")


def sample_seed(run_id: str) -> int:
    """The sample's seed: the first 8 bytes of SHA-256(``run_id``) as an integer. Never change
    it: a stored sample must be drawable again."""
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big")


def sample_conversations(run_id: str, case_ids: Iterable[str],
                         size: int = SAMPLE_SIZE) -> list[str]:
    """The conversations the sample review reads: ``size`` case ids drawn without replacement
    from the run's (all of them when it has fewer), seeded by the run id.

    The draw does not depend on the order ``case_ids`` arrive in (they are sorted first).
    """
    ids = sorted(set(case_ids))
    if len(ids) <= size:
        return ids
    return random.Random(sample_seed(run_id)).sample(ids, size)
