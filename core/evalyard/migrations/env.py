"""Alembic environment: evalyard runs migrations itself, on the connection it opened."""

from alembic import context

from evalyard.store.models import SQLModel

target_metadata = SQLModel.metadata
connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
