"""Dead letters kept once per letter id (an outbox for the DLQ topic); exact turn times for
the monitor's window.

Revision ID: 0005

* ``dead_letters``: one row per rejected record, keyed by ``letter_id`` (UUIDv5 of the record's
  ``event_id`` when it has one, and of its bytes: ``services.recorder.dlq.letter_id``), so a
  redelivered batch adds no letter. ``published_at`` is the outbox mark: set once the letter was
  acked on ``feedback.events.dlq.v1``, in ``seq`` order (the order they were stored); rows still NULL are published by the recorder after its
  next batch and at start (``docs/operations.md#dead-letters``).
* ``monitor_turns.served_at`` / ``signal_at``: the exact times of a turn's earliest
  ``agent_response`` / signal (the bucket columns stay: buckets are the index). The window's
  edge bucket is read turn by turn (``docs/operations.md#the-window``), by the new index on
  ``(agent_id, bucket_start)``. Rows stored before this revision have no exact time: their
  bucket start stands in.
"""

from evalloop.migrations import execute_script

revision = "0005"
down_revision = "0010"  # after the migrations merged into main before it (re-chained)
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE dead_letters (
            letter_id         uuid PRIMARY KEY,
            seq               bigint GENERATED ALWAYS AS IDENTITY,
            event_id          uuid,
            reason            text NOT NULL,
            detail            jsonb NOT NULL,
            record_key        text,
            record_value      bytea NOT NULL,
            source_topic      text NOT NULL,
            source_partition  integer NOT NULL,
            source_offset     bigint NOT NULL,
            created_at        timestamptz NOT NULL DEFAULT now(),
            published_at      timestamptz
        );
        CREATE INDEX dead_letters_unpublished ON dead_letters (seq)
            WHERE published_at IS NULL;

        ALTER TABLE monitor_turns ADD COLUMN served_at timestamptz,
                                  ADD COLUMN signal_at timestamptz;
        CREATE INDEX monitor_turns_bucket ON monitor_turns (agent_id, bucket_start);
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP INDEX monitor_turns_bucket;
        ALTER TABLE monitor_turns DROP COLUMN served_at, DROP COLUMN signal_at;
        DROP TABLE dead_letters;
        """
    )
