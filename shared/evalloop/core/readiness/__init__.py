"""The readiness verdict's pure side: composite, minimums, regression statistics, the gate,
manual checkpoints, golden-set care, hallucination categories (``docs/readiness.md``)."""

from evalloop.core.readiness.care import CareCase, CareCheck, care_checks
from evalloop.core.readiness.checkpoints import (
    CHECKPOINTS,
    CheckpointRecord,
    sample_conversations,
)
from evalloop.core.readiness.gate import (
    CaseEvidence,
    Check,
    Decision,
    GateDecision,
    GateInputs,
    Remediation,
    decide,
)
from evalloop.core.readiness.paired import PairedTest, detectable_effect, paired_test, power
from evalloop.core.readiness.regression import RegressionReport, compare
from evalloop.core.readiness.scores import (
    DIMENSIONS,
    MINIMUMS,
    WEIGHTS,
    CaseScores,
    check_minimums,
    composite,
    dimension_stats,
    from_judgement,
)

__all__ = [
    "CHECKPOINTS",
    "DIMENSIONS",
    "MINIMUMS",
    "WEIGHTS",
    "CareCase",
    "CareCheck",
    "CaseEvidence",
    "CaseScores",
    "Check",
    "CheckpointRecord",
    "Decision",
    "GateDecision",
    "GateInputs",
    "PairedTest",
    "RegressionReport",
    "Remediation",
    "care_checks",
    "check_minimums",
    "compare",
    "composite",
    "decide",
    "detectable_effect",
    "dimension_stats",
    "from_judgement",
    "paired_test",
    "power",
    "sample_conversations",
]
