"""``evalyard serve``: a local, read-only dashboard over the run history: runs (a run's page is
its report), two runs compared, experiments and an experiment's page (the grid and the case view,
rendered as ``evalyard experiments report`` renders them), and a case's images and audio
(``/media/SHA256``).

Flask, because the store is synchronous SQLAlchemy (an async framework would only push every
query to a thread pool), the report's Jinja2 templates are Flask's own template language, and
werkzeug's server can be started in-process on a chosen host and port, which is all a local
dashboard needs. Every route is a GET; nothing writes to the database.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

DEFAULT_HOST = "127.0.0.1"
#: Cases per page of a large run in the dashboard (``?size=`` chooses up to MAX_PAGE_SIZE).
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


class FlaskMissing(RuntimeError):
    pass


def _flask():
    try:
        import flask
    except ImportError:
        raise FlaskMissing("evalyard serve needs Flask: pip install 'evalyard[serve]'") from None
    return flask


def _run_row(run, suite) -> dict[str, Any]:
    totals = run.totals or {}
    means = {name: s.get("mean") for name, s in (totals.get("scorers") or {}).items()}
    return {"id": run.id, "name": run.name, "suite": suite.name, "suite_version": suite.version,
            "status": run.status, "created_at": run.created_at.isoformat(timespec="seconds") if run.created_at else "",
            "duration_s": totals.get("duration_s"), "means": means}


def create_app(store, limit: int = 500):
    """The dashboard's WSGI app over an open ``Store``."""
    flask = _flask()
    from ..errors import UnknownNameError
    from ..experiments import Cell
    from ..store.reading import page_case_ids
    from . import build_report
    from .experiment import build_experiment_report
    from .data import gather_large_run, is_large
    from .media_view import media_route, served_sources
    from .render import render_page, render_report

    app = flask.Flask("evalyard.dashboard")
    nav = [("runs", "/"), ("experiments", "/experiments")]

    def page(html: str, status: int = 200):
        response = flask.make_response(html, status)
        response.headers["Content-Type"] = "text/html; charset=utf-8"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    def not_found(message: str):
        return page(render_page("message.html.j2", nav=nav, title="Not found", message=message), 404)

    @app.get("/")
    def runs_list():
        rows = [_run_row(run, suite) for run, suite in store.list_runs(limit=limit)]
        return page(render_page("runs.html.j2", nav=nav, runs=rows, db=store.url))

    @app.get("/runs/<run_ref>")
    def run_view(run_ref: str):
        try:
            run = store.get_run(run_ref)
            if is_large(store, run):
                return paged_run(run)
            return page(build_report(store, run.id, nav=nav + [("compare…", "/#compare")], media=served_sources))
        except UnknownNameError as exc:
            return not_found(str(exc))

    @app.get("/runs/<run_ref>/report")
    def run_report(run_ref: str):
        """The bounded report of a large run (worst, failing and sampled cases), as ``evalyard report``."""
        try:
            return page(build_report(store, run_ref, nav=nav + [("compare…", "/#compare")], media=served_sources))
        except UnknownNameError as exc:
            return not_found(str(exc))

    def paged_run(run):
        """A large run one page of cases at a time, paged in the database (``reading.page_case_ids``)."""
        args = flask.request.args
        try:
            number = int(args.get("page", "0"))
            size = int(args.get("size", str(PAGE_SIZE)))
        except ValueError:
            return bad_request("page and size are whole numbers")
        scorer = args.get("scorer") or None
        failing = args.get("failing") in ("1", "true", "on")
        if number < 0 or not 1 <= size <= MAX_PAGE_SIZE:
            return bad_request(f"page is 0 or more, size from 1 to {MAX_PAGE_SIZE}")
        if scorer and scorer not in [s["name"] for s in run.scorers or []]:
            return bad_request(f"run {run.id} has no scorer {scorer!r}")
        ids, more = page_case_ids(store, run, page=number, size=size, scorer=scorer, failing=failing)
        # no histograms: binning a million values takes about a second per scorer in SQLite, and
        # this page is for reading results; the report (linked) draws them
        gathered = gather_large_run(store, run, case_ids=ids, histograms=False)

        def link(n: int) -> str:
            query = {"page": n, "size": size, **({"scorer": scorer} if scorer else {}), **({"failing": 1} if failing else {})}
            return f"/runs/{run.id}?{urlencode(query)}"

        paging = {"page": number, "size": size, "scorer": scorer, "failing": failing, "more": more, "link": link,
                  "report": f"/runs/{run.id}/report",
                  "first": number * size + 1 if ids else 0, "last": number * size + len(ids),
                  "filtered": bool(scorer or failing)}
        links = nav + [("compare…", "/#compare"), ("worst, failing and sampled cases", f"/runs/{run.id}/report")]
        return page(render_report(gathered, None, nav=links, paging=paging,
                                  media=served_sources(gathered["media"]) if gathered["media"] else None))

    def bad_request(message: str):
        return page(render_page("message.html.j2", nav=nav, title="Bad request", message=message), 400)

    @app.get("/compare")
    def compare_view():
        base, new = flask.request.args.get("base", ""), flask.request.args.get("new", "")
        if not base or not new:
            return not_found("compare needs two runs: /compare?base=RUN&new=RUN")
        try:
            return page(build_report(store, new, compare_ref=base, nav=nav, media=served_sources))
        except UnknownNameError as exc:
            return not_found(str(exc))

    @app.get("/experiments")
    def experiments_list():
        from ..store.experiments import cell_run_counts, list_experiments

        rows = list_experiments(store, limit)
        runs = cell_run_counts(store, [row.id for row in rows])
        listed = [{"id": row.id, "name": row.name, "source": row.source, "runs": runs.get(row.id, 0),
                   "cells": [Cell.from_dict(c).label for c in row.cells],
                   "created_at": row.created_at.isoformat(timespec="seconds") if row.created_at else ""}
                  for row in rows]
        return page(render_page("experiments.html.j2", nav=nav, experiments=listed, db=store.url))

    @app.get("/experiments/<ref>")
    def experiment_view(ref: str):
        """The static experiment page (``evalyard experiments report``), its cells linked to their runs."""
        try:
            return page(build_experiment_report(store, ref, nav=nav, run_link="/runs/{run}", media=served_sources))
        except UnknownNameError as exc:
            return not_found(str(exc))

    # a case's images and audio, for the pages above: the dashboard shows the whole database to
    # whoever reaches it, so any stored medium, by its hash
    app.add_url_rule("/media/<sha256>", "media", media_route(flask, store, lambda sha256: True, lambda: None))
    return app


def make_server(store, host: str = DEFAULT_HOST, port: int = 8000):
    """A werkzeug server for the dashboard (``serve_forever()`` to run, ``shutdown()`` to stop)."""
    from werkzeug.serving import make_server as werkzeug_server

    return werkzeug_server(host, port, create_app(store), threaded=True)
