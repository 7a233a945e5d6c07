"""SQLModel tables. The schema is owned by Alembic migrations in ``evalyard/migrations``;
a change here needs a new migration (a test compares the two)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import JSON, Column, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class SuiteRow(SQLModel, table=True):
    """One version of a suite: versions are content hashes of the cases (candidates excluded)."""

    __tablename__ = "suites"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_suites_name_version"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: str
    description: str = ""
    source: str = ""
    case_count: int = 0
    created_at: datetime = Field(default_factory=utcnow)


class CaseRow(SQLModel, table=True):
    __tablename__ = "cases"
    __table_args__ = (UniqueConstraint("suite_id", "case_id", name="uq_cases_suite_case"),
                      Index("ix_cases_suite_position", "suite_id", "position"))

    id: Optional[int] = Field(default=None, primary_key=True)
    suite_id: int = Field(foreign_key="suites.id", index=True)
    position: int
    case_id: str
    input: Optional[str] = Field(default=None, sa_column=Column(Text))
    reference: Optional[str] = Field(default=None, sa_column=Column(Text))
    context: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    case_metadata: dict[str, Any] = Field(default_factory=dict, sa_column=Column("metadata", JSON))
    #: a conversation case's ``messages``, ``tools`` and ``expected_tool_calls`` (the keys it has);
    #: NULL for the single-answer cases, so they cost nothing here
    dialogue: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON(none_as_null=True)))


class MediaRow(SQLModel, table=True):
    """The bytes of one image or audio clip, once however many cases, suites and runs name it:
    keyed by their sha256, which cases' content parts and requests hold instead of the bytes.
    A table rather than files beside the database: PostgreSQL has no "beside", a row is written
    in the same transaction as the cases naming it, and a copied or backed-up database keeps
    its media."""

    __tablename__ = "media"

    sha256: str = Field(primary_key=True)
    media_type: str
    size: int
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"

    id: str = Field(primary_key=True)
    name: str = ""
    suite_id: int = Field(foreign_key="suites.id", index=True)
    status: str = "running"  # running | completed | interrupted | failed
    source: str = ""
    scorers: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    versions: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    totals: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    #: the generator that filled missing candidates (name, config, fingerprint), if any
    generator: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))
    #: judge model, prompt directories, provider settings and spending limit, for --resume
    settings: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, index=True)
    finished_at: Optional[datetime] = None


class CandidateRow(SQLModel, table=True):
    """The candidate output each run scored for each case (a run is suite x candidates x scorers).

    A candidate the run's generator made carries the generator's ``details`` (model, template
    hash, usage); ``text`` is NULL until it is generated, which is how a resumed run knows
    what is left to generate. A generation that failed keeps its ``error``. A generated
    conversation keeps its messages in ``dialogue`` (``{"messages": [...]}``), its last answer in
    ``text``."""

    __tablename__ = "candidates"
    __table_args__ = (UniqueConstraint("run_id", "case_id", name="uq_candidates_run_case"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True)
    case_id: str
    text: Optional[str] = Field(default=None, sa_column=Column(Text))
    details: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    dialogue: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON(none_as_null=True)))


class ResultRow(SQLModel, table=True):
    """One Score for one case and one scorer. Unique, so a resumed run cannot duplicate."""

    __tablename__ = "results"
    __table_args__ = (
        UniqueConstraint("run_id", "case_id", "scorer", name="uq_results_run_case_scorer"),
        Index("ix_results_run_scorer", "run_id", "scorer"),
    )

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id")
    case_id: str
    scorer: str
    value: Optional[float] = None
    label: Optional[str] = None
    passed: Optional[bool] = None
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    usage: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))
    duration_ms: Optional[float] = None
    created_at: datetime = Field(default_factory=utcnow)


class TrialOutputRow(SQLModel, table=True):
    """One epoch's generated output of a case (a run with ``--epochs N`` and a generator). The
    run's ``candidates`` row holds epoch 0's, so single-output views show the first sample."""

    __tablename__ = "trial_outputs"
    __table_args__ = (UniqueConstraint("run_id", "case_id", "epoch", name="uq_trial_outputs_run_case_epoch"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id")
    case_id: str
    epoch: int
    text: Optional[str] = Field(default=None, sa_column=Column(Text))
    details: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    dialogue: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON(none_as_null=True)))


class TrialRow(SQLModel, table=True):
    """One epoch's score of a case by a scorer (``--epochs N``); keyed (run, case, epoch, scorer).
    Written in the transaction that writes the case's reduced score to ``results``."""

    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("run_id", "case_id", "epoch", "scorer", name="uq_trials_run_case_epoch_scorer"),
        Index("ix_trials_run_scorer_case", "run_id", "scorer", "case_id"),
    )

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id")
    case_id: str
    epoch: int
    scorer: str
    value: Optional[float] = None
    label: Optional[str] = None
    passed: Optional[bool] = None
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    usage: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))


class ModelCallRow(SQLModel, table=True):
    """Response cache for model calls; the key hashes model, messages, parameters and sample index."""

    __tablename__ = "model_calls"

    key: str = Field(primary_key=True)
    model: str = Field(index=True)
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    response: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    usage: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))
    latency_ms: Optional[float] = None
    created_at: datetime = Field(default_factory=utcnow)


class CalibrationRow(SQLModel, table=True):
    """A judge's agreement with people on a labelled data file (``evalyard calibrate --save``).

    Found again by ``fingerprint``: the scorer's fingerprint as a run stores it (scorer, config,
    judge model, template hash), so a later run of the same judge can show this agreement and
    use the fitted threshold. ``report`` holds everything ``calibrate --json`` prints."""

    __tablename__ = "calibrations"

    id: Optional[int] = Field(default=None, primary_key=True)
    fingerprint: str = Field(index=True)
    scorer: str
    data_path: str
    data_hash: str
    run_id: Optional[str] = None
    n: int
    report: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow)


class BatchJobRow(SQLModel, table=True):
    """A provider batch job of a run's model calls (``run --batch``): written before the job is
    created at the provider (``creating``), so a driver killed at any point finds it again on
    resume and never submits its requests twice."""

    __tablename__ = "batch_jobs"

    id: str = Field(primary_key=True)  # ours; the provider's id is provider_batch_id
    run_id: Optional[str] = Field(default=None, index=True)
    model: str
    provider_batch_id: Optional[str] = Field(default=None, index=True)
    input_file_id: Optional[str] = None
    #: creating -> submitted -> processed (its answers are in the response cache, its failures marked)
    status: str = Field(default="creating", index=True)
    requests: int = 0
    counts: Optional[dict[str, Any]] = Field(default=None, sa_column=Column(JSON))
    error: Optional[str] = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None


class BatchRequestRow(SQLModel, table=True):
    """One model call inside a batch job, by its response-cache key."""

    __tablename__ = "batch_requests"
    __table_args__ = (UniqueConstraint("job_id", "key", name="uq_batch_requests_job_key"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    job_id: str = Field(foreign_key="batch_jobs.id", index=True)
    key: str = Field(index=True)
    #: pending -> answered | failed (a failed request is sent again in a later job)
    state: str = Field(default="pending")
    error: Optional[str] = Field(default=None, sa_column=Column(Text))


class LabelRow(SQLModel, table=True):
    """A person's label of one case of a run (``evalyard label``), for calibrating its judge.

    ``scorer`` is the judge whose verdict the person was checking ("" : the case itself, for any
    of the run's scorers). One label per (run, case, scorer): labelling again replaces it, and
    ``labeller`` and ``created_at`` say who gave the label in force and when."""

    __tablename__ = "labels"
    __table_args__ = (UniqueConstraint("run_id", "case_id", "scorer", name="uq_labels_run_case_scorer"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id")  # looked up by the unique constraint's index
    case_id: str
    scorer: str = ""
    label: str
    labeller: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class ReviewSessionRow(SQLModel, table=True):
    """A blind side-by-side review of two runs (``evalyard review BASE NEW``): the cases offered,
    in order, and how they were drawn. ``secret`` draws each reviewer's sides per case (so a
    resumed session shows the same sides); it never leaves the server."""

    __tablename__ = "review_sessions"

    id: str = Field(primary_key=True)
    base_run: str = Field(foreign_key="runs.id", index=True)
    new_run: str = Field(foreign_key="runs.id", index=True)
    secret: str
    case_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    plan: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow)


class ReviewRow(SQLModel, table=True):
    """One reviewer's verdict on one case of a review session: ``left`` is the run shown as A
    ("base" or "new"), ``verdict`` A, B, tie or both_bad. One per (session, case, reviewer):
    reviewing again replaces it, as a label does."""

    __tablename__ = "reviews"
    __table_args__ = (UniqueConstraint("session_id", "case_id", "reviewer", name="uq_reviews_session_case_reviewer"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="review_sessions.id")  # looked up by the unique constraint's index
    case_id: str
    reviewer: str
    left: str
    verdict: str
    note: str = Field(default="", sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class ExperimentRow(SQLModel, table=True):
    """A grid of runs over one suite (models x prompts x generation settings): each cell an
    ordinary run. ``spec`` is the grid as asked for, ``cells`` each cell's own settings
    (``label``, ``model``, ``prompt``, ``params``), in order: cell 0 is the baseline."""

    __tablename__ = "experiments"

    id: str = Field(primary_key=True)
    name: str = ""
    source: str = ""
    spec: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    cells: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, index=True)


class ExperimentRunRow(SQLModel, table=True):
    """Which run is which cell of an experiment: one row per (experiment, cell), written as the
    cell's run is created, so a resumed experiment finds it."""

    __tablename__ = "experiment_runs"
    __table_args__ = (UniqueConstraint("experiment_id", "cell", name="uq_experiment_runs_cell"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    experiment_id: str = Field(foreign_key="experiments.id")
    cell: int
    run_id: str = Field(foreign_key="runs.id")
