"""Monitor: per-turn flags, 5-minute buckets, trigger state, and the re-evaluation job table.

Revision ID: 0002

* ``monitor_turns``: one row per turn the monitor has seen (the idempotency record: an event
  whose effect is already here changes nothing). ``served_bucket`` / ``signal_bucket``: buckets of
  the turn's earliest ``agent_response`` / feedback signal; the turn counts in ``bucket_start``.
* ``monitor_buckets``: per agent and bucket, counts of turns (``turns``: distinct turns,
  ``served``, ``signalled``, ``negatives``); the 24 h window is a sum over 288 rows.
* ``monitor_state``: the trigger state per agent (phase, last firing, newest event time,
  ``seq``: bumped by every batch, validates the in-process cache) and the weekly schedule.
* ``reeval_jobs``: every requested re-evaluation, written by the monitor in the transaction that
  decided it (an outbox: ``published_at`` is NULL until ``reeval.requested.v1`` was acked;
  rows with NULL are re-published at start-up). The evaluator claims and updates rows
  (``status``, ``attempts``, ``claimed_*``, ``heartbeat_at``, ``run_id``, ...). A consumer of
  ``reeval.requested.v1`` that inserts a row for a job it received must set ``published_at``.
"""

from evalloop.migrations import execute_script

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE monitor_turns (
            agent_id        text NOT NULL,
            conversation_id text NOT NULL,
            turn_id         text NOT NULL,
            served_bucket   timestamptz,
            signal_bucket   timestamptz,
            negative        boolean NOT NULL DEFAULT false,
            bucket_start    timestamptz NOT NULL
                GENERATED ALWAYS AS (coalesce(served_bucket, signal_bucket)) STORED,
            served          boolean NOT NULL GENERATED ALWAYS AS (served_bucket IS NOT NULL) STORED,
            signalled       boolean NOT NULL GENERATED ALWAYS AS (signal_bucket IS NOT NULL) STORED,
            updated_at      timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (agent_id, conversation_id, turn_id),
            CHECK (served_bucket IS NOT NULL OR signal_bucket IS NOT NULL)
        );

        CREATE TABLE monitor_buckets (
            agent_id     text NOT NULL,
            bucket_start timestamptz NOT NULL,
            served       integer NOT NULL DEFAULT 0,
            negatives    integer NOT NULL DEFAULT 0,
            signalled    integer NOT NULL DEFAULT 0,
            turns        integer NOT NULL DEFAULT 0,
            PRIMARY KEY (agent_id, bucket_start)
        );
        -- No CHECK (x >= 0) on the counters: INSERT ... ON CONFLICT evaluates CHECKs on the
        -- proposed row, and a delta row may be negative (a turn moving to an earlier bucket).

        CREATE TABLE monitor_state (
            agent_id         text PRIMARY KEY,
            phase            text NOT NULL DEFAULT 'armed' CHECK (phase IN ('armed', 'fired')),
            fired_at         timestamptz,
            newest_event_at  timestamptz,
            last_rate        double precision,
            last_negatives   integer,
            last_turns       integer,
            last_denominator text,
            seq              bigint NOT NULL DEFAULT 0,
            last_weekly_at   timestamptz,
            updated_at       timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE reeval_jobs (
            job_id                uuid PRIMARY KEY,
            agent_id              text NOT NULL,
            trigger               text NOT NULL,
            reason                text NOT NULL,
            requested_at          timestamptz NOT NULL DEFAULT now(),
            request               jsonb NOT NULL,
            published_at          timestamptz,
            status                text NOT NULL DEFAULT 'requested'
                CHECK (status IN ('requested', 'running', 'succeeded', 'failed')),
            attempts              integer NOT NULL DEFAULT 0,
            claimed_by            text,
            claimed_at            timestamptz,
            heartbeat_at          timestamptz,
            run_id                uuid,
            golden_set_version_id uuid,
            result                jsonb,
            error                 text,
            finished_at           timestamptz,
            -- insertion order (the outbox publishes in it; requested_at can tie)
            seq                   bigint GENERATED ALWAYS AS IDENTITY
        );
        CREATE INDEX reeval_jobs_agent_time ON reeval_jobs (agent_id, requested_at);
        -- the outbox: jobs whose request has not been published yet
        CREATE INDEX reeval_jobs_unpublished ON reeval_jobs (seq) WHERE published_at IS NULL;
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP TABLE reeval_jobs;
        DROP TABLE monitor_state;
        DROP TABLE monitor_buckets;
        DROP TABLE monitor_turns;
        """
    )
