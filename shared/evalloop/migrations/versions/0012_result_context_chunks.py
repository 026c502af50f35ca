"""The expected passages of each case result.

Revision ID: 0012

* ``eval_results.context_chunks``: ids of the passages the case expects the answer to draw on
  (the eval file's ``context_chunks``), so the gate can tell a retrieval miss from an answer
  that strayed even when the run is not pinned to a golden-set version
  (``docs/readiness.md#the-gate``). NULL for results stored before this column.
"""

from evalloop.migrations import execute_script

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        ALTER TABLE eval_results ADD COLUMN context_chunks text[];
        """
    )


def downgrade() -> None:
    execute_script(
        """
        ALTER TABLE eval_results DROP COLUMN context_chunks;
        """
    )
