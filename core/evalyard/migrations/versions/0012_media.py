"""Media stored once: the ``media`` table holds each image or audio clip's bytes by sha256; cases
name them by hash in their content parts (in the ``dialogue`` JSON column, which needs no change).

Revision ID: 0012_media
Revises: 0011_reviews
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_media"
down_revision = "0011_reviews"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "media",
        sa.Column("sha256", sa.String(), primary_key=True),
        sa.Column("media_type", sa.String(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade():
    op.drop_table("media")
