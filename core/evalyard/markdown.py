"""Markdown for where a team reviews its changes: a run's summary, and ``compare BASE NEW`` with
paired differences, intervals, Holm-adjusted p-values and regressions flagged, for GitHub's job
summary (``$GITHUB_STEP_SUMMARY``) and a pull-request comment.

A comment holds at most 65,536 characters (GitHub refuses a longer body), so the text is built
in sections, most important first (the verdict and the table, then the notes, then the worst
cases), and cut at a line between sections when it would pass ``LIMIT``, with a note saying so.
``LIMIT`` leaves room for the hidden marker a posting script adds to find its comment again.

Text that comes from the data (scorer names, case ids, run names) is escaped: a case id cannot
break the table, open an HTML element, or forge the marker of another comment.
"""

from __future__ import annotations

import html
from typing import Any, Iterable

#: GitHub's limit on a comment's body, less room for a marker line.
GITHUB_COMMENT_LIMIT = 65_536
LIMIT = GITHUB_COMMENT_LIMIT - 512


def escape(value: Any) -> str:
    """One table cell or inline text: HTML entities, pipes and Markdown's markup characters escaped,
    line breaks as spaces."""
    text = html.escape(str(value), quote=False)
    for char in "\\|`*_[]#":
        text = text.replace(char, "\\" + char)
    return " ".join(text.split())


def code(value: Any) -> str:
    """Text for inside a code span, where escapes would show: without backticks and line breaks."""
    return " ".join(str(value).replace("`", "'").split())


def number(value: Any, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def interval(ci: Any) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "–"


def p_value(value: Any) -> str:
    return "–" if value is None else ("<0.001" if value < 0.001 else f"{value:.3f}")


def table(head: list[str], rows: Iterable[list[Any]], right: int = 1) -> list[str]:
    """A GitHub table; columns from ``right`` on aligned right (numbers)."""
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i < right else "---:" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def fit(sections: list[list[str]], limit: int, command: str) -> str:
    """The sections joined, whole sections kept while they fit, then a note naming ``command`` (what
    shows everything); a first section too long by itself is cut at a line. An open ``<details>``
    is closed."""
    full = "\n\n".join("\n".join(section) for section in sections if section) + "\n"
    if len(full) <= limit:
        return full
    kept: list[str] = []
    room = limit - len(command) - 200  # the note, and a closing </details>
    for section in sections:
        text = "\n".join(section)
        used = sum(len(k) + 2 for k in kept)
        if used + len(text) <= room:
            kept.append(text)
            continue
        if not kept:  # the head alone is too long (thousands of scorers): keep its first lines
            lines, size = [], 0
            for line in section:
                if size + len(line) + 1 > room:
                    break
                lines.append(line)
                size += len(line) + 1
            kept.append("\n".join(lines))
        break
    text = "\n\n".join(kept)
    if text.count("<details>") > text.count("</details>"):
        text += "\n</details>"
    return (f"{text}\n\n*Truncated to fit a GitHub comment: {len(text):,} of {len(full):,} characters shown; "
            f"all of it: `{command}`.*\n")


def _verdict(result: dict[str, Any]) -> list[str]:
    regressed = [name for name, s in result["scorers"].items() if s["regressed"]]
    head = f"## evalyard: run {escape(result['new'])} (NEW) against {escape(result['base'])} (BASE)"
    if regressed:
        names = ", ".join(f"**{escape(n)}**" for n in regressed)
        return [head, "", f"❌ **Regression** in {names}: the whole 95% interval of the paired difference lies on "
                          f"the worse side of zero."]
    return [head, "", f"✅ **No regression** in {len(result['scorers'])} scorer"
                      f"{'s' if len(result['scorers']) != 1 else ''}: no 95% interval of a paired difference lies "
                      f"wholly on the worse side of zero."]


def _comparison_table(result: dict[str, Any]) -> list[str]:
    clustered = bool(result.get("cluster"))
    several = result.get("tests", 0) > 1
    head = ["scorer", "pairs", "base", "new", "delta", "95% CI" + (" (clustered)" if clustered else ""), "p"]
    head += ["p (Holm)"] if several else []
    head += ["win / loss / tie", ""]
    rows = []
    for name, s in result["scorers"].items():
        ci = (s.get("clustered") or {}).get("ci95") if clustered else s["ci95"]
        row = [escape(name), s["paired_cases"], number(s["base_mean"]), number(s["new_mean"]),
               number(s["mean_delta"], sign=True), interval(ci), p_value((s.get("test") or {}).get("p"))]
        row += [p_value(s.get("p_holm"))] if several else []
        row += [f"{s['wins']} / {s['losses']} / {s['ties']}", "❌ regressed" if s["regressed"] else ""]
        rows.append(row)
    return table(head, rows)


def _notes(result: dict[str, Any]) -> list[str]:
    kind = "clustered paired t test (G − 1 df)" if result.get("cluster") else "paired t test (n − 1 df)"
    lines = [f"- delta is NEW − BASE; p: two-sided {kind} of the mean delta against 0."]
    if result.get("tests", 0) > 1:
        lines.append(f"- {result['tests']} scorers were tested: read *p (Holm)*, Holm's adjustment for "
                     f"{result['tests']} tests, not p.")
    for name, s in result["scorers"].items():
        d = s.get("detectable")
        if d:
            lines.append(f"- {escape(name)}: differences below {d['difference']:.3f} are not detectable at 80% "
                         f"power (n={d['n']}{', ' + str(d['clusters']) + ' clusters' if d.get('clusters') else ''}).")
    for change in result.get("fingerprint_changes", []):
        what = ", ".join(change["differs_in"]) or "its fingerprint"
        lines.append(f"- ⚠️ scorer {escape(change['scorer'])} differs between the runs in {escape(what)}: compared "
                     f"anyway.")
    for key, label in (("only_in_base", "only in BASE"), ("only_in_new", "only in NEW")):
        if result.get(key):
            lines.append(f"- {len(result[key])} case{'s' if len(result[key]) != 1 else ''} {label}, not compared.")
    return lines


def _pairwise(result: dict[str, Any]) -> list[str]:
    stats = result.get("pairwise")
    if not stats or stats.get("win_rate") is None:
        return []
    return [f"**Pairwise judge** {escape(stats['judge'])}: NEW wins {_rate(stats)} of {stats['cases']} cases "
            f"(wins {stats['wins']}, losses {stats['losses']}, ties or splits {stats['ties']}; ties count half)."]


def _rate(stats: dict[str, Any]) -> str:
    """A win rate in percent with its interval."""
    ci = stats.get("ci95")
    return f"{100 * stats['win_rate']:.1f}%" + (f" [{100 * ci[0]:.1f}%, {100 * ci[1]:.1f}%]" if ci else "")


def _human(result: dict[str, Any]) -> list[str]:
    found = result.get("human")
    if not found or found.get("win_rate") is None:
        return []
    return [f"**People (blind review)**: NEW wins {_rate(found)} of {found['reviews']} reviews of {found['cases']} cases by "
            f"{found['reviewers']} reviewer{'s' if found['reviewers'] != 1 else ''} (wins {found['wins']}, losses "
            f"{found['losses']}, ties {found['ties']}, both bad {found['both_bad']}; ties and both bad count half)."]


def _worst(result: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, s in result["scorers"].items():
        if not s.get("worst_cases"):
            continue
        lines += ["<details>", f"<summary>{escape(name)}: the cases that got worse, worst first</summary>", ""]
        lines += table(["case", "base", "new", "delta"],
                       [[escape(w["case_id"]), number(w["base"]), number(w["new"]), number(w["delta"], sign=True)]
                        for w in s["worst_cases"]])
        lines += ["", "</details>", ""]
    return lines[:-1]


def comparison_markdown(result: dict[str, Any], limit: int = LIMIT) -> str:
    """``compare``'s result (``Application.compare``, with ``pairwise`` when judged) as Markdown."""
    sections = [_verdict(result) + [""] + _comparison_table(result), _notes(result), _pairwise(result),
                _human(result), _worst(result)]
    return fit(sections, limit, f"evalyard compare {code(result['base'])} {code(result['new'])}")


def run_markdown(summary: dict[str, Any], limit: int = LIMIT) -> str:
    """A run's summary (``run_id``, ``name``, ``status``, ``suite`` {name, version, cases} and
    ``scorers``, each scorer's statistics as ``runs show`` has them) as Markdown."""
    suite = summary["suite"]
    head = [f"## evalyard run {escape(summary['run_id'])} ({escape(summary['name'])})", "",
            f"Suite **{escape(suite['name'])}** v{escape(suite['version'])}, {suite['cases']} cases, status "
            f"**{escape(summary['status'])}**.", ""]
    rows = []
    for name, s in summary["scorers"].items():
        ci = s.get("ci95")
        pass_rate = f"{100 * s['pass_rate']:.1f}%" if s.get("pass_rate") is not None else "–"
        rows.append([escape(name), s.get("scored", s.get("count")), s.get("errors", 0), number(s.get("mean")),
                     number(s.get("std")), f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "–", pass_rate])
    head += table(["scorer", "n", "errors", "mean", "std", "95% CI", "pass"], rows)
    labels = [f"- {escape(name)}: " + ", ".join(f"{escape(k)} {v}" for k, v in s["labels"].items())
              for name, s in summary["scorers"].items() if s.get("labels")]
    return fit([head, labels], limit, f"evalyard runs show {code(summary['run_id'])}")
