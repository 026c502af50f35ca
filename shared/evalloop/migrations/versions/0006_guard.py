"""API keys of the ingest service, and indexes that retention and erasure use.

Revision ID: 0006

* ``api_keys``: one row per key (``docs/security.md#api-keys``). Only the SHA-256 of the token
  is stored (a token is 32 random bytes, so a fast hash is enough: nothing to brute-force).
  ``agent_ids`` NULL = every agent; ``rate_limit`` NULL = the ``ingest.rate_limit`` setting;
  ``revoked_at`` set = refused from then on (rows are kept so ``keys list`` shows the history).
* ``events_conversation``: ``evalloop erase --conversation`` finds a conversation without its
  agent; ``events_stored_at`` / ``negative_cases_updated_at``: the pruning job's range deletes
  (``docs/security.md#retention``).
"""

from evalloop.migrations import execute_script

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE api_keys (
            key_id       text PRIMARY KEY,
            name         text NOT NULL,
            token_sha256 bytea NOT NULL CHECK (length(token_sha256) = 32),
            agent_ids    text[],
            rate_limit   text,
            created_at   timestamptz NOT NULL DEFAULT now(),
            revoked_at   timestamptz
        );
        CREATE INDEX events_conversation ON events (conversation_id);
        CREATE INDEX events_stored_at ON events (stored_at);
        CREATE INDEX negative_cases_updated_at ON negative_cases (updated_at);
        CREATE INDEX negative_cases_conversation ON negative_cases (conversation_id);
        CREATE INDEX monitor_turns_conversation ON monitor_turns (conversation_id);
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP INDEX monitor_turns_conversation;
        DROP INDEX negative_cases_conversation;
        DROP INDEX negative_cases_updated_at;
        DROP INDEX events_stored_at;
        DROP INDEX events_conversation;
        DROP TABLE api_keys;
        """
    )
