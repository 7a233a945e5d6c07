"""``evalyard compare BASE NEW``: per-scorer deltas with paired confidence intervals."""

from __future__ import annotations

import sys

import click

from .options import CLIError, current_app, db_option, echo_json, fmt, json_option, table


@click.command()
@click.argument("base")
@click.argument("new")
@click.option("--top", default=5, show_default=True, type=click.IntRange(0), help="Regressed cases to list per scorer.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a scorer's 95% interval of the mean delta lies wholly on the worse side of zero.")
@click.option("--strict", is_flag=True,
              help="Refuse (exit 2) to compare scorers whose fingerprints (version, config, model, prompt) differ.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write JUnit XML for CI: one test case per case x scorer, plus each scorer's regression check.")
@click.option("--judge", metavar="SCORER", help="Also judge NEW's responses against BASE's with this pairwise judge "
              "(e.g. pairwise), in both orders: win rate, length-controlled win rate, position consistency. The "
              "judgements are stored as a run of their own, cached and resumable.")
@click.option("--judge-model", metavar="MODEL", envvar="EVALYARD_JUDGE_MODEL",
              help="Model for --judge (default: $EVALYARD_JUDGE_MODEL, or a plugin's default judge).")
@click.option("--concurrency", "-j", default=4, show_default=True, type=click.IntRange(1, 1024),
              help="Model requests in flight for --judge.")
@click.option("--cluster", metavar="metadata.FIELD", help="Cases sharing this metadata value (of NEW's cases) are one "
              "cluster: cluster-robust interval, test and detectable difference beside the naive ones; "
              "--fail-on-regression then follows the clustered interval.")
@click.option("--format", "output_format", type=click.Choice(["table", "json", "markdown"]), default="table",
              show_default=True, help="table for a terminal, json (as --json), or markdown for GitHub's job summary "
              "and a pull-request comment (cut with a note past a comment's 65,536 characters).")
@json_option
@db_option
def compare(base, new, top, fail_on_regression, strict, junit_path, judge, judge_model, concurrency, cluster,
            output_format, as_json, db_url):
    """Compare run NEW against run BASE, case by case (runs by id, id prefix, run name or suite name: its newest run).

    Per scorer: the mean delta with its 95% paired bootstrap interval, a paired t test's p-value
    (Holm-adjusted beside it when several scorers are compared) and the smallest difference the
    comparison could detect at 80% power."""
    if as_json and output_format not in ("table", "json"):
        raise CLIError(f"--json and --format {output_format}: choose one")
    as_json = as_json or output_format == "json"
    result = current_app().compare(base, new, db=db_url, top=top, cluster=cluster)
    if judge:
        from ..figures.comparisons import pairwise_stats
        from ..services import pairwise_run

        app = current_app()
        run_id = pairwise_run(app, result["base"], result["new"], judge=judge, judge_model=judge_model, db=db_url,
                              concurrency=concurrency)
        result["pairwise"] = pairwise_stats(app.open_store(db_url), run_id)
    from ..reviewing import human_verdict

    human = human_verdict(current_app().open_store(db_url), result["base"], result["new"])
    if human:  # people reviewed this pair blind (`evalyard review`): their verdict beside the judge's
        result["human"] = human
    for change in result["fingerprint_changes"]:
        what = ", ".join(change["differs_in"]) or "its fingerprint"
        verb = "refusing to compare" if strict else "compared anyway"
        click.echo(f"{'Error' if strict else 'WARNING'}: scorer {change['scorer']!r} differs between the runs "
                   f"in {what} ({verb})", err=True)
    if strict and result["fingerprint_changes"]:
        sys.exit(2)
    regressed = [name for name, s in result["scorers"].items() if s["regressed"]]
    if junit_path:
        from ..junit import write_junit

        write_junit(current_app().open_store(db_url), result["new"], junit_path, compare_with=result["base"],
                    cluster=cluster)
    if as_json:
        echo_json(result)
    elif output_format == "markdown":
        from ..markdown import comparison_markdown

        click.echo(comparison_markdown(result), nl=False)
    else:
        click.echo(f"base {result['base']}  ->  new {result['new']}")
        click.echo(comparison_table(result))
        for line in test_notes(result):
            click.echo(line)
        for name, s in result["scorers"].items():
            if s["worst_cases"]:
                click.echo(f"\n{name}: most regressed cases")
                click.echo(table(["case", "base", "new", "delta"],
                                 [[w["case_id"], fmt(w["base"]), fmt(w["new"]), fmt(w["delta"])] for w in s["worst_cases"]]))
        for name, s in result["scorers"].items():
            for metric, values in s["aggregate"].items():
                delta = values["delta"]
                click.echo(f"{name} aggregate {metric}: {fmt(values['base'])} -> {fmt(values['new'])}"
                           + (f" ({'+' if delta >= 0 else ''}{fmt(delta)})" if delta is not None else ""))
        for key, label in (("only_in_base", "only in base"), ("only_in_new", "only in new")):
            if result[key]:
                click.echo(f"{label}: {', '.join(result[key])}")
        if result.get("pairwise") or human:
            click.echo("")
        if result.get("pairwise"):
            from ..analysis.pairwise import pairwise_lines

            for line in pairwise_lines(result["pairwise"]):
                click.echo(line)
        if human:
            from ..reviewing import human_line

            click.echo(human_line(human))
    if fail_on_regression and regressed:
        click.echo(f"FAILED: regression in {', '.join(regressed)}", err=True)
        sys.exit(1)


def _interval(ci) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "-"


def _p(value) -> str:
    return "-" if value is None else ("<0.001" if value < 0.001 else f"{value:.3f}")


def comparison_table(result: dict) -> str:
    """One row per scorer: means, delta, interval(s), p-value(s), wins/losses/ties, verdict. With
    --cluster the clustered interval and p stand beside the naive ones."""
    clustered = bool(result.get("cluster"))
    several = result.get("tests", 0) > 1
    head = ["scorer", "pairs", "base", "new", "delta", "95% CI" + (" naive" if clustered else "")]
    head += ["95% CI clustered", "clusters"] if clustered else []
    head += (["p naive", "p clustered"] if clustered else ["p"]) + (["p Holm"] if several else []) + ["win/loss/tie", ""]
    rows = []
    for name, s in result["scorers"].items():
        row = [name, s["paired_cases"], fmt(s["base_mean"]), fmt(s["new_mean"]),
               ("+" if (s["mean_delta"] or 0) >= 0 else "") + fmt(s["mean_delta"]), _interval(s["ci95"])]
        if clustered:
            c = s.get("clustered") or {}
            row += [_interval(c.get("ci95")), c.get("clusters", "-")]
        if clustered:
            row.append(_p((s.get("naive_test") or {}).get("p")))
        row.append(_p((s.get("test") or {}).get("p")))
        if several:
            row.append(_p(s.get("p_holm")))
        rows.append(row + [f"{s['wins']}/{s['losses']}/{s['ties']}", "REGRESSED" if s["regressed"] else ""])
    return table(head, rows)


def test_notes(result: dict) -> list[str]:
    """How the p-values were made, a note when several scorers were tested, and each scorer's
    minimum detectable difference."""
    lines = []
    kind = "clustered paired t test (G - 1 df)" if result.get("cluster") else "paired t test (n - 1 df)"
    lines.append(f"p: two-sided {kind} of the mean delta against 0")
    if result.get("tests", 0) > 1:
        lines.append(f"{result['tests']} scorers were compared: at alpha 0.05 one of them may look different by "
                     f"chance; read 'p Holm' (Holm's adjustment for {result['tests']} tests), not p")
    for name, s in result["scorers"].items():
        d = s.get("detectable")
        if d:
            size = f"n={d['n']}" + (f" in {d['clusters']} clusters" if d.get("clusters") else "")
            naive = s.get("naive_detectable")
            beside = f" ({naive['difference']:.3f} if the cases were independent)" if naive else ""
            lines.append(f"{name}: with {size} and this variance, differences below {d['difference']:.3f}{beside} "
                         "are not detectable at 80% power (two-sided alpha 0.05)")
    return lines


def register(cli: click.Group) -> None:
    cli.add_command(compare)
