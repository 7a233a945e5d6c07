"""Repeated trials (``--epochs N``): each epoch's generated output of a case, and each epoch's
score of a case by a scorer. ``results`` keeps one row per (run, case, scorer), the reduced score.

Revision ID: 0008_trials
Revises: 0007_experiments
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_trials"
down_revision = "0007_experiments"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "trial_outputs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.UniqueConstraint("run_id", "case_id", "epoch", name="uq_trial_outputs_run_case_epoch"),
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("scorer", sa.String(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("label", sa.String(), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("usage", sa.JSON(), nullable=True),
        sa.UniqueConstraint("run_id", "case_id", "epoch", "scorer", name="uq_trials_run_case_epoch_scorer"),
    )
    op.create_index("ix_trials_run_scorer_case", "trials", ["run_id", "scorer", "case_id"])


def downgrade():
    op.drop_index("ix_trials_run_scorer_case", "trials")
    op.drop_table("trials")
    op.drop_table("trial_outputs")
