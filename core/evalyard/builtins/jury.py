"""``jury``: several judges pooled into one verdict ("Replacing Judges with Juries", Verga et al.
2024). The members are any scorers (judges of other models or templates, a cheap scorer beside
them), each asked about the case as it would be alone, through the same runtime (cache, limits,
plan), so a member that already scored the case in the run costs nothing.

- ``majority``: the most common member value; a tie goes to the value of the earliest member
  among the tied (inspect_ai's ``multi_scorer`` with its ``mode`` reducer: ``Counter.most_common``);
- ``mean``: the mean of the member values;
- ``weighted``: the weighted mean, each member weighted by how well it agrees with people: its
  saved calibration's Cohen's kappa (``evalyard calibrate ... --save``), a kappa at or below 0
  (no better than chance) weighing nothing; or by ``weights`` given explicitly.

A member that fails is left out, as inspect leaves out a scorer that declines; the jury is an
error only when every member failed (or, weighted, when the members that answered weigh 0).
``details`` holds each member's value, label and error, the weights, and the agreement of the
members on the case.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from ..scoring import Case, Score, Scorer

if TYPE_CHECKING:
    from ..runtime import Runtime

MODES = ("majority", "mean", "weighted")


def majority(values: list[float]) -> float:
    """inspect_ai's mode: the most common value, the first seen among equally common ones."""
    return Counter(values).most_common(1)[0][0]


def weighted_mean(values: list[float], weights: list[float]) -> float | None:
    total = sum(weights)
    return None if total <= 0 else sum(v * w for v, w in zip(values, weights)) / total


def member_specs(judges: Any) -> list[tuple[str, dict[str, Any]]]:
    """``judges`` as (name, config) pairs: each a ``NAME[:key=value,...]`` text or ``{name:, config:}``
    (on the command line the members are separated by ``|``, as every list option is)."""
    out = []
    for judge in judges or []:
        if isinstance(judge, dict):
            name, config = judge.get("name"), dict(judge.get("config") or {})
        else:  # the --scorer syntax, read by the one parser of it
            from ..errors import InputError
            from ..suite_files import parse_scorer_option

            try:
                spec = parse_scorer_option(str(judge), option="judge")
            except InputError as exc:
                raise ConfigError(str(exc)) from None
            name, config = spec.name, spec.config
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"judge {judge!r}: expected a scorer name")
        out.append((name.strip(), config))
    return out


class Jury(Scorer):
    name = "jury"
    description = ("Several judges pooled: majority (inspect_ai's mode), mean, or a mean weighted by each judge's "
                   "measured agreement with people.")
    requires = ()
    executor = "async"

    @dataclass
    class Config:
        judges: list[Any] = field(default_factory=list, metadata={
            "help": "the member scorers, NAME[:key=value,...] each (on the command line: separated by '|')"})
        mode: Literal["majority", "mean", "weighted"] = field(default="majority", metadata={
            "help": "majority (the most common value), mean, or weighted (by each member's agreement with people)"})
        weights: dict[str, float] = field(default_factory=dict, metadata={
            "help": "weighted: each member's weight by its text in judges (default: its saved calibration's kappa)"})

        def __post_init__(self) -> None:
            specs = member_specs(self.judges)
            if len(specs) < 2:
                raise ValueError("a jury needs at least two judges (judges: [NAME, NAME, ...])")
            self.judges = [j if isinstance(j, str) else dict(j) for j in self.judges if j]
            names = [self._label(j) for j in self.judges]
            if len(set(names)) != len(names):
                raise ValueError("a judge is listed twice")
            unknown = sorted(set(self.weights) - set(names))
            if unknown:
                raise ValueError(f"weights name {unknown[0]!r}, which is not one of the judges")
            if any(float(w) < 0 for w in self.weights.values()):
                raise ValueError("a weight is 0 or more")
            if self.weights and self.mode != "weighted":
                raise ValueError("weights are for mode: weighted")

        @staticmethod
        def _label(judge: Any) -> str:
            if isinstance(judge, dict):
                config = judge.get("config") or {}
                return judge.get("name", "") + (":" + ",".join(f"{k}={v}" for k, v in config.items()) if config else "")
            return str(judge).strip()

    def __init__(self, config: Any = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.members: list[tuple[str, Scorer, Any]] = []  # (label, scorer, registry entry)
        self._weights: list[float] | None = None
        self._store: Any = None

    def setup(self, runtime: Runtime) -> None:
        app = runtime.app
        if app is None:
            raise ConfigError("jury: its judges are found in the application's registry, and this runtime has none")
        for label, (name, config) in zip(map(self.Config._label, self.config.judges), member_specs(self.config.judges)):
            try:
                entry = app.registry.scorers.entry(name)
            except Exception as exc:
                raise ConfigError(f"jury: judge {label!r}: {exc}") from None
            if entry.obj is Jury:
                raise ConfigError("jury: a jury cannot sit on a jury")
            try:
                member = entry.obj(entry.obj.make_config(config))
            except ConfigError as exc:
                raise ConfigError(f"jury: judge {label!r}: {exc}") from None
            member.setup(runtime)
            self.members.append((label, member, entry))
        if self.config.mode == "weighted" and self.config.weights:
            self._weights = [float(self.config.weights.get(label, 0.0)) for label, _, _ in self.members]
        self._runtime = runtime

    def required_fields(self) -> tuple[str, ...]:
        fields: list[str] = []
        for _, member, _ in self.members:
            fields.extend(f for f in member.required_fields() if f not in fields)
        return tuple(fields)

    def fingerprint_data(self) -> dict[str, Any]:
        data = super().fingerprint_data()
        data["judges"] = {label: {"scorer": entry.qualified, **member.fingerprint_data()}
                          for label, member, entry in self.members}
        return data

    def planned_requests(self, case: Case) -> list[Any] | None:
        requests: list[Any] = []
        for _, member, _ in self.members:
            found = member.planned_requests(case)
            if found is None and member.executor == "async":
                return None  # a member that cannot say: neither can the jury
            requests.extend(found or [])
        return requests

    def calibrated_weights(self) -> list[float]:
        """Each member's saved calibration's Cohen's kappa (0 when at or below chance), looked up by
        the fingerprint a run of that member alone would record; ConfigError naming the first
        member without one."""
        from ..analysis.calibration import agreement
        from ..runner import PreparedScorer
        from ..suite import ScorerSpec

        store = getattr(self._runtime, "store", None)
        if store is None:
            raise ConfigError("jury: mode weighted without weights reads saved calibrations from the run's database")
        weights = []
        for label, member, entry in self.members:
            spec = PreparedScorer(ScorerSpec(name=entry.qualified), member, entry, member.executor).describe()
            row = store.calibration(spec["fingerprint"])
            kappa = (agreement(spec, row) or {}).get("kappa") if row is not None else None
            if kappa is None:
                raise ConfigError(f"jury: judge {label!r} has no saved calibration with a kappa to weigh it by "
                                  f"(evalyard calibrate DATA --scorer {entry.qualified} --save), or give weights")
            weights.append(max(0.0, float(kappa)))
        return weights

    async def ascore(self, case: Case) -> Score:
        if self.config.mode == "weighted" and self._weights is None:
            self._weights = self.calibrated_weights()
        scores = await asyncio.gather(*(member.ascore_batch([case]) for _, member, _ in self.members))
        members, values, weights = {}, [], []
        for n, ((label, member, _), (score,)) in enumerate(zip(self.members, scores)):
            members[label] = {"value": score.value, "label": score.label, "error": score.error}
            if score.error is None and score.value is not None:
                values.append(float(score.value))
                weights.append(self._weights[n] if self._weights is not None else 1.0)
        details: dict[str, Any] = {"mode": self.config.mode, "members": members, "answered": len(values)}
        if self._weights is not None:
            details["weights"] = {label: w for (label, _, _), w in zip(self.members, self._weights)}
        usage = _summed_usage(score for (score,) in scores)
        if not values:
            return Score(value=None, error="every judge of the jury failed", details=details, usage=usage)
        details["agreement"] = max(values.count(v) for v in values) / len(values)
        if self.config.mode == "majority":
            value = majority(values)
        elif self.config.mode == "mean":
            value = sum(values) / len(values)
        else:
            value = weighted_mean(values, weights)
            if value is None:
                return Score(value=None, error="the judges that answered weigh 0 together", details=details,
                             usage=usage)
        return Score(value=value, details=details, usage=usage)


def _summed_usage(scores) -> dict[str, Any] | None:
    from ..models.usage import Usage

    total, any_usage = Usage(), False
    for score in scores:
        if score.usage:
            total, any_usage = total + Usage.from_dict(score.usage), True
    return total.to_dict() if any_usage else None
