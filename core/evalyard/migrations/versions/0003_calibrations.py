"""Saved calibrations: how well a judge (by its fingerprint: scorer, config, model, template
hash) agreed with people on a labelled data file, and the threshold fitted there
(``evalyard calibrate --save``), so later runs of the same judge can show and use them.

Revision ID: 0003_calibrations
Revises: 0002_generation
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_calibrations"
down_revision = "0002_generation"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "calibrations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("fingerprint", sa.String(), nullable=False),
        sa.Column("scorer", sa.String(), nullable=False),
        sa.Column("data_path", sa.String(), nullable=False),
        sa.Column("data_hash", sa.String(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_calibrations_fingerprint", "calibrations", ["fingerprint"])


def downgrade():
    op.drop_index("ix_calibrations_fingerprint", table_name="calibrations")
    op.drop_table("calibrations")
