"""Triage service: embed negative cases, cluster them by topic, queue golden-set candidates."""
