"""An index on a suite's cases by position, so a run reads its cases a window at a time in
suite order (keyset paging) instead of sorting the whole suite for every window.

Revision ID: 0005_case_positions
Revises: 0004_batches
"""

from alembic import op

revision = "0005_case_positions"
down_revision = "0004_batches"
branch_labels = None
depends_on = None


def upgrade():
    op.create_index("ix_cases_suite_position", "cases", ["suite_id", "position"])


def downgrade():
    op.drop_index("ix_cases_suite_position", table_name="cases")
