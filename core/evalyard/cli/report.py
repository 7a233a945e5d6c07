"""``evalyard report``: one self-contained HTML page for a run; ``evalyard serve``: the
same pages, for every run in the database, on a local read-only web server."""

from __future__ import annotations

from pathlib import Path

import click

from .options import db_option, open_store


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--compare", "base_ref", metavar="BASE", help="Also compare RUN against the run BASE, case by case.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Where to write the page (default: evalyard-report-RUN_ID.html).")
@db_option
def report(run_ref, base_ref, output, db_url):
    """Write an HTML report of RUN (a run id, id prefix, run name or suite name).

    The page needs nothing but a browser: styles, script, charts and data are all inside it,
    so it opens from disk and can be attached to a CI job. A case's images and audio are
    embedded up to a budget in all; the rest are written beside the page, in PAGE_media/.
    """
    from ..report import build_report, static_page_media

    store = open_store(db_url)
    try:
        run = store.get_run(run_ref)
        path = Path(output or f"evalyard-report-{run.id}.html")
        html = build_report(store, run.id, compare_ref=base_ref, media=static_page_media(store, path))
    finally:
        store.close()
    path.write_text(html, encoding="utf-8")
    size = path.stat().st_size
    click.echo(f"wrote {path} ({size / 1024:,.0f} KiB) for run {run.id}" + (f" compared with {base_ref}" if base_ref else ""))


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but 127.0.0.1 shows your runs to the network.")
@click.option("--port", "-p", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="The port the dashboard listens on (0: any free port).")
def serve(db_url, host, port):
    """Browse the run history in a local, read-only dashboard (runs, run reports, comparisons).

    Needs Flask: pip install 'evalyard[serve]'.
    """
    from ..report.serve import FlaskMissing, make_server
    from .options import CLIError

    store = open_store(db_url)
    try:
        server = make_server(store, host=host, port=port)
    except FlaskMissing as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    click.echo(f"evalyard dashboard on http://{host}:{server.server_port}/ (read-only, {store.url}); Ctrl-C stops it")
    serve_until_interrupted(server, store)


def serve_until_interrupted(server, store, then=None) -> None:
    """Serve until Ctrl-C, then close the server, call ``then()`` (what a command prints at the
    end, from the store) and close the store."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        try:
            if then is not None:
                then()
        finally:
            store.close()


def register(cli: click.Group) -> None:
    cli.add_command(report)
    cli.add_command(serve)
