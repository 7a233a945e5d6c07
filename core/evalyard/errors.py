"""Errors that the CLI turns into one clear line and exit code 2."""


def printable(text: str) -> str:
    """``text`` with each line break, other control character or lone surrogate escaped, so that a
    message quoting the input (a file name, a key, a value) stays one printable line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class EvalyardError(Exception):
    """Base class for errors caused by the user's input or set-up (exit code 2)."""


class InputError(EvalyardError):
    """Bad input data: the message names file, line and field."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None, field: str | None = None):
        self.path, self.line, self.field = path, line, field
        where = ""
        if path is not None:
            # a file name may hold a newline or a lone surrogate: escaped, the error stays one printable line
            where = printable(str(path))
            if line is not None:
                where += f":{line}"
            if field is not None:
                where += f": field {field!r}"
            where += ": "
        super().__init__(where + message)


class ConfigError(EvalyardError):
    """A scorer or generator configuration value is unknown or has the wrong type."""


class PluginError(EvalyardError):
    """A plugin is broken: duplicate names, wrong types, misspelt hooks."""


class UnknownNameError(EvalyardError):
    """A scorer, generator, run or template name that does not exist."""


class StopRun(Exception):
    """Raised by a scorer or generator to stop the whole run cleanly, results so far kept and
    the run resumable (a spending limit reached, a provider that refuses all work). Executors
    and the runner let it through instead of recording it as one case's error."""


class BatchStopped(StopRun):
    """A ``StopRun`` that happened part-way through a batch: ``scores`` holds the finished cases'
    scores (None where a case did not finish), so the runner keeps them before it stops."""

    def __init__(self, stop: StopRun, scores: list) -> None:
        super().__init__(str(stop))
        self.stop, self.scores = stop, scores


class ExecutorUnavailable(StopRun):
    """Raised by an executor whose workers are gone (a cluster that lost every node, no worker
    placed for its time limit): an infrastructure failure, so the run stops as ``failed``,
    resumable, with this message, and no case is given it as a scorer error."""
