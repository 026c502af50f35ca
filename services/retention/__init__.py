"""The retention service: prunes what is older than the retention settings, periodically."""
