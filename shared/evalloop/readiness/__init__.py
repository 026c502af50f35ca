"""The readiness verdict's I/O side: judging a stored run, deciding its gate, A/B comparisons
(the pure rules are in :mod:`evalloop.core.readiness`; ``docs/readiness.md``)."""
