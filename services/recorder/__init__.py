"""The recorder service: feedback events -> PostgreSQL (once) -> negative cases."""
