"""Provider batch jobs of a run's model calls (``run --batch``) and the calls inside each, by
response-cache key, so a resumed run polls the same jobs and never submits a call twice.

Revision ID: 0004_batches
Revises: 0003_calibrations
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_batches"
down_revision = "0003_calibrations"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "batch_jobs",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("run_id", sa.String(), nullable=True),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("provider_batch_id", sa.String(), nullable=True),
        sa.Column("input_file_id", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("counts", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_batch_jobs_run_id", "batch_jobs", ["run_id"])
    op.create_index("ix_batch_jobs_provider_batch_id", "batch_jobs", ["provider_batch_id"])
    op.create_index("ix_batch_jobs_status", "batch_jobs", ["status"])
    op.create_table(
        "batch_requests",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("job_id", sa.String(), sa.ForeignKey("batch_jobs.id"), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.UniqueConstraint("job_id", "key", name="uq_batch_requests_job_key"),
    )
    op.create_index("ix_batch_requests_job_id", "batch_requests", ["job_id"])
    op.create_index("ix_batch_requests_key", "batch_requests", ["key"])


def downgrade():
    op.drop_table("batch_requests")
    op.drop_table("batch_jobs")
