"""The web app as a deployable (``evalloop up`` runs it beside the stream services)."""
