"""Golden sets (immutable versions), evaluation runs and results, the agent registry.

Revision ID: 0004

* ``golden_sets``: one row per (agent, golden set); ``latest_version`` is bumped under the row
  lock when a version is added (serialises concurrent imports of one set).
* ``golden_set_versions``: immutable versions (``docs/rules.md#golden-set-format``: "confirming, editing or
  retiring a case makes a new version with a parent and a diff"); ``diff`` = ``{"added",
  "removed", "changed"}`` case ids against the parent; ``content_hash`` = SHA-256 of the
  canonical cases (an identical re-import is a no-op).
* ``golden_cases``: the cases of one version (golden-set JSON fields + the eval set's refusal/escalation
  expectations, category, expected behaviour, notes); ``position`` keeps file order.
  Rows of both tables are never updated or deleted (triggers refuse it).
* ``eval_runs`` / ``eval_results``: a run (pinned to a golden-set version when it ran one) and
  its per-case results. ``scores`` / ``composite`` / ``judge`` stay NULL until the
  judge fills them.
* ``agents``: the agent registry (endpoint URL, auth header *name* and the *name of the
  environment variable* holding its value -- never the secret --, response format).
"""

from evalloop.migrations import execute_script

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE golden_sets (
            agent_id       text NOT NULL,
            golden_set_id  text NOT NULL,
            latest_version integer NOT NULL DEFAULT 0,
            created_at     timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (agent_id, golden_set_id)
        );

        CREATE TABLE golden_set_versions (
            version_id        uuid PRIMARY KEY,
            agent_id          text NOT NULL,
            golden_set_id     text NOT NULL,
            version           integer NOT NULL CHECK (version >= 1),
            parent_version_id uuid REFERENCES golden_set_versions (version_id),
            created_at        timestamptz NOT NULL DEFAULT now(),
            created_by        text,
            source            text,
            diff              jsonb NOT NULL,
            content_hash      text NOT NULL,
            case_count        integer NOT NULL,
            UNIQUE (agent_id, golden_set_id, version),
            FOREIGN KEY (agent_id, golden_set_id) REFERENCES golden_sets (agent_id, golden_set_id)
        );

        CREATE TABLE golden_cases (
            version_id        uuid NOT NULL REFERENCES golden_set_versions (version_id),
            case_id           text NOT NULL,
            position          integer NOT NULL,
            question          text NOT NULL,
            expected_answer   text,
            context_chunks    text[] NOT NULL DEFAULT '{}',
            tags              text[] NOT NULL DEFAULT '{}',
            difficulty        text,
            should_refuse     boolean NOT NULL,
            should_escalate   boolean NOT NULL,
            category          text NOT NULL,
            expected_behavior text,
            notes             text,
            created_by        text,
            created_at        timestamptz,
            PRIMARY KEY (version_id, case_id)
        );

        CREATE FUNCTION golden_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'golden set versions are immutable: % on % refused',
                TG_OP, TG_TABLE_NAME;
        END
        $$;
        CREATE TRIGGER golden_set_versions_immutable BEFORE UPDATE OR DELETE
            ON golden_set_versions FOR EACH ROW EXECUTE FUNCTION golden_immutable();
        CREATE TRIGGER golden_cases_immutable BEFORE UPDATE OR DELETE
            ON golden_cases FOR EACH ROW EXECUTE FUNCTION golden_immutable();

        CREATE TABLE eval_runs (
            run_id                uuid PRIMARY KEY,
            job_id                uuid,
            agent_id              text,
            golden_set_version_id uuid REFERENCES golden_set_versions (version_id),
            endpoint              text,
            source                text NOT NULL CHECK (source IN ('endpoint', 'responses_file')),
            eval_source           text,
            started_at            timestamptz NOT NULL,
            finished_at           timestamptz,
            status                text NOT NULL
                CHECK (status IN ('running', 'passed', 'failed', 'error')),
            summary               jsonb,
            error                 text,
            baseline_run_id       uuid REFERENCES eval_runs (run_id)
        );
        CREATE INDEX eval_runs_agent_time ON eval_runs (agent_id, started_at DESC);
        CREATE INDEX eval_runs_job ON eval_runs (job_id) WHERE job_id IS NOT NULL;

        CREATE TABLE eval_results (
            run_id                uuid NOT NULL REFERENCES eval_runs (run_id) ON DELETE CASCADE,
            case_id               text NOT NULL,
            position              integer NOT NULL,
            category              text NOT NULL,
            input                 text NOT NULL,
            expected_behavior     text,
            should_refuse         boolean NOT NULL,
            should_escalate       boolean NOT NULL,
            status                text NOT NULL
                CHECK (status IN ('passed', 'failed_gate', 'agent_error', 'unscored')),
            response              text,
            response_format       text,
            latency_ms            double precision,
            attempts              integer NOT NULL DEFAULT 0,
            gates                 jsonb NOT NULL DEFAULT '{}',
            flags                 text[] NOT NULL DEFAULT '{}',
            flag_details          jsonb NOT NULL DEFAULT '[]',
            requires_human_review boolean NOT NULL DEFAULT false,
            review_reasons        text[] NOT NULL DEFAULT '{}',
            error                 jsonb,
            scores                jsonb,
            composite             double precision CHECK (composite BETWEEN 0 AND 1),
            judge                 jsonb,
            PRIMARY KEY (run_id, case_id)
        );

        CREATE TABLE agents (
            agent_id              text PRIMARY KEY,
            endpoint_url          text NOT NULL,
            auth_header_name      text,
            auth_header_value_env text,
            response_format       text NOT NULL DEFAULT 'auto',
            updated_at            timestamptz NOT NULL DEFAULT now(),
            CHECK ((auth_header_name IS NULL) = (auth_header_value_env IS NULL))
        );
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP TABLE agents;
        DROP TABLE eval_results;
        DROP TABLE eval_runs;
        DROP TABLE golden_cases;
        DROP TABLE golden_set_versions;
        DROP TABLE golden_sets;
        DROP FUNCTION golden_immutable();
        """
    )
