"""Reducers: one case's scores over repeated trials (``--epochs N``) made into the one score its
case counts with in the summary, ``compare`` and the report.

Pure functions over ``Trial`` values. The numbers follow inspect_ai's epoch reducers
(``mean_score``, ``median_score``, ``mode_score``, ``max_score``, ``pass_at``, ``at_least``), a
test checks them against the package itself:

- a trial's value is its number, or its label when it has none (a judge's ``"yes"``); labels
  count as numbers the way inspect_ai reads them: ``C``/``yes``/``true`` 1, ``P`` 0.5,
  ``I``/``N``/``no``/``false`` 0, a numeric string its number, anything else 0;
- a trial that failed (an error) is left out, as inspect_ai leaves out an unscored (NaN) epoch;
  when every trial failed the case's score is an error, never a 0;
- ``mode``: the most frequent value, the earliest among equally frequent ones;
- ``pass_at_k``: the unbiased estimator of Chen et al. (2021), correct meaning a value of at
  least ``value`` (default 1.0); fewer scored trials than ``k`` is an error (inspect_ai: NaN);
- ``at_least_k``: 1 when at least ``k`` trials reach ``value``, else 0.

``min`` is evalyard's own (inspect_ai has none): the lowest value, the trial's own score.

A trial's value may be a dict (``{"accuracy": 1, "honesty": "C"}``), as inspect_ai's dict-valued
scores: every reducer then works key by key over the trials' dicts and gives a dict (inspect_ai's
``_compute_dict_stat`` / ``_count_dict``); a key's ``None`` is that epoch unscored for that key.
Trials that mix dicts and plain values, or dicts with different keys, are an error of the case
(inspect_ai raises).

A reduction that gives no number (NaN: the mean of ``inf`` and ``-inf``; a key no epoch scored)
is an error of the case, never an empty result that the summary would silently leave out.

Reducers are registered by name as scorers are (``register_reducers``; the built-ins below through
``evalyard.builtins.reducers``): a registered reducer reduces a case's scored, scalar trials, and
what is said above (failed trials, dicts key by key, NaN) holds for every reducer alike.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence

from ..errors import InputError, UnknownNameError

DEFAULT = "mean"
#: the parameters a reducer may take (``pass_at_k:k=3,value=0.5``)
PARAMETERS = frozenset({"k", "value"})


@dataclass(frozen=True)
class Trial:
    """One epoch's score of one case by one scorer (as stored)."""

    #: a number, or a dict of them (inspect_ai's dict-valued scores, reduced key by key)
    value: float | dict[str, Any] | None = None
    label: str | None = None
    passed: bool | None = None
    error: str | None = None

    @property
    def scored(self) -> bool:
        return self.error is None and (self.value is not None or self.label is not None)

    @property
    def raw(self) -> float | str | dict[str, Any]:
        """The value inspect_ai would reduce: the number, else the label."""
        return self.value if self.value is not None else self.label  # type: ignore[return-value]

    @property
    def number(self) -> float:
        """The value as a number, as inspect_ai reads it (``to_float``): a label ``C`` is 1."""
        return to_float(self.raw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Reduced:
    """A case's score over its trials: ``value`` and ``label`` as a scorer's, or ``error``.
    ``value`` is a dict when the trials' values were dicts."""

    value: float | dict[str, Any] | None = None
    label: str | None = None
    error: str | None = None
    #: the verdict of the trials it stands for, where they agree (a threshold, applied to
    #: ``value`` afterwards, decides otherwise)
    passed: bool | None = None


@dataclass(frozen=True)
class ReducerKind:
    """A reducer as registered (``register_reducers``): ``reduce(scored, reducer, epochs)`` makes one
    case's score from its scored trials (never empty: failed trials are left out, and a trial
    whose value is a dict comes key by key), where ``reducer`` is the parsed ``Reducer`` (its ``k``
    and ``value``) and ``epochs`` the number of trials the case had; it returns a ``Reduced`` or a
    number. ``params``: which of ``k`` and ``value`` it takes; ``needs_k``: ``k`` is required."""

    name: str
    reduce: Callable[[Sequence[Trial], Reducer, int], Reduced | float]
    params: frozenset[str] = frozenset()
    needs_k: bool = False


class ReducerNames(Protocol):
    """Where ``parse_reducer`` finds a reducer by name: the registry's table of them
    (``registry.reducers``), or the built-ins alone (``BUILTINS``)."""

    def get(self, name: str) -> ReducerKind: ...

    def known(self) -> str: ...


@dataclass(frozen=True)
class Reducer:
    """A parsed reducer (``pass_at_k:k=3,value=0.5``)."""

    name: str = DEFAULT
    k: int | None = None
    value: float = 1.0
    #: the spec as the user wrote it (``parse_reducer``): stored and shown as written, never
    #: rebuilt from the parsed numbers (``%g`` would turn ``value=0.99999999`` into 1)
    written: str | None = field(default=None, compare=False)
    #: what reduces (a plugin's reducer, found by ``parse_reducer``); None: the built-in ``name``
    kind: ReducerKind | None = field(default=None, compare=False, repr=False)

    @property
    def spec(self) -> str:
        if self.written is not None:
            return self.written
        if self.k is None:
            return self.name
        return f"{self.name}:k={self.k}" + ("" if self.value == 1.0 else f",value={self.value!r}")

    def check_epochs(self, epochs: int, where: str) -> None:
        if self.k is not None and self.k > epochs:
            raise InputError(f"{where}: reducer {self.spec} needs at least {self.k} epochs, the run has {epochs} "
                             f"(--epochs {self.k} or more)")

    def __call__(self, trials: Sequence[Trial]) -> Reduced:
        return reduce_trials(self, trials)


def parse_reducer(text: str, where: str = "--reducer", names: ReducerNames | None = None) -> Reducer:
    """``NAME`` or ``NAME:key=value,...``, the name found in ``names`` (the registry's reducers;
    the built-ins when None); an InputError names what is wrong. The parsed reducer keeps
    ``text`` as its spec and uses ``value`` exactly as written."""
    names = names if names is not None else BUILTINS
    if not text.strip():
        raise InputError(f"{where}: expected a reducer name (known: {names.known()})")
    name, _, rest = text.strip().partition(":")
    name = name.strip()
    try:
        kind = names.get(name)
    except UnknownNameError as exc:
        raise InputError(f"{where}: {exc}") from None
    allowed, needs_k = kind.params, kind.needs_k
    params: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in allowed:
            known = f" (it takes {', '.join(sorted(allowed))})" if allowed else " (it takes none)"
            raise InputError(f"{where}: reducer {name} has no parameter {part!r}{known}")
        if key.strip() in params:
            raise InputError(f"{where}: reducer {name}: {key.strip()} is given twice")
        params[key.strip()] = value.strip()
    k = None
    if "k" in params:
        try:
            k = int(params["k"])
        except ValueError:
            raise InputError(f"{where}: reducer {name}: k must be a whole number, not {params['k']!r}") from None
        if k < 1:
            raise InputError(f"{where}: reducer {name}: k must be at least 1")
    elif needs_k:
        raise InputError(f"{where}: reducer {name} needs k (e.g. {name}:k=2)")
    try:
        value = float(params.get("value", 1.0))
    except ValueError:
        raise InputError(f"{where}: reducer {name}: value must be a number, not {params['value']!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: reducer {name}: value must be a finite number, not {params['value']!r}")
    return Reducer(name, k, value, written=text.strip(), kind=kind)


def to_float(raw: float | str | bool) -> float:
    """A trial's value as a number, as inspect_ai's ``value_to_float()`` reads it."""
    if raw == "C":
        return 1.0
    if raw == "P":
        return 0.5
    if raw in ("I", "N"):
        return 0.0
    if isinstance(raw, (int, float, bool)):
        return float(raw)
    lowered = raw.lower()
    if lowered in ("yes", "true"):
        return 1.0
    if lowered in ("no", "false"):
        return 0.0
    try:
        number = float(lowered)
    except ValueError:
        return 0.0
    return number if math.isfinite(number) else 0.0


def reduce_trials(reducer: Reducer, trials: Sequence[Trial]) -> Reduced:
    scored = [t for t in trials if t.scored]
    if not scored:
        errors = [t.error for t in trials if t.error]
        first = errors[0] if errors else "no value"
        return Reduced(error=f"every epoch failed ({len(trials)}): {first}")
    dicts = [t for t in scored if isinstance(t.value, dict)]
    if dicts:
        return _reduce_dicts(reducer, trials, scored, dicts)
    reduced = _reduce_scalars(reducer, trials, scored)
    if isinstance(reduced.value, float) and math.isnan(reduced.value):
        shown = ", ".join(str(t.raw) for t in scored)
        return Reduced(error=f"{reducer.spec} of the epochs is not a number (NaN) from {shown}")
    return reduced


def _reduce_dicts(reducer: Reducer, trials: Sequence[Trial], scored: Sequence[Trial],
                  dicts: Sequence[Trial]) -> Reduced:
    """Key by key, as inspect_ai reduces dict-valued scores: the keys of the first dict, each
    key's scored values (``None`` is unscored) reduced alone; the result is a dict."""
    if len(dicts) != len(scored):
        return Reduced(error="cannot reduce epochs whose values mix dicts and plain values")
    keys = list(dicts[0].value)  # type: ignore[arg-type]
    for t in dicts[1:]:
        if set(t.value) != set(keys):  # type: ignore[arg-type]
            return Reduced(error=f"cannot reduce dict values with different keys: {sorted(keys)} vs "
                                 f"{sorted(t.value)}")  # type: ignore[arg-type]
    out: dict[str, Any] = {}
    for key in keys:
        per_key = [Trial(value=v) if isinstance(v, (int, float)) and not isinstance(v, bool) else Trial(label=str(v))
                   if isinstance(v, str) else Trial(value=float(v)) if isinstance(v, bool) else Trial()
                   for v in (t.value[key] for t in dicts)]  # type: ignore[index]
        kept = [t for t in per_key if t.scored and not (isinstance(t.value, float) and math.isnan(t.value))]
        if not kept:
            return Reduced(error=f"{reducer.spec}: no epoch scored key {key!r}")
        reduced = _reduce_scalars(reducer, per_key, kept)
        if reduced.error is not None:
            return Reduced(error=f"key {key!r}: {reduced.error}")
        value = reduced.value if reduced.value is not None else reduced.label
        if isinstance(value, float) and math.isnan(value):
            return Reduced(error=f"{reducer.spec} of key {key!r} over the epochs is not a number (NaN)")
        out[key] = value
    return Reduced(value=out, passed=_shared(scored, "passed"))


def _reduce_scalars(reducer: Reducer, trials: Sequence[Trial], scored: Sequence[Trial]) -> Reduced:
    kind = reducer.kind or BUILTIN_KINDS[reducer.name]
    reduced = kind.reduce(scored, reducer, len(trials))
    return reduced if isinstance(reduced, Reduced) else Reduced(value=float(reduced))


def _mean(scored: Sequence[Trial], reducer: Reducer, epochs: int) -> Reduced:
    import statistics  # here, not at the top: the registry loads this module at every start-up

    return Reduced(value=float(statistics.mean([t.number for t in scored])), label=_shared(scored, "label"),
                   passed=_shared(scored, "passed"))


def _median(scored: Sequence[Trial], reducer: Reducer, epochs: int) -> Reduced:
    import statistics

    return Reduced(value=float(statistics.median([t.number for t in scored])), label=_shared(scored, "label"),
                   passed=_shared(scored, "passed"))


def _mode(scored: Sequence[Trial], reducer: Reducer, epochs: int) -> Reduced:
    winner = Counter(t.raw for t in scored).most_common(1)[0][0]
    alike = [t for t in scored if t.raw == winner]
    if isinstance(winner, str):
        return Reduced(label=winner, passed=_shared(alike, "passed"))
    return Reduced(value=float(winner), label=_shared(alike, "label"), passed=_shared(alike, "passed"))


def _max(scored: Sequence[Trial], reducer: Reducer, epochs: int) -> Reduced:
    chosen = max(scored, key=lambda t: t.number)
    return Reduced(value=chosen.value, label=chosen.label, passed=chosen.passed)


def _min(scored: Sequence[Trial], reducer: Reducer, epochs: int) -> Reduced:
    chosen = min(scored, key=lambda t: t.number)
    return Reduced(value=chosen.value, label=chosen.label, passed=chosen.passed)


def _correct(scored: Sequence[Trial], reducer: Reducer) -> int:
    return sum(1 for t in scored if t.number >= reducer.value)


def _at_least_k(scored: Sequence[Trial], reducer: Reducer, epochs: int) -> Reduced:
    reached = _correct(scored, reducer) >= (reducer.k or 1)
    return Reduced(value=1.0 if reached else 0.0, passed=reached)


def _pass_at_k(scored: Sequence[Trial], reducer: Reducer, epochs: int) -> Reduced:
    k, total = reducer.k or 1, len(scored)
    if total < k:
        return Reduced(error=f"pass_at_k: only {total} of {epochs} epochs were scored, fewer than k={k}")
    return Reduced(value=pass_at_k(total, _correct(scored, reducer), k))


#: the core's reducers, registered through ``register_reducers`` as a plugin's are
#: (``evalyard.builtins.reducers``); in the order they are listed
BUILTIN_KINDS: dict[str, ReducerKind] = {kind.name: kind for kind in (
    ReducerKind("mean", _mean),
    ReducerKind("median", _median),
    ReducerKind("mode", _mode),
    ReducerKind("max", _max),
    ReducerKind("min", _min),
    ReducerKind("pass_at_k", _pass_at_k, PARAMETERS, needs_k=True),
    ReducerKind("at_least_k", _at_least_k, PARAMETERS, needs_k=True),
)}


class _Builtins:
    """The built-in reducers alone, for ``parse_reducer`` without a registry (pure uses, tests)."""

    def get(self, name: str) -> ReducerKind:
        if name not in BUILTIN_KINDS:
            raise UnknownNameError(f"unknown reducer {name!r} (known: {self.known()})")
        return BUILTIN_KINDS[name]

    def known(self) -> str:
        return ", ".join(BUILTIN_KINDS)


BUILTINS: ReducerNames = _Builtins()


def pass_at_k(total: int, correct: int, k: int) -> float:
    """1 - C(total - correct, k) / C(total, k), as a product (no large binomials), in numpy's
    order of multiplication so the last digit is the reference's too."""
    import numpy as np

    if total - correct < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(total - correct + 1, total + 1)))


def _shared(trials: Sequence[Trial], field: str) -> Any:
    """The trials' common ``label`` or ``passed``; None when they differ."""
    seen = {getattr(t, field) for t in trials}
    return seen.pop() if len(seen) == 1 else None


def stability(cases: Iterable[Sequence[Trial]]) -> dict[str, Any]:
    """Trial-to-trial stability of one scorer over cases with at least two scored trials: the
    share whose verdict (pass/fail where there is one, else the label, else the value) differs
    across epochs, and the pooled within-case standard deviation of the values (the square root
    of the mean of each case's sample variance)."""
    import statistics

    compared = unstable = 0
    variances: list[float] = []
    for trials in cases:
        scored = [t for t in trials if t.scored]
        if len(scored) < 2:
            continue
        compared += 1
        unstable += verdict_changed(scored)
        numbers = [to_float(t.raw) for t in scored]
        variances.append(statistics.variance(numbers))
    return {
        "cases": compared,
        "unstable": unstable,
        "unstable_share": unstable / compared if compared else None,
        "within_case_sd": math.sqrt(statistics.mean(variances)) if variances else None,
    }


def verdict_changed(trials: Sequence[Trial]) -> bool:
    """Whether a case's verdict (pass/fail where there is one, else the label, else the value)
    differs across its scored trials: the unstable cases ``stability`` counts."""
    return len({t.passed if t.passed is not None else t.raw for t in trials if t.scored}) > 1
