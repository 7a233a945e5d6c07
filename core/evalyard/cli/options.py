"""Option bundles shared by several commands."""

from __future__ import annotations

import json
from typing import Any

import click

from ..errors import printable

db_option = click.option(
    "--db", "db_url", envvar="EVALYARD_DB", metavar="URL",
    help="Database: any SQLAlchemy URL or a SQLite file path (default: evalyard.db in the data directory, "
         "EVALYARD_HOME overrides).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


class CLIError(click.ClickException):
    """Bad usage or bad input: one line on stderr, exit code 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        # whatever the message quotes (a file name, a key, a value from the input) may hold a line
        # break or another control character: escaped, the error stays one printable line
        super().__init__(printable(str(message)))


def current_app(ctx: click.Context | None = None):
    """The application of this invocation: the one passed as the context's ``obj``, or one
    made from the environment on first use."""
    root = (ctx or click.get_current_context()).find_root()
    if root.obj is None:
        from ..app import Application

        root.obj = Application()
    return root.obj


def open_store(db_url: str | None):
    return current_app().open_store(db_url)


def echo_json(data: Any, file: Any = None) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str), file=file)


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A plain aligned text table (no colour, so it reads the same in CI logs)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def stats_table(scorer_stats: dict[str, dict[str, Any]]) -> str:
    rows = []
    for name, s in scorer_stats.items():
        ci = s.get("ci95")
        ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"
        pass_rate = f"{100 * s['pass_rate']:.1f}%" if s.get("pass_rate") is not None else "-"
        labels = ", ".join(f"{k}={v}" for k, v in s.get("labels", {}).items()) or "-"
        rows.append([name, s["count"], s["errors"], fmt(s["mean"]), fmt(s["std"]), ci_text, pass_rate, labels])
    return table(["scorer", "n", "errors", "mean", "std", "95% CI", "pass", "labels"], rows)
