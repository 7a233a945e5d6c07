"""JUnit XML for CI viewers: one test case per case x scorer.

A missed threshold is a ``<failure>``, a scorer error an ``<error>``; a result without a
threshold passes (it is still listed, with its value). One ``<testsuite>`` per scorer, named
``SUITE.SCORER``, so CI viewers group results by scorer. The layout follows the common
Jenkins/Ant JUnit schema (tests/report/junit.xsd checks it).

For a comparison, each new result's test case also says how it moved against the base run,
and each scorer gets one more test case, ``(paired mean delta)``, that fails when the scorer
regressed (its 95% paired interval lies wholly on the worse side of zero).
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from datetime import timezone
from pathlib import Path
from typing import Any

REGRESSION_CASE = "(paired mean delta)"


def _number(value: Any) -> str:
    return "none" if value is None else f"{value:.6g}"


def _clean(text: str) -> str:
    """XML 1.0 forbids most control characters; a scorer's error text may hold any."""
    return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)


class _Suite:
    def __init__(self, name: str, timestamp: str) -> None:
        self.element = ET.Element("testsuite", name=name, timestamp=timestamp, hostname=socket.gethostname() or "localhost")
        self.properties = ET.SubElement(self.element, "properties")
        self.tests = self.failures = self.errors = 0
        self.time = 0.0

    def prop(self, name: str, value: Any) -> None:
        ET.SubElement(self.properties, "property", name=name, value=_clean(str(value)))

    def case(self, name: str, classname: str, seconds: float, *, failure: str | None = None,
             error: tuple[str, str] | None = None, out: str = "") -> None:
        element = ET.SubElement(self.element, "testcase", name=name, classname=classname, time=f"{seconds:.6f}")
        self.tests += 1
        self.time += seconds
        if error is not None:
            self.errors += 1
            first = error[1].strip().splitlines()[0] if error[1].strip() else error[0]
            node = ET.SubElement(element, "error", message=_clean(first)[:500], type=error[0])
            node.text = _clean(error[1])
        elif failure is not None:
            self.failures += 1
            node = ET.SubElement(element, "failure", message=_clean(failure), type="threshold")
            node.text = _clean(failure)
        if out:
            ET.SubElement(element, "system-out").text = _clean(out)

    def finish(self) -> ET.Element:
        if not len(self.properties):
            self.element.remove(self.properties)
        self.element.set("tests", str(self.tests))
        self.element.set("failures", str(self.failures))
        self.element.set("errors", str(self.errors))
        self.element.set("skipped", "0")
        self.element.set("time", f"{self.time:.6f}")
        return self.element


def _result_case(suite: _Suite, classname: str, spec: dict[str, Any], row, extra: str = "") -> None:
    seconds = (row.duration_ms or 0.0) / 1000
    text = f"value {_number(row.value)}" + (f", label {row.label}" if row.label is not None else "")
    threshold = spec.get("threshold")
    if threshold is not None:
        text += f", threshold {_number(threshold)} ({'higher' if spec.get('higher_is_better', True) else 'lower'} is better)"
    text += extra
    if row.error is not None:
        suite.case(row.case_id, classname, seconds, error=("ScorerError", row.error), out=text)
    elif row.passed is False:
        suite.case(row.case_id, classname, seconds, failure=f"{spec['name']} missed its threshold: {text}", out=text)
    else:
        suite.case(row.case_id, classname, seconds, out=text)


def run_junit(store, run_ref: str, *, compare_with: str | None = None, cluster: str | None = None) -> ET.ElementTree:
    """The JUnit tree for a run (and, with ``compare_with``, its comparison against that base run;
    with ``cluster``, the regression check follows the clustered interval, as ``compare`` does)."""
    run = store.get_run(run_ref)
    suite_row = store.suite_of(run)
    timestamp = (run.created_at.astimezone(timezone.utc) if run.created_at.tzinfo else run.created_at).strftime("%Y-%m-%dT%H:%M:%S")
    comparison = None
    base_values: dict[str, dict[str, float | None]] = {}
    if compare_with:
        from .figures.comparisons import compare_runs

        base = store.get_run(compare_with)
        comparison = compare_runs(store, base.id, run.id, top=0, cluster=cluster)
        for name in comparison["scorers"]:
            base_values[name] = {r.case_id: r.value for r in store.results(base.id, name) if r.error is None}
    order = store.case_order(run)
    root = ET.Element("testsuites", name=f"evalyard {suite_row.name}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
    for spec in run.scorers or []:
        name = spec["name"]
        classname = f"{suite_row.name}.{name}"
        suite = _Suite(classname, timestamp)
        suite.prop("run", run.id)
        suite.prop("suite_version", suite_row.version)
        for key in ("plugin", "version", "fingerprint", "threshold"):
            if spec.get(key) is not None:
                suite.prop(key, spec[key])
        rows = sorted(store.results(run.id, name), key=lambda r: order.get(r.case_id, len(order)))
        before = base_values.get(name)
        for row in rows:
            extra = ""
            if before is not None and row.case_id in before and before[row.case_id] is not None and row.value is not None:
                extra = f"; base {_number(before[row.case_id])}, delta {row.value - before[row.case_id]:+.6g}"
            _result_case(suite, classname, spec, row, extra)
        if comparison is not None and name in comparison["scorers"]:
            s = comparison["scorers"][name]
            ci = s["ci95"]
            text = (f"mean {_number(s['base_mean'])} -> {_number(s['new_mean'])}, delta {_number(s['mean_delta'])}, "
                    f"95% CI {('[' + _number(ci[0]) + ', ' + _number(ci[1]) + ']') if ci else 'none'}, "
                    f"wins/losses/ties {s['wins']}/{s['losses']}/{s['ties']} over {s['paired_cases']} paired cases")
            if s.get("clustered"):
                c = s["clustered"]
                text += (f"; clustered by {c['field']} ({c['clusters']} clusters): 95% CI "
                         f"[{_number(c['ci95'][0])}, {_number(c['ci95'][1])}]")
            suite.prop("base_run", comparison["base"])
            suite.case(REGRESSION_CASE, classname, 0.0,
                       failure=f"{name} regressed: {text}" if s["regressed"] else None, out=text)
        element = suite.finish()
        root.append(element)
        for key in ("tests", "failures", "errors"):
            totals[key] += int(element.get(key))
        totals["time"] += suite.time
    for key in ("tests", "failures", "errors"):
        root.set(key, str(totals[key]))
    root.set("time", f"{totals['time']:.6f}")
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(store, run_ref: str, path: str | Path, *, compare_with: str | None = None,
                cluster: str | None = None) -> Path:
    """Write the JUnit file for a run (or a comparison) to ``path``; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    run_junit(store, run_ref, compare_with=compare_with, cluster=cluster).write(target, encoding="utf-8", xml_declaration=True)
    return target
