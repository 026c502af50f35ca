"""Readiness verdict: gate decisions, deployments, pinned baselines, manual checkpoints,
hallucination claims; the retrieved context of each case result.

Revision ID: 0009

* ``eval_results.retrieved_context``: ids of the passages the agent said it retrieved
  (``X-Context-Chunks``); NULL when it did not say. The judge's scores go to the existing
  ``scores`` / ``composite`` / ``judge`` columns of ``eval_results``.
* ``readiness_decisions``: every ``evalloop gate`` decision (append-only history; a run's
  current decision is its newest), with the checks, why, remediation and **every input**
  (scores, baseline, regression figures, advisory dimensions, care checks, checkpoints).
* ``deployments``: runs recorded as deployed (``evalloop deploy record`` or an
  ``agent_changed`` event naming the run); ``event_id`` makes a redelivered event a no-op.
* ``baseline_pins``: the run pinned as an agent's baseline (one per agent; NULL = unpinned).
* ``gate_checkpoints``: the four manual checkpoints' verdicts per run (history; newest counts).
* ``hallucination_claims``: one row per claim of a judged answer: support score, nearest
  passage, category with its reason, suggested correction.
"""

from evalloop.migrations import execute_script

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        ALTER TABLE eval_results ADD COLUMN retrieved_context text[];

        CREATE TABLE readiness_decisions (
            decision_id     uuid PRIMARY KEY,
            run_id          uuid NOT NULL REFERENCES eval_runs (run_id),
            agent_id        text,
            decision        text NOT NULL
                CHECK (decision IN ('GO', 'CONDITIONAL GO', 'NO-GO')),
            decided_at      timestamptz NOT NULL,
            baseline_run_id uuid REFERENCES eval_runs (run_id),
            why             jsonb NOT NULL,
            report          jsonb NOT NULL,
            inputs          jsonb NOT NULL,
            reeval_job_id   uuid
        );
        CREATE INDEX readiness_decisions_run ON readiness_decisions (run_id, decided_at DESC);
        CREATE INDEX readiness_decisions_agent
            ON readiness_decisions (agent_id, decided_at DESC);

        CREATE TABLE deployments (
            deployment_id uuid PRIMARY KEY,
            agent_id      text NOT NULL,
            run_id        uuid NOT NULL REFERENCES eval_runs (run_id),
            deployed_at   timestamptz NOT NULL,
            source        text NOT NULL CHECK (source IN ('cli', 'agent_changed')),
            event_id      uuid UNIQUE,
            recorded_by   text,
            note          text
        );
        CREATE INDEX deployments_agent ON deployments (agent_id, deployed_at DESC);

        CREATE TABLE baseline_pins (
            agent_id  text PRIMARY KEY,
            run_id    uuid REFERENCES eval_runs (run_id),
            pinned_at timestamptz NOT NULL DEFAULT now(),
            pinned_by text,
            note      text
        );

        CREATE TABLE gate_checkpoints (
            id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id     uuid NOT NULL REFERENCES eval_runs (run_id),
            name       text NOT NULL CHECK (name IN ('sample_review', 'edge_cases',
                                                     'persona_consistency', 'escalation_path')),
            status     text NOT NULL CHECK (status IN ('approved', 'rejected')),
            reviewer   text NOT NULL,
            note       text NOT NULL DEFAULT '',
            decided_at timestamptz NOT NULL,
            sample     text[]
        );
        CREATE INDEX gate_checkpoints_run ON gate_checkpoints (run_id, name, decided_at DESC);

        CREATE TABLE hallucination_claims (
            run_id             uuid NOT NULL REFERENCES eval_runs (run_id) ON DELETE CASCADE,
            case_id            text NOT NULL,
            claim_index        integer NOT NULL,
            agent_id           text,
            claim              text NOT NULL,
            score              double precision CHECK (score BETWEEN 0 AND 1),
            supported          boolean,
            category           text CHECK (category IN ('fabricated', 'exaggerated',
                                  'conflated', 'outdated', 'implicit_assumption')),
            reason             text NOT NULL,
            nearest_passage_id text,
            nearest_passage    text,
            correction         text,
            passages           text[] NOT NULL DEFAULT '{}',
            judged_at          timestamptz NOT NULL,
            PRIMARY KEY (run_id, case_id, claim_index)
        );
        CREATE INDEX hallucination_claims_agent
            ON hallucination_claims (agent_id, judged_at DESC) WHERE category IS NOT NULL;
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP TABLE hallucination_claims;
        DROP TABLE gate_checkpoints;
        DROP TABLE baseline_pins;
        DROP TABLE deployments;
        DROP TABLE readiness_decisions;
        ALTER TABLE eval_results DROP COLUMN retrieved_context;
        """
    )
