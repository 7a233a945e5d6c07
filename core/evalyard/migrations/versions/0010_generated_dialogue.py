"""Generated conversations: a nullable JSON column on ``candidates`` and ``trial_outputs`` holding
the messages a conversation generator produced (``{"messages": [...]}``; NULL for a generated
single answer, whose text is the whole output).

Revision ID: 0010_generated_dialogue
Revises: 0009_case_dialogue
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_generated_dialogue"
down_revision = "0009_case_dialogue"
branch_labels = None
depends_on = None

TABLES = ("candidates", "trial_outputs")


def upgrade():
    for table in TABLES:
        op.add_column(table, sa.Column("dialogue", sa.JSON(none_as_null=True), nullable=True))


def downgrade():
    for table in TABLES:
        with op.batch_alter_table(table) as batch:  # SQLite drops a column by copying the table
            batch.drop_column("dialogue")
