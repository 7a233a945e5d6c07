"""Blind side-by-side reviews of two runs (``evalyard review BASE NEW``): a session (the two runs,
the cases offered, the secret that draws each reviewer's sides) and one verdict per session, case
and reviewer, with the side each run was shown on and an optional note.

Revision ID: 0011_reviews
Revises: 0010_generated_dialogue
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_reviews"
down_revision = "0010_generated_dialogue"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "review_sessions",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("base_run", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("new_run", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("secret", sa.String(), nullable=False),
        sa.Column("case_ids", sa.JSON(), nullable=True),
        sa.Column("plan", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_review_sessions_base_run", "review_sessions", ["base_run"])
    op.create_index("ix_review_sessions_new_run", "review_sessions", ["new_run"])
    op.create_table(
        "reviews",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("session_id", sa.String(), sa.ForeignKey("review_sessions.id"), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("reviewer", sa.String(), nullable=False),
        sa.Column("left", sa.String(), nullable=False),
        sa.Column("verdict", sa.String(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("session_id", "case_id", "reviewer", name="uq_reviews_session_case_reviewer"),
    )


def downgrade():
    op.drop_table("reviews")
    op.drop_index("ix_review_sessions_new_run", table_name="review_sessions")
    op.drop_index("ix_review_sessions_base_run", table_name="review_sessions")
    op.drop_table("review_sessions")
