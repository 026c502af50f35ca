"""Triage: embedded negative cases, topic clusters, the per-agent triage state, the review queue.

Revision ID: 0003

* ``triage_cases``: one row per negative case the triage service has seen (``case_id`` from
  ``feedback.negative.v1``; a redelivered case with the same ``text_hash`` changes nothing).
  ``embedding`` is float32 little-endian bytes (``dimension`` values; unit length) of
  question + comment + answer; ``question_embedding`` (same format) is filled lazily for
  candidates (near-duplicate checks). bytea rather than ``real[]`` or pgvector: measured on
  embedded PostgreSQL 18 with 50,000 x 384 vectors, COPY in 1.2 s vs 8.2 s and fetch 1.4 s vs
  4.7 s for ``real[]`` (asyncpg builds a Python float per element); nothing here needs search in
  SQL, and bytea works on every PostgreSQL.
* ``clusters``: an agent's current clusters. ``centroid`` = mean of the members' unit vectors
  (not renormalised; see ``evalloop.core.clustering``); ``provisional`` = created online since
  the last re-clustering; ``golden_cases`` = golden cases that fall into it
  (``covered_by_golden`` = that count > 0).
* ``triage_agents``: per agent, new cases since the last re-clustering (the trigger), when it
  last ran, and the sequence that names new clusters (``c<seq>``).
* ``review_queue``: golden-set candidates. ``candidate_id`` is a UUIDv5 of (agent, question key),
  and ``UNIQUE (agent_id, question_key)`` makes re-proposing idempotent; ``published_at`` is NULL
  until ``golden.candidate.proposed.v1`` was acked (an outbox: re-published after a crash). The
  review service moves ``status`` from ``pending`` to ``confirmed`` / ``edited`` / ``rejected``.
"""

from evalloop.migrations import execute_script

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE triage_cases (
            case_id            uuid PRIMARY KEY,
            agent_id           text NOT NULL,
            occurred_at        timestamptz NOT NULL,
            confidence         double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
            signals            text[] NOT NULL DEFAULT '{}',
            evidence_event_ids uuid[] NOT NULL DEFAULT '{}',
            question           text,
            answer             text,
            comment            text,
            expected_answer    text,
            text_hash          text NOT NULL,
            embedding_model    text NOT NULL,
            dimension          integer NOT NULL CHECK (dimension > 0),
            embedding          bytea NOT NULL,
            question_embedding bytea,
            cluster_id         text,
            updated_at         timestamptz NOT NULL DEFAULT now()
        );
        -- re-clustering reads an agent's recent cases
        CREATE INDEX triage_cases_agent_time ON triage_cases (agent_id, occurred_at DESC);
        CREATE INDEX triage_cases_agent_cluster ON triage_cases (agent_id, cluster_id);

        CREATE TABLE clusters (
            agent_id          text NOT NULL,
            cluster_id        text NOT NULL,
            label             text,
            terms             text[] NOT NULL DEFAULT '{}',
            size              integer NOT NULL CHECK (size >= 0),
            centroid          real[] NOT NULL,
            provisional       boolean NOT NULL DEFAULT false,
            golden_cases      integer NOT NULL DEFAULT 0,
            covered_by_golden boolean GENERATED ALWAYS AS (golden_cases > 0) STORED,
            updated_at        timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (agent_id, cluster_id)
        );

        CREATE TABLE triage_agents (
            agent_id            text PRIMARY KEY,
            new_cases           integer NOT NULL DEFAULT 0,
            next_cluster_seq    bigint NOT NULL DEFAULT 1,
            reclusters          integer NOT NULL DEFAULT 0,
            last_reclustered_at timestamptz
        );

        CREATE TABLE review_queue (
            candidate_id       uuid PRIMARY KEY,
            agent_id           text NOT NULL,
            question_key       text NOT NULL,
            case_id            uuid NOT NULL,
            cluster_id         text NOT NULL,
            cluster_label      text NOT NULL,
            question           text NOT NULL,
            answer_given       text,
            expected_answer    text,
            evidence_event_ids uuid[] NOT NULL,
            confidence         double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
            confidence_parts   jsonb NOT NULL DEFAULT '{}',
            question_embedding bytea,
            status             text NOT NULL DEFAULT 'pending'
                               CHECK (status IN ('pending', 'confirmed', 'edited', 'rejected')),
            proposed_at        timestamptz NOT NULL DEFAULT now(),
            updated_at         timestamptz NOT NULL DEFAULT now(),
            published_at       timestamptz,
            UNIQUE (agent_id, question_key)
        );
        CREATE INDEX review_queue_agent_status ON review_queue (agent_id, status, cluster_id);
        CREATE INDEX review_queue_unpublished ON review_queue (agent_id) WHERE published_at IS NULL;
        """
    )


def downgrade() -> None:
    execute_script(
        "DROP TABLE review_queue; DROP TABLE triage_agents; DROP TABLE clusters; "
        "DROP TABLE triage_cases;"
    )
