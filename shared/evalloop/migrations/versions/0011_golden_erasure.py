"""Erasure reaches golden sets: redaction of confirmed cases, with an audit of each redaction.

Revision ID: 0011

* ``golden_immutable()`` (the trigger function of ``golden_set_versions`` and
  ``golden_cases``) still refuses every DELETE and every UPDATE, except an erasure's: inside a
  transaction that ran ``SET LOCAL evalloop.erasure = 'on'`` a ``golden_cases`` row may change
  its free text only (question, expected answer, context chunks, expected behaviour, notes) and
  a ``golden_set_versions`` row its ``content_hash`` only. Ids, positions, flags, category,
  tags and diffs never change (``docs/security.md#erasure``).
* ``review_actions_append_only()`` (the trigger function of the review audit) still refuses
  every DELETE and every UPDATE, except an erasure's: inside a transaction that ran
  ``SET LOCAL evalloop.erasure = 'on'`` a row may change its free text only (``before``,
  ``after``, ``evidence``, ``reason``); ids, item, action, reviewer, time and version stay.
* ``golden_redactions``: one row per (erase request, version, case) redacted: when, the hash of
  the version before and after, so a changed content hash is explained. Append-only.
"""

from evalloop.migrations import execute_script

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE OR REPLACE FUNCTION golden_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'UPDATE' AND current_setting('evalloop.erasure', true) = 'on' THEN
                -- to_jsonb: one function serves both tables (a record field of the other
                -- table would not resolve)
                IF TG_TABLE_NAME = 'golden_cases'
                   AND (to_jsonb(NEW) - ARRAY['question', 'expected_answer', 'context_chunks',
                                              'expected_behavior', 'notes'])
                       = (to_jsonb(OLD) - ARRAY['question', 'expected_answer', 'context_chunks',
                                                'expected_behavior', 'notes']) THEN
                    RETURN NEW;
                END IF;
                IF TG_TABLE_NAME = 'golden_set_versions'
                   AND (to_jsonb(NEW) - 'content_hash') = (to_jsonb(OLD) - 'content_hash') THEN
                    RETURN NEW;
                END IF;
            END IF;
            RAISE EXCEPTION 'golden set versions are immutable: % on % refused',
                TG_OP, TG_TABLE_NAME;
        END
        $$;

        CREATE OR REPLACE FUNCTION review_actions_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'UPDATE' AND current_setting('evalloop.erasure', true) = 'on'
               AND (to_jsonb(NEW) - ARRAY['before', 'after', 'evidence', 'reason'])
                   = (to_jsonb(OLD) - ARRAY['before', 'after', 'evidence', 'reason']) THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION 'the review audit is append-only: % on % refused',
                TG_OP, TG_TABLE_NAME;
        END
        $$;

        CREATE TABLE golden_redactions (
            erase_id      uuid NOT NULL,
            version_id    uuid NOT NULL REFERENCES golden_set_versions (version_id),
            case_id       text NOT NULL,
            redacted_at   timestamptz NOT NULL,
            hash_before   text NOT NULL,
            hash_after    text NOT NULL,
            PRIMARY KEY (erase_id, version_id, case_id)
        );
        CREATE INDEX golden_redactions_version ON golden_redactions (version_id, redacted_at);

        CREATE FUNCTION golden_redactions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'the golden redaction audit is append-only: % on % refused',
                TG_OP, TG_TABLE_NAME;
        END
        $$;
        CREATE TRIGGER golden_redactions_append_only BEFORE UPDATE OR DELETE
            ON golden_redactions FOR EACH ROW EXECUTE FUNCTION golden_redactions_append_only();
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP TABLE golden_redactions;
        DROP FUNCTION golden_redactions_append_only();
        CREATE OR REPLACE FUNCTION review_actions_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'the review audit is append-only: % on % refused',
                TG_OP, TG_TABLE_NAME;
        END
        $$;
        CREATE OR REPLACE FUNCTION golden_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'golden set versions are immutable: % on % refused',
                TG_OP, TG_TABLE_NAME;
        END
        $$;
        """
    )
