"""Output formats ("sinks"), registered through ``register_outputs`` as data formats are through
``register_loaders``: ``runs export --format NAME`` and ``run --output NAME[=TARGET]`` reach
every one, the core's (JSONL, CSV, Parquet, JUnit, OpenTelemetry, the HTML report) and a
plugin's alike.

A sink is a function ``write(source, target)``: ``source`` is a :class:`RunSource` (the run, its
suite, and the store's streaming query of its results), ``target`` a path, ``"-"`` for standard
output (sinks that say ``stdout=True``), or an address (the OpenTelemetry endpoint). It returns
None, or a one-line warning to show (an endpoint that did not answer): a sink never changes the
run's exit code.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from .settings import Settings
    from .store import Store


@dataclass(frozen=True)
class OutputFormat:
    """A registered sink. ``default_target`` is where it writes when no target is given
    (``{run_id}`` is replaced; None: the sink decides, as OpenTelemetry takes the configured
    endpoint); ``stdout``: it can write to standard output (``runs export`` without ``-o``);
    ``check()`` raises ``evalyard.ConfigError`` (one line) when the sink cannot work here, and is
    asked before a run starts, so a missing library never costs a run; ``trials``: the sink
    writes whatever ``source.columns`` names, so ``runs export --trials`` can use it."""

    name: str
    write: Callable[["RunSource", str | None], str | None]
    default_target: str | None = None
    stdout: bool = False
    check: Callable[[], None] | None = None
    help: str = ""
    trials: bool = False

    def target_for(self, run_id: str, target: str | None) -> str | None:
        if target:
            return target
        return self.default_target.format(run_id=run_id) if self.default_target else None


@dataclass
class RunSource:
    """What a sink reads: one run, through the store's named queries. With ``trials`` (``runs
    export --trials``), the rows are the run's trials, one per case, epoch and scorer."""

    store: "Store"
    run: Any
    settings: "Settings"
    trials: bool = False

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def columns(self) -> tuple[str, ...]:
        if self.trials:
            from .store.trials import TRIAL_COLUMNS

            return TRIAL_COLUMNS
        from .store.reading import EXPORT_COLUMNS

        return EXPORT_COLUMNS

    def rows(self) -> Iterator[tuple]:
        """Every result as a tuple of :attr:`columns` (case_id, scorer, value, label, passed,
        details, error, media: the case's image and audio records or None), in the suite's case order then the run's scorer order, streamed: memory
        stays flat whatever the size of the run. With ``trials``: every trial (case_id, epoch,
        scorer, value, label, passed, details, error, output, output_error), in case order, then
        epoch, then scorer order, streamed the same way."""
        if self.trials:
            from .store.trials import trial_export_rows

            return trial_export_rows(self.store, self.run)
        from .store.reading import export_rows

        return export_rows(self.store, self.run)

    def suite(self) -> Any:
        return self.store.suite_of(self.run)

    @contextlib.contextmanager
    def open_text(self, target: str | None) -> Iterator[IO[str]]:
        """``target`` opened for text (``"-"`` or None: standard output, left open)."""
        if target in (None, "-"):
            yield sys.stdout
            sys.stdout.flush()
            return
        with open(target, "w", encoding="utf-8", newline="") as handle:
            yield handle

    @contextlib.contextmanager
    def open_binary(self, target: str | None) -> Iterator[IO[bytes]]:
        if target in (None, "-"):
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
            return
        with open(target, "wb") as handle:
            yield handle


def write_output(output: OutputFormat, source: RunSource, target: str | None) -> str | None:
    """Write ``source`` with ``output`` to ``target`` (its default when None); the sink's warning."""
    return output.write(source, output.target_for(source.run_id, target))
