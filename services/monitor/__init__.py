"""The monitor service: 24 h negative rate per agent -> ``reeval.requested.v1``."""
