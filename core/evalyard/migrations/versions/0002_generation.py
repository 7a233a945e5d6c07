"""Generated candidates: which generator made each candidate (with its model, template hash and
usage); the generator a run used, and the run's model settings (judge model, prompt
directories, provider settings, spending limit) so a resumed run uses the same.

Revision ID: 0002_generation
Revises: 0001_initial
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_generation"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("candidates") as batch:
        batch.add_column(sa.Column("details", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("error", sa.Text(), nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("generator", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("settings", sa.JSON(), nullable=True))


def downgrade():
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("settings")
        batch.drop_column("generator")
    with op.batch_alter_table("candidates") as batch:
        batch.drop_column("error")
        batch.drop_column("details")
