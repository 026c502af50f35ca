"""The judge: cached judgements and calibration records.

Revision ID: 0008

* ``judge_cache``: the raw output of one judgement (``docs/judge.md#caching``), keyed by judge
  model + prompt version + case + answer SHA-256 + input SHA-256 (question, passages, reference
  answer). ``raw`` maps dimension -> P(yes) or null; ``unscored`` maps dimension ->
  ``[reason, detail]``. Rows are written once and never updated; calibration is applied on read.
* ``judge_calibrations``: calibration records (``docs/judge.md#calibration``) as written by
  ``evalloop judge calibrate``; ``record`` is the whole record as JSON.
"""

from evalloop.migrations import execute_script

revision = "0008"
down_revision = "0005"  # one linear chain: 0004, 0006, 0007, 0010, 0005, 0008, 0009
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE judge_cache (
            judge_model       text NOT NULL,
            prompt_version    text NOT NULL,
            case_id           text NOT NULL,
            answer_sha256     text NOT NULL,
            input_sha256      text NOT NULL,
            raw               jsonb NOT NULL,
            unscored          jsonb NOT NULL,
            prompt_tokens     integer NOT NULL DEFAULT 0,
            completion_tokens integer NOT NULL DEFAULT 0,
            created_at        timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (judge_model, prompt_version, case_id, answer_sha256, input_sha256)
        );

        CREATE TABLE judge_calibrations (
            calibration_id text PRIMARY KEY,
            judge_model    text NOT NULL,
            prompt_version text NOT NULL,
            created_at     timestamptz NOT NULL DEFAULT now(),
            record         jsonb NOT NULL
        );
        CREATE INDEX judge_calibrations_latest
            ON judge_calibrations (judge_model, prompt_version, created_at DESC);
        """
    )


def downgrade() -> None:
    execute_script(
        """
        DROP TABLE judge_calibrations;
        DROP TABLE judge_cache;
        """
    )
