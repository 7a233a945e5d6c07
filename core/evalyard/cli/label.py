"""``evalyard label RUN``: label a run's cases in the browser, for ``evalyard calibrate --run``."""

from __future__ import annotations

import click

from .options import CLIError, db_option, open_store


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--scorer", "-s", metavar="NAME", help="The judge whose verdicts the labels check (needed when the run "
                                                     "has several scorers).")
@click.option("--labeller", metavar="NAME", help="Who labels (default: the OS user).")
@click.option("--size", "-n", default=20, show_default=True, type=click.IntRange(1, 10_000),
              help="How many unlabelled cases to offer, stratified by the judge's value.")
@click.option("--bins", default=5, show_default=True, type=click.IntRange(1, 100),
              help="Bins of the judge's value the cases are drawn from evenly.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 10_000), help="Another seed draws other cases from each bin.")
@click.option("--show-verdict", is_flag=True, help="Show the judge's verdict before a case is labelled (default: "
                                                   "hidden until then; the page can toggle it).")
@db_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (one address, not 0.0.0.0). Anything but 127.0.0.1 lets the network "
                   "see the cases.")
@click.option("--port", "-p", default=8001, show_default=True, type=click.IntRange(0, 65535),
              help="The port the labelling page listens on (0: any free port).")
def label(run_ref, scorer, labeller, size, bins, seed, show_verdict, db_url, host, port):
    """Label RUN's cases yes/no in the browser, one at a time; the labels are kept in the database
    and `evalyard calibrate --run RUN` compares the judge with them.

    \b
    The page offers the labelled cases the judge disagrees with first (a second look), then
    unlabelled cases drawn evenly from bins of the judge's value. Labelling a case again
    replaces its label. Needs Flask: pip install 'evalyard[serve]'.
    """
    from ..analysis.labels import default_labeller, scorer_entry
    from ..figures.labels import sample
    from ..report.labelling import create_label_app, make_label_server
    from ..report.serve import FlaskMissing
    from .report import serve_until_interrupted

    store = open_store(db_url)
    run = store.get_run(run_ref)
    entry = scorer_entry(run, scorer)
    picks = sample(store, run, entry, size, bins=bins, seed=seed)
    if not picks:
        raise CLIError(f"run {run.id} has no case with a result of {entry['name']} to label")
    labeller = labeller if labeller is not None else default_labeller()
    try:
        app = create_label_app(store, run, entry, picks, labeller=labeller, show_verdict=show_verdict)
        server = make_label_server(app, host=host, port=port)
    except (FlaskMissing, ValueError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    again = sum(p.why == "disagreement" for p in picks)
    click.echo(f"evalyard label on http://{host}:{server.server_port}/ ({len(picks)} cases of run {run.id}, "
               f"judge {entry['name']}" + (f", {again} labelled cases the judge disagrees with first" if again else "")
               + f"; labeller {labeller or '(unnamed)'}); Ctrl-C stops it")
    serve_until_interrupted(server, store)


def register(cli: click.Group) -> None:
    cli.add_command(label)
