"""``evalyard review BASE NEW``: a blind side-by-side review of two runs in the browser;
``evalyard review EXPERIMENT``: of an experiment's cells in pairs; ``evalyard review --summary
SESSION`` and ``--ranking EXPERIMENT``: what the reviews say."""

from __future__ import annotations

import click

from .options import CLIError, db_option, echo_json, json_option, open_store


@click.command()
@click.argument("base", required=False)
@click.argument("new", required=False)
@click.option("--reviewer", metavar="NAME", help="Who reviews (default: the OS user). Each reviewer sees their own "
                                                 "random sides; run the command once per reviewer.")
@click.option("--session", "session_ref", metavar="SESSION", help="Join or resume this session (default: the newest "
                                                                  "session of BASE and NEW, else a new one).")
@click.option("--new-session", "fresh", is_flag=True, help="Start a new session even when BASE and NEW have one.")
@click.option("--size", "-n", default=50, show_default=True, type=click.IntRange(1, 10_000),
              help="How many cases a new session offers.")
@click.option("--uniform", is_flag=True, help="Draw the cases uniformly (default: the cases where the runs' scores "
                                              "disagree first, NEW higher and BASE higher in turn).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 10_000), help="Another seed draws other cases.")
@click.option("--target", default=0.1, show_default=True, type=click.FloatRange(0.005, 0.5),
              help="The half-width of the 95% interval on the win rate that the sample size shown is for.")
@click.option("--summary", "summary_ref", metavar="SESSION", help="Print this session's summary (which run was which, "
                                                                  "win rate, agreement, position bias) and exit.")
@click.option("--ranking", "ranking_ref", metavar="EXPERIMENT", help="Print the Bradley-Terry ranking of this "
              "experiment's cells from every review of a pair of them, and exit.")
@json_option
@db_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (one address, not 0.0.0.0). Anything but 127.0.0.1 lets the network see "
                   "the cases.")
@click.option("--port", "-p", default=8002, show_default=True, type=click.IntRange(0, 65535),
              help="The port the review page listens on (0: any free port).")
def review(base, new, reviewer, session_ref, fresh, size, uniform, seed, target, summary_ref, ranking_ref, as_json,
           db_url, host, port):
    """Review NEW against BASE blind, side by side, in the browser: per case the input and the two
    answers as A and B, their sides drawn at random per case and per reviewer; keys a, b, t
    (tie), x (both bad). Nothing on the page says which run is which until the session ends
    (Ctrl-C), when the summary is printed: the win rate of NEW over BASE with its interval, the
    reviewers' agreement and each reviewer's position bias.

    \b
    BASE and NEW are runs (id, id prefix, run name, suite name) or an experiment's cells as
    EXPERIMENT:CELL (the cell's index or label). With EXPERIMENT alone, its cells are reviewed in
    pairs: each command serves the pair this reviewer began, else the pair with the fewest
    verdicts, without saying which cells they are; --ranking EXPERIMENT ranks the cells (Bradley-
    Terry with bootstrap intervals, as Chatbot Arena). Verdicts are kept in the database: the same
    command resumes the session, --session SESSION joins it (another reviewer), and `evalyard
    compare BASE NEW` shows the people's verdict beside the judge's. Needs Flask: pip install
    'evalyard[serve]'.
    """
    from ..analysis.labels import default_labeller
    from ..reviewing import check_reviewer, experiment_ranking, next_pair, open_session, session_summary

    if summary_ref or ranking_ref:
        if base or new or session_ref or (summary_ref and ranking_ref):
            raise CLIError("--summary SESSION and --ranking EXPERIMENT each print a summary: give no BASE, NEW, --session "
                           "or other summary with it")
        if summary_ref:
            _print_summary(session_summary(open_store(db_url), summary_ref), as_json)
        else:
            _print_ranking(experiment_ranking(open_store(db_url), ranking_ref), as_json)
        return
    from ..report.local_page import WILDCARD_HOSTS
    from .report import serve_until_interrupted

    if host in WILDCARD_HOSTS:  # refused before a session is written
        raise CLIError(f"--host {host!r}: the review page listens on one address (its Host check needs it); give "
                       f"that address, such as this machine's address on the network")
    if session_ref and (base or new):
        raise CLIError("--session SESSION names the runs already: give no BASE and NEW with it")
    reviewer = check_reviewer(reviewer if reviewer is not None else (default_labeller() or "reviewer"))
    store = open_store(db_url)
    sample = {"size": size, "seed": seed, "uniform": uniform, "target": target}
    pair = ""
    if base and not new and not session_ref:  # an experiment's cells in pairs
        if fresh:
            raise CLIError("--new-session applies to BASE NEW; an experiment's pairs each keep one session")
        session, resumed, place, pairs = next_pair(store, base, reviewer, **sample)
        pair = f"pair {place} of {pairs} of experiment {base}, "
    else:
        session, resumed = open_session(store, base, new, session_ref=session_ref, fresh=fresh, **sample)
    server = _server(store, session, reviewer, host, port, resumed)
    plan = session.plan or {}
    first = sum(n for name, n in (plan.get("strata") or {}).items() if name != "scores agree"
                and plan.get("method") == "informative")
    click.echo(f"evalyard review on http://{host}:{server.server_port}/ ({pair}session {session.id}"
               f"{' resumed' if resumed else ''}, {len(session.case_ids)} cases"
               + (f", the {first} where the runs' scores disagree first" if first else "")
               + f"; reviewer {reviewer}; about {plan.get('reviews_needed', '?')} reviews give a 95% interval of "
                 f"+/-{plan.get('target_half_width', target):.2f} on the win rate); Ctrl-C ends it and prints the "
                 f"summary")

    def summary() -> None:
        found = session_summary(store, session.id)
        if not pair:
            return _print_summary(found, as_json)
        ranking = experiment_ranking(store, base)  # the experiment's standing after this pair's verdicts
        if as_json:
            return echo_json({**found, "ranking": ranking})
        _print_summary(found, False)
        _print_ranking(ranking, False)

    serve_until_interrupted(server, store, then=summary)


def _server(store, session, reviewer, host, port, resumed):
    from ..report.review_page import create_review_app, make_review_server
    from ..report.serve import FlaskMissing
    from ..store.reviews import delete_session

    try:
        return make_review_server(create_review_app(store, session, reviewer=reviewer), host=host, port=port)
    except (FlaskMissing, ValueError, OSError) as exc:
        if not resumed:  # nothing written when the page cannot be served
            delete_session(store, session.id)
        if isinstance(exc, OSError):
            raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        raise CLIError(str(exc)) from None


def _print_summary(summary, as_json: bool) -> None:
    from ..reviewing import summary_lines

    _print(summary, summary_lines, as_json)


def _print_ranking(ranking, as_json: bool) -> None:
    from ..reviewing import ranking_lines

    _print(ranking, ranking_lines, as_json)


def _print(found, lines, as_json: bool) -> None:
    if as_json:
        echo_json(found)
    else:
        for line in lines(found):
            click.echo(line)


def register(cli: click.Group) -> None:
    cli.add_command(review)
