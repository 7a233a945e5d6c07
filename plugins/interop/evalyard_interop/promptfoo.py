"""promptfoo's results file (``promptfoo eval -o results.json``) as evalyard cases.

One case per result row, that is per test x prompt x provider, so a team can score promptfoo's
outputs again with evalyard's scorers:

- ``id``: ``t<testIdx>-p<promptIdx>`` (promptfoo's own test and prompt/provider column numbers, so
  two promptfoo runs of one config pair up in ``evalyard compare``); a row repeated under the
  same numbers (``--repeat``) gets ``#2``, ``#3``...
- ``input``: the prompt as promptfoo rendered and sent it (``prompt.raw``).
- ``candidate``: the provider's output (``response.output``; structured output as JSON text).
  A row whose provider call failed has none: evalyard says so before scoring, and
  ``--model``/``--generator`` can fill it.
- ``reference``: the expected value of the test's first ``equals`` assertion, as promptfoo
  rendered it; none when the test has no such assertion.
- ``metadata``: the test's own metadata, ``vars`` (the test variables) and ``promptfoo``: the
  provider, promptfoo's verdict (``pass``, ``score``, ``named_scores``, ``reason``), the provider
  error, latency, cost, token usage and the eval and result ids.

``--field CASE_FIELD=VAR`` takes a case field from a test variable instead
(``--field reference=expected``, ``--field input=question``).

The file's format is chosen by name only (``--format promptfoo``, a suite's ``format:``): promptfoo
writes ``.json`` (or ``.jsonl``, one row a line, for ``-o results.jsonl``), which stay evalyard's
own formats whatever their content.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from evalyard import Case, InputError, check_unique_ids, parse_case_json, read_case_file

from .records import array_item_lines, as_text, override_fields, source_field_map

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")


def load_promptfoo(path: str | Path, field_map: dict[str, str] | None = None) -> tuple[list[Case], list[str]]:
    path = str(path)
    field_map = source_field_map(field_map, path, "the test's vars")
    text = read_case_file(path)
    if path.lower().endswith(".jsonl"):  # `-o results.jsonl`: one row a line, no eval header
        numbered = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
        rows = [parse_case_json(line, path, n) for n, line in numbered]
        lines = [n for n, _ in numbered]
        eval_id = None
    else:
        data = parse_case_json(text, path, None)
        rows, where = _rows(data, path)
        lines = array_item_lines(text, where)
        if lines is None or len(lines) != len(rows):
            lines = [1] * len(rows)
        eval_id = data.get("evalId") if isinstance(data, dict) else None
    built = [(_case(row, path=path, line=line, field_map=field_map, eval_id=eval_id), f"{path}:{line}")
             for row, line in zip(rows, lines)]
    # promptfoo writes rows in the order its concurrent calls finished: sorted by test and prompt
    # column, the same config gives the same suite every time.
    built.sort(key=lambda entry: (entry[0].metadata["promptfoo"]["test_index"],
                                  entry[0].metadata["promptfoo"]["prompt_index"]))
    repeats: Counter[str] = Counter()
    for case, _ in built:
        repeats[case.id] += 1
        if repeats[case.id] > 1 and "id" not in field_map:
            case.id = f"{case.id}#{repeats[case.id]}"
    cases, origins = [case for case, _ in built], [origin for _, origin in built]
    check_unique_ids(cases, origins)
    return cases, origins


def _rows(data: Any, path: str) -> tuple[list[Any], tuple[str, ...]]:
    """The result rows and where they sit: ``results.results`` since promptfoo's version-2 output,
    a top-level ``results`` list before that."""
    if isinstance(data, dict):
        results = data.get("results")
        if isinstance(results, dict) and isinstance(results.get("results"), list):
            return results["results"], ("results", "results")
        if isinstance(results, list):
            return results, ("results",)
    raise InputError("expected promptfoo's results: an object whose 'results' holds a 'results' list, as "
                     "`promptfoo eval -o results.json` writes it", path=path, line=1, field="results")


def _object(value: Any, *, path: str, line: int, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"expected an object, got {type(value).__name__}", path=path, line=line, field=field)
    return value


def _index(row: dict[str, Any], key: str, *, path: str, line: int) -> int:
    value = row.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(f"expected promptfoo's {key} (a number from 0), got {value!r:.40}", path=path, line=line,
                         field=key)
    return value


def _case(row: Any, *, path: str, line: int, field_map: dict[str, str], eval_id: Any) -> Case:
    if not isinstance(row, dict):
        raise InputError(f"expected a result object, got {type(row).__name__}", path=path, line=line)
    test_idx = _index(row, "testIdx", path=path, line=line)
    prompt_idx = _index(row, "promptIdx", path=path, line=line)
    prompt = _object(row.get("prompt"), path=path, line=line, field="prompt")
    if not isinstance(prompt.get("raw"), str):
        raise InputError("expected the prompt promptfoo sent, as text", path=path, line=line, field="prompt.raw")
    test = _object(row.get("testCase"), path=path, line=line, field="testCase")
    variables = _object(row.get("vars", test.get("vars")), path=path, line=line, field="vars")
    response = _object(row.get("response"), path=path, line=line, field="response")
    grading = _object(row.get("gradingResult"), path=path, line=line, field="gradingResult")
    provider = _object(row.get("provider"), path=path, line=line, field="provider") if not isinstance(
        row.get("provider"), str) else {"id": row["provider"]}

    fields = {
        "id": f"t{test_idx}-p{prompt_idx}",
        "input": prompt["raw"],
        "candidate": as_text(response.get("output")),
        "reference": _expected(grading, test, variables),
    }
    context = override_fields(fields, variables, field_map, path=path, line=line, prefix="vars")

    error = response.get("error") or (row.get("error") if row.get("failureReason") == 2 else None)
    verdict = {
        "eval_id": eval_id,
        "result_id": row.get("id"),
        "test_index": test_idx,
        "prompt_index": prompt_idx,
        "provider": provider.get("label") or provider.get("id"),
        "provider_id": provider.get("id"),
        "prompt_label": prompt.get("label"),
        "description": test.get("description"),
        "pass": row.get("success"),
        "score": row.get("score"),
        "named_scores": row.get("namedScores") or {},
        "reason": grading.get("reason"),
        "error": as_text(error),
        "latency_ms": row.get("latencyMs"),
        "cost": row.get("cost"),
        "tokens": response.get("tokenUsage"),
    }
    metadata = {k: v for k, v in _object(test.get("metadata"), path=path, line=line, field="testCase.metadata").items()
                if not k.startswith("_")}  # promptfoo's own bookkeeping (_promptfooFileMetadata)
    metadata.update(vars=variables, promptfoo={k: v for k, v in verdict.items() if v is not None})
    return Case(id=fields["id"], input=fields["input"], candidate=fields["candidate"], reference=fields["reference"],
                context=context, metadata=metadata)


def _expected(grading: dict[str, Any], test: dict[str, Any], variables: dict[str, Any]) -> str | None:
    """The test's expected output: its first ``equals`` assertion's value, rendered as promptfoo
    rendered it when the row was graded, else with the test's variables when the value is a single
    ``{{ var }}``. Other templates are not guessed at: no reference then."""
    for component in grading.get("componentResults") or []:
        assertion = component.get("assertion") if isinstance(component, dict) else None
        if isinstance(assertion, dict) and assertion.get("type") == "equals":
            rendered = (component.get("metadata") or {}).get("renderedAssertionValue")
            return as_text(rendered) if rendered is not None else _render(assertion.get("value"), variables)
    for assertion in test.get("assert") or []:
        if isinstance(assertion, dict) and assertion.get("type") == "equals":
            return _render(assertion.get("value"), variables)
    return None


def _render(value: Any, variables: dict[str, Any]) -> str | None:
    if not isinstance(value, str):
        return as_text(value)
    whole = _VARIABLE.fullmatch(value.strip())
    if whole:
        return as_text(variables.get(whole.group(1)))
    return None if "{{" in value or "{%" in value else value
