"""``evalyard label RUN``: a local page that shows a run's cases one at a time and stores a
person's yes/no label of each (``evalyard.services.save_label``).

It is evalyard's only page that writes, so it accepts a write only from itself:

- the server listens on 127.0.0.1 unless told otherwise, and answers only requests whose Host
  is the address it listens on (a DNS-rebinding page cannot reach it under another name);
- every POST carries the session's token, a random value made when the server starts and
  embedded in the page, in the ``X-Evalyard-Token`` header; another site's page cannot read it;
- every POST's Origin (which browsers always send on a POST) must be this server's own origin,
  so a cross-site form or fetch is refused (403) even before the token is looked at;
- the one write route stores a label of a case this session offered; there is no other POST,
  PUT or DELETE route, and the page may not be framed (no clickjacking of the y/n keys).
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from .render import assets, data_element, environment, script

TOKEN_HEADER = "X-Evalyard-Token"
#: Characters of a case's text the page shows of each field (the page is for reading, and a
#: case of megabytes would freeze it); the rest is cut with a note.
SHOWN_CHARS = 20_000
_REASONING_KEYS = ("reasoning", "explanation", "rationale", "reason")


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= SHOWN_CHARS:
        return text
    return text[:SHOWN_CHARS] + f"\n… ({len(text) - SHOWN_CHARS:,} more characters not shown)"


def _verdict(row: Any | None) -> dict[str, Any] | None:
    if row is None:
        return None
    value, label, passed, details, error = row
    details = details or {}
    reasoning = next((str(details[k]) for k in _REASONING_KEYS if details.get(k)), None)
    return {"value": value, "label": label, "passed": passed, "error": error, "reasoning": _cut(reasoning)}


def page_cases(store, run, entry: dict[str, Any], picks: list) -> list[dict[str, Any]]:
    """What the page shows of each picked case: its texts, the judge's verdict, its stored label."""
    from ..store.labels import run_cases, stored_labels, verdicts as verdicts_of

    ids = [pick.case_id for pick in picks]
    cases = run_cases(store, run, ids)
    verdicts = verdicts_of(store, run.id, entry["name"], ids, details=True)
    labels = stored_labels(store, run.id, entry["name"])
    shown = []
    for pick in picks:
        case = cases.get(pick.case_id)
        if case is None:  # a result whose case is gone from the suite: nothing to show
            continue
        stored = labels.get(case.id)
        shown.append({"id": case.id, "why": pick.why, "input": _cut(case.input), "candidate": _cut(case.candidate),
                      "reference": _cut(case.reference), "context": [_cut(c) for c in case.context],
                      "messages": case.messages,
                      "verdict": _verdict(verdicts.get(case.id)),
                      "label": stored and {"label": stored["label"], "labeller": stored["labeller"]}})
    return shown


def create_label_app(store, run, entry: dict[str, Any], picks: list, *, labeller: str, show_verdict: bool = False,
                     token: str | None = None):
    """The labelling page's WSGI app. ``app.config["ALLOWED_HOSTS"]``: the Host values it answers
    (``make_label_server`` sets them once the port is known)."""
    from .serve import _flask

    flask = _flask()
    from ..analysis.labels import LABELS
    from ..services import save_label

    app = flask.Flask("evalyard.label")
    app.config["ALLOWED_HOSTS"] = set()  # nothing is answered until the server says its names
    token = token or secrets.token_urlsafe(32)
    cases = page_cases(store, run, entry, picks)
    offered = {case["id"] for case in cases}
    css = assets()[0]
    js, script_hash = script("conversation.js", "label.js")
    policy = (f"default-src 'none'; script-src '{script_hash}'; style-src 'unsafe-inline'; img-src data:; "
              "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")

    def refuse(status: int, message: str):
        return flask.jsonify({"error": message}), status

    @app.before_request
    def known_host():
        allowed = app.config["ALLOWED_HOSTS"]
        if flask.request.host not in allowed:
            return refuse(403, f"unknown host {flask.request.host!r}")
        return None

    @app.after_request
    def headers(response):
        response.headers["Content-Security-Policy"] = policy
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"  # the page carries the session's token
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @app.get("/")
    def page():
        from markupsafe import Markup

        data = {"run": run.id, "run_name": run.name, "scorer": entry["name"], "labeller": labeller,
                "show_verdict": show_verdict, "token": token, "cases": cases, "labels": list(LABELS)}
        html = environment().get_template("label.html.j2").render(
            css=Markup(css), js=Markup(js), data=Markup(data_element(data, compress_above=1 << 62)),
            run=run, scorer=entry["name"], count=len(cases), nav=[])
        return flask.Response(html, content_type="text/html; charset=utf-8")

    @app.post("/label")
    def label():
        request = flask.request
        origin = request.headers.get("Origin")
        if origin != f"{request.scheme}://{request.host}":
            return refuse(403, "cross-origin write refused")
        if not hmac.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
            return refuse(403, "missing or wrong session token")
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return refuse(400, "expected a JSON object")
        case_id, value = body.get("case_id"), body.get("label")
        if case_id not in offered:
            return refuse(400, f"case {case_id!r} is not one this page offered")
        if value not in LABELS:
            return refuse(400, f"label {value!r}: expected one of {', '.join(LABELS)}")
        save_label(store, run.id, case_id, value, scorer=entry["name"], labeller=labeller)
        return flask.jsonify({"case_id": case_id, "label": value, "labeller": labeller})

    app.config["TOKEN"] = token
    return app


#: Addresses that mean "every interface": the name a browser would reach the page under is
#: unknown there, so the Host check could not tell this server's name from a rebinding one's.
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def _host_names(host: str, port: int) -> set[str]:
    """The Host values a browser sends for this server."""
    names = {f"{host}:{port}", f"[{host}]:{port}"}
    if host in ("127.0.0.1", "::1", "localhost"):
        names |= {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    return names


def make_label_server(flask_app, host: str = "127.0.0.1", port: int = 0):
    """A werkzeug server for the labelling app (``serve_forever()`` to run, ``shutdown()`` to stop)."""
    from werkzeug.serving import make_server as werkzeug_server

    if host in WILDCARD_HOSTS:
        raise ValueError(f"--host {host!r}: the labelling page listens on one address (its Host check needs it); "
                         f"give that address, such as this machine's address on the network")
    server = werkzeug_server(host, port, flask_app, threaded=True)
    flask_app.config["ALLOWED_HOSTS"] = _host_names(host, server.server_port)
    return server
