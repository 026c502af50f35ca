"""Review: the audit of every human action, golden-set publication outbox, eval human labels.

Revision ID: 0007

Flows and rules: ``docs/review.md``.

* ``review_queue`` (migration 0003) gains:

  - ``row_version``: the optimistic-lock counter. Every change of a row bumps it; an action
    names the version its reviewer saw, and a stale one is a conflict (HTTP 409), never a
    second append to the golden set.
  - status ``withdrawn``: a pending candidate a re-clustering did not select again (its
    cluster is gone, or the cluster's cap is full of better candidates); it returns to
    ``pending`` if a later ranking selects it. ``skipped``-ness is ``skip_count`` (a skip
    keeps the row pending and moves it down the queue).
  - ``expected_answer_source`` / ``expected_answer_ref``: where the proposed expected answer
    came from (``operator_correction``, ``best_rated_answer``, ``knowledge_passage``) and the
    event / passage id; ``explanation``: why the candidate ranks where it does;
    ``rating_profile``: the ratings behind it (counts, severity, agreement).
  - ``edits``: a reviewer's edits saved before the decision (kept, and applied on confirm).
  - ``decided_by`` / ``decided_at`` / ``decision_reason``: the reviewer's decision;
    ``golden_version_id`` / ``golden_case_id``: where a confirmed candidate went.

* ``agent_review_profiles``: what the golden-set care checks measure an agent against: its
  knowledge domains, the escalation triggers of its system prompt, and whether it is in
  production (size bar 50, else 25).

* ``review_actions``: the audit, **append-only** (a trigger refuses UPDATE and DELETE). One row
  per human action: who (``reviewer``, ``reviewer_role``), when (``at``, UTC), on what
  (``item_kind`` ``candidate`` | ``golden_case`` | ``golden_set`` | ``eval_case``,
  ``item_id``), the action, ``before`` / ``after`` documents, the ``evidence`` the reviewer was
  shown, the reason, and the golden-set version it produced.

* ``golden_outbox``: one row per golden-set version made by a review action (primary key =
  the version id, so a version is announced once); ``published_at`` is stamped when
  ``golden.set.published.v1`` was acknowledged by the bus.

* ``eval_human_reviews``: verdicts of people on eval cases marked ``requires_human_review``:
  per criterion pass/fail (``criteria`` = ``{"<criterion>": true|false}``, criteria listed in
  ``docs/review.md#eval-human-review``), an overall ``score`` 1-5 and a ``note``. One verdict
  per (run, case, reviewer); the judge's calibration reads these rows as human labels.
"""

from evalloop.migrations import execute_script

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        ALTER TABLE review_queue DROP CONSTRAINT review_queue_status_check;
        ALTER TABLE review_queue ADD CONSTRAINT review_queue_status_check
            CHECK (status IN ('pending', 'confirmed', 'edited', 'rejected', 'withdrawn'));
        ALTER TABLE review_queue
            ADD COLUMN row_version            integer NOT NULL DEFAULT 1,
            ADD COLUMN skip_count             integer NOT NULL DEFAULT 0,
            ADD COLUMN expected_answer_source text,
            ADD COLUMN expected_answer_ref    text,
            ADD COLUMN explanation            text,
            ADD COLUMN rating_profile         jsonb NOT NULL DEFAULT '{}',
            ADD COLUMN withdrawn_reason       text,
            ADD COLUMN decided_by             text,
            ADD COLUMN decided_at             timestamptz,
            ADD COLUMN decision_reason        text,
            ADD COLUMN golden_version_id      uuid,
            ADD COLUMN golden_case_id         text,
            ADD COLUMN edits                  jsonb NOT NULL DEFAULT '{}';

        CREATE TABLE agent_review_profiles (
            agent_id            text PRIMARY KEY,
            knowledge_domains   text[] NOT NULL DEFAULT '{}',
            escalation_triggers text[] NOT NULL DEFAULT '{}',
            in_production       boolean,
            updated_at          timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE review_actions (
            action_id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            agent_id          text NOT NULL,
            item_kind         text NOT NULL
                CHECK (item_kind IN ('candidate', 'golden_case', 'golden_set', 'eval_case')),
            item_id           text NOT NULL,
            action            text NOT NULL
                CHECK (action IN ('confirm', 'edit', 'reject', 'skip', 'retire',
                                  'set_reviewed', 'verdict')),
            reviewer          text NOT NULL,
            reviewer_role     text NOT NULL,
            at                timestamptz NOT NULL DEFAULT now(),
            before            jsonb,
            after             jsonb,
            evidence          jsonb NOT NULL DEFAULT '{}',
            reason            text,
            golden_version_id uuid
        );
        CREATE INDEX review_actions_item ON review_actions (item_kind, item_id, action_id);
        CREATE INDEX review_actions_agent_time ON review_actions (agent_id, at DESC);

        CREATE FUNCTION review_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'the review audit is append-only: % on % refused',
                TG_OP, TG_TABLE_NAME;
        END
        $$;
        CREATE TRIGGER review_actions_append_only BEFORE UPDATE OR DELETE
            ON review_actions FOR EACH ROW EXECUTE FUNCTION review_actions_append_only();

        CREATE TABLE golden_outbox (
            version_id    uuid PRIMARY KEY REFERENCES golden_set_versions (version_id),
            agent_id      text NOT NULL,
            golden_set_id text NOT NULL,
            version       integer NOT NULL,
            payload       jsonb NOT NULL,
            created_at    timestamptz NOT NULL DEFAULT now(),
            published_at  timestamptz
        );
        CREATE INDEX golden_outbox_unpublished ON golden_outbox (created_at)
            WHERE published_at IS NULL;

        CREATE TABLE eval_human_reviews (
            run_id        uuid NOT NULL,
            case_id       text NOT NULL,
            reviewer      text NOT NULL,
            reviewer_role text NOT NULL,
            criteria      jsonb NOT NULL,
            score         integer NOT NULL CHECK (score BETWEEN 1 AND 5),
            note          text,
            reviewed_at   timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (run_id, case_id, reviewer),
            -- not a foreign key to eval_results: a run re-saved replaces its result rows,
            -- and people's verdicts must survive that
            FOREIGN KEY (run_id) REFERENCES eval_runs (run_id)
        );
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP TABLE eval_human_reviews;
        DROP TABLE golden_outbox;
        DROP TABLE agent_review_profiles;
        DROP TABLE review_actions;
        DROP FUNCTION review_actions_append_only();
        ALTER TABLE review_queue
            DROP COLUMN row_version, DROP COLUMN skip_count, DROP COLUMN expected_answer_source,
            DROP COLUMN expected_answer_ref, DROP COLUMN explanation,
            DROP COLUMN rating_profile, DROP COLUMN withdrawn_reason, DROP COLUMN decided_by,
            DROP COLUMN decided_at, DROP COLUMN decision_reason, DROP COLUMN golden_version_id,
            DROP COLUMN golden_case_id, DROP COLUMN edits;
        ALTER TABLE review_queue DROP CONSTRAINT review_queue_status_check;
        ALTER TABLE review_queue ADD CONSTRAINT review_queue_status_check
            CHECK (status IN ('pending', 'confirmed', 'edited', 'rejected'));
        """
    )
