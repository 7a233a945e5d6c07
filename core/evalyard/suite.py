"""Suite: a named, versioned set of cases plus the scorers to run on them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, Callable, Iterable, Iterator

from .scoring import Case


#: The threshold that asks for the one fitted by the judge's saved calibration.
CALIBRATED = "calibrated"


@dataclass
class ScorerSpec:
    """A scorer chosen for a run: its registry name, config values and pass threshold."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    #: a number, or ``"calibrated"``: the threshold of the judge's saved calibration (``evalyard calibrate --save``)
    threshold: float | str | None = None
    #: where the spec came from, for error messages ("suite.yaml:12" or "--scorer")
    origin: str = ""
    #: how a run with --epochs reduces its trials per case (``pass_at_k:k=2``; None: mean)
    reducer: str | None = None
    #: cases per call of the scorer (None: the scorer's own ``batch_size``); values never depend on it
    batch_size: int | None = None
    #: extraction steps applied to the candidate before this scorer reads it (``evalyard.extraction``)
    extract: tuple[str, ...] | None = None


class Suite:
    """A named set of cases and the scorers to run on them.

    The cases are either a list (``cases=``: a suite written in Python, inline YAML cases) or a
    reader (``read=``: a function returning a fresh iterator of ``(case, origin)`` pairs, e.g. over
    a JSONL file). A run only ever streams them (``iter_cases``), a window at a time, so a reader
    lets a suite of any size run in constant memory; ``cases`` builds the whole list, for callers
    that need it (small labelled sets, the Python API).
    """

    def __init__(self, name: str, cases: list[Case] | None = None, description: str = "",
                 scorers: list[ScorerSpec] | None = None, source: str = "",
                 models: dict[str, dict[str, Any]] | None = None, prompt_dirs: list[str] | None = None,
                 executor: str | None = None, *, read: Callable[[], Iterable[tuple[Case, str]]] | None = None,
                 origins: list[str] | None = None, cluster: str | None = None) -> None:
        if (cases is None) == (read is None):
            raise TypeError("Suite needs exactly one of cases= (a list) or read= (a reader)")
        self.name = name
        self.description = description
        self.scorers = list(scorers or [])
        self.source = source
        #: provider settings per model string (``api_base``, ``api_key_env``, extra parameters)
        self.models = dict(models or {})
        #: the suite's own prompt-template directories (absolute), after the user's
        self.prompt_dirs = list(prompt_dirs or [])
        #: where the suite's non-async scorers run unless the run says otherwise (``--executor``)
        self.executor = executor
        #: ``metadata.FIELD`` whose value groups the cases, for clustered statistics (``--cluster`` overrides)
        self.cluster = cluster
        #: a suite file's ``matrix:`` (models, prompts, params): ``evalyard run`` runs it as an experiment
        self.matrix: dict[str, Any] | None = None
        #: a suite file's ``epochs:``: trials per case (``--epochs`` overrides)
        self.epochs: int | None = None
        #: a suite file's ``generator:``: (name, config) of what fills missing candidates
        #: (``--generator`` and ``--model`` override)
        self.generator: tuple[str, dict[str, Any]] | None = None
        #: a suite file's ``extract:``: extraction steps for every scorer without its own (``--extract`` overrides)
        self.extract: tuple[str, ...] | None = None
        self._cases = list(cases) if cases is not None else None
        self._origins = origins
        self._read = read
        self._version: str | None = None
        self._count: int | None = None

    def __repr__(self) -> str:
        return f"Suite(name={self.name!r}, source={self.source!r})"

    def iter_cases(self) -> Iterator[tuple[Case, str]]:
        """Every case with its origin (``file:line``), in order, read afresh on each call."""
        if self._read is not None:
            return iter(self._read())
        origins = self._origins or [self.source or self.name] * len(self._cases)
        return zip(self._cases, origins)

    @property
    def cases(self) -> list[Case]:
        """Every case in one list, ids checked (the whole suite in memory: a run never asks for it)."""
        if self._cases is None:
            from .cases import check_unique_ids

            pairs = list(self.iter_cases())
            cases, origins = [c for c, _ in pairs], [o for _, o in pairs]
            check_unique_ids(cases, origins)
            self._cases, self._origins, self._read = cases, origins, None
        return self._cases

    @property
    def origins(self) -> Sequence[str]:
        """Where each case came from (``file:line``), built with ``cases`` when first used."""
        return _Origins(self)

    def remember(self, version: str, count: int) -> None:
        """Keep the version and size a streaming pass computed (``evalyard.runner.check_cases``)."""
        self._version, self._count = version, count

    @property
    def case_count(self) -> int:
        if self._count is None:
            self._count = len(self._cases) if self._cases is not None else sum(1 for _ in self.iter_cases())
        return self._count

    @property
    def version(self) -> str:
        """Content hash of the cases without their candidates: the same inputs, references,
        contexts and metadata always give the same version, whichever outputs are scored.
        A suite read from a file computes it once; one held in a list again on each call (its
        cases may have been changed in place)."""
        if self._version is None or self._read is None:
            digest = version_digest()
            count = 0
            for case, _ in self.iter_cases():
                add_to_version(digest, case)
                count += 1
            self._version, self._count = digest.hexdigest()[:16], count
        return self._version


class _Origins(Sequence):
    def __init__(self, suite: Suite) -> None:
        self._suite = suite

    def _list(self) -> list[str]:
        suite = self._suite
        if suite._origins is None or suite._cases is None:
            suite.cases  # noqa: B018 - builds both lists
        if suite._origins is None:
            suite._origins = [suite.source or suite.name] * len(suite._cases)
        return suite._origins

    def __getitem__(self, index):
        return self._list()[index]

    def __len__(self) -> int:
        return len(self._list())


def version_digest():
    import hashlib  # here, not at the top: loading OpenSSL would slow every command's start-up

    return hashlib.sha256()


def add_to_version(digest, case: Case) -> None:
    """Feed one case (without its candidate: candidates belong to a run) to a suite's version hash.

    The version names the cases a run stores, so it covers what is stored: the key order of a
    nested object too (a prompt shows ``metadata`` in that order). A case whose nested objects are
    all in sorted key order hashes as it always did; any other order is added to the hash."""
    content = case.to_dict()
    del content["candidate"]
    try:
        try:
            sorted_text = json.dumps(content, sort_keys=True, ensure_ascii=False)
        except TypeError:  # keys of several types (a YAML mapping's 1 and "a"): sorted as JSON writes them
            content = _text_keys(content)
            sorted_text = json.dumps(content, sort_keys=True, ensure_ascii=False)
        digest.update(sorted_text.encode())
        if not _keys_sorted(content):
            digest.update(b"\x00" + json.dumps(content, ensure_ascii=False).encode())
    except UnicodeEncodeError:  # a case built in Python: data files are checked as they are read
        from .errors import InputError
        from .valid_text import unstorable

        field, problem, _ = unstorable(content) or ("", "text that is not valid Unicode", None)
        raise InputError(f"case {printable_id(case.id)}: field {field!r}: {problem}") from None
    digest.update(b"\n")


def printable_id(case_id: str) -> str:
    from .valid_text import printable

    return repr(printable(str(case_id)))


def _text_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k if isinstance(k, str) else json.dumps(k): _text_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text_keys(v) for v in value]
    return value


def _keys_sorted(content: dict[str, Any]) -> bool:
    """Whether every object nested in the case's fields lists its keys in sorted order."""
    stack = list(content.values())
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys = list(item)
            if keys != sorted(keys):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True
