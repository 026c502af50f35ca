"""The ingest service: HTTP ``POST /v1/events`` -> ``feedback.events.v1``."""
