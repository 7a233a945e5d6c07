"""Experiments: a grid of ordinary runs over one suite (models x prompts x settings), and which
run is which cell.

Revision ID: 0007_experiments
Revises: 0006_labels
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_experiments"
down_revision = "0006_labels"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "experiments",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=True),
        sa.Column("cells", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_experiments_created_at", "experiments", ["created_at"])
    op.create_table(
        "experiment_runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("experiment_id", sa.String(), sa.ForeignKey("experiments.id"), nullable=False),
        sa.Column("cell", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.UniqueConstraint("experiment_id", "cell", name="uq_experiment_runs_cell"),
    )


def downgrade():
    op.drop_table("experiment_runs")
    op.drop_index("ix_experiments_created_at", "experiments")
    op.drop_table("experiments")
