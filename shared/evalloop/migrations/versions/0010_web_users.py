"""Web app access: local users (roles) and API tokens.

Revision ID: 0010

* ``web_users``: one row per person; ``role`` is ``viewer`` (reads every page), ``reviewer``
  (also acts on the review queues) or ``admin`` (also manages users). ``password_hash`` is an
  scrypt hash in the format of :func:`evalloop.core.access.hash_password`; NULL = token
  sign-in only. ``disabled_at`` set = may no longer sign in (rows are never deleted, so the
  review audit trail keeps naming a real user).
* ``web_tokens``: API tokens of a user. Only the SHA-256 of the token is stored (tokens are
  32 random bytes, so a fast hash suffices; see ``docs/web.md#access``); ``revoked_at`` set =
  refused.
"""

from evalloop.migrations import execute_script

revision = "0010"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE web_users (
            username      text PRIMARY KEY CHECK (username ~ '^[A-Za-z0-9_.@-]{1,64}$'),
            role          text NOT NULL CHECK (role IN ('viewer', 'reviewer', 'admin')),
            password_hash text,
            created_at    timestamptz NOT NULL DEFAULT now(),
            disabled_at   timestamptz
        );

        CREATE TABLE web_tokens (
            token_hash   text PRIMARY KEY,
            username     text NOT NULL REFERENCES web_users (username),
            label        text,
            created_at   timestamptz NOT NULL DEFAULT now(),
            last_used_at timestamptz,
            revoked_at   timestamptz
        );
        CREATE INDEX web_tokens_user ON web_tokens (username);
        """
    )


def downgrade() -> None:
    execute_script("DROP TABLE web_tokens; DROP TABLE web_users;")
