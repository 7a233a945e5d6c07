"""People's labels of a run's cases (``evalyard label``), which ``evalyard calibrate --run``
compares the run's judge with: who gave each label and when; one label per case and scorer.

Revision ID: 0006_labels
Revises: 0005_case_positions
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_labels"
down_revision = "0005_case_positions"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "labels",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("scorer", sa.String(), nullable=False),
        sa.Column("label", sa.String(), nullable=False),
        sa.Column("labeller", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_id", "case_id", "scorer", name="uq_labels_run_case_scorer"),
    )


def downgrade():
    op.drop_table("labels")
