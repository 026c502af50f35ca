"""The evaluator service: runs re-evaluation jobs against the agent (``reeval.requested.v1``)."""
