"""Cases that hold a dialogue: one nullable JSON column with a case's ``messages``, ``tools`` and
``expected_tool_calls`` (NULL for a single-answer case).

Revision ID: 0009_case_dialogue
Revises: 0008_trials
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_case_dialogue"
down_revision = "0008_trials"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("cases", sa.Column("dialogue", sa.JSON(none_as_null=True), nullable=True))


def downgrade():
    with op.batch_alter_table("cases") as batch:  # SQLite drops a column by copying the table
        batch.drop_column("dialogue")
