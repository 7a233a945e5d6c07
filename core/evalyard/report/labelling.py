"""``evalyard label RUN``: a local page that shows a run's cases one at a time and stores a
person's yes/no label of each (``evalyard.figures.labels.save_label``).

It writes, so it accepts a write only from itself (``local_page``: Host, Origin and token
checks, CSP); the one write route stores a label of a case this session offered, and the one
other route, ``/media/SHA256``, answers with the images and audio of those cases only.
"""

from __future__ import annotations

import secrets
from typing import Any

from . import media_view
from .local_page import TOKEN_HEADER, guarded_app, make_local_server, page_response, read_refused, write_refused
from .render import assets, data_element, environment, media_element, script

__all__ = ["TOKEN_HEADER", "create_label_app", "make_label_server"]

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
        shown.append({"id": case.id, "why": pick.why, "input": _cut(case.input), "input_parts": case.input_parts,
                      "candidate": _cut(case.candidate),
                      "reference": _cut(case.reference), "context": [_cut(c) for c in case.context],
                      "messages": case.messages,
                      "verdict": _verdict(verdicts.get(case.id)),
                      "label": stored and {"label": stored["label"], "labeller": stored["labeller"]},
                      "case": case})
    return shown


def create_label_app(store, run, entry: dict[str, Any], picks: list, *, labeller: str, show_verdict: bool = False,
                     token: str | None = None):
    """The labelling page's WSGI app. ``app.config["ALLOWED_HOSTS"]``: the Host values it answers
    (``make_label_server`` sets them once the port is known)."""
    from ..analysis.labels import LABELS
    from ..figures.labels import save_label

    token = token or secrets.token_urlsafe(32)
    cases = page_cases(store, run, entry, picks)
    media = media_view.records([case.pop("case") for case in cases])  # the media of the cases offered, by hash
    offered = {case["id"] for case in cases}
    css = assets()[0]
    js, script_hash = script("media.js", "conversation.js", "post.js", "label.js")
    flask, app, refuse = guarded_app("evalyard.label", script_hash, media=bool(media))

    @app.get("/")
    def page():
        from markupsafe import Markup

        data = {"run": run.id, "run_name": run.name, "scorer": entry["name"], "labeller": labeller,
                "show_verdict": show_verdict, "token": token, "cases": cases, "labels": list(LABELS)}
        html = environment().get_template("label.html.j2").render(
            css=Markup(css), js=Markup(js), data=Markup(data_element(data, compress_above=1 << 62)),
            media=Markup(media_element(media_view.served_sources(media))),
            run=run, scorer=entry["name"], count=len(cases), nav=[])
        return page_response(flask, html, token)

    app.add_url_rule("/media/<sha256>", "media", media_view.media_route(
        flask, store, lambda sha256: sha256 in media, lambda: read_refused(flask, refuse, token)))

    @app.post("/label")
    def label():
        refused = write_refused(flask, refuse, token)
        if refused:
            return refused
        body = flask.g.body
        case_id, value = body.get("case_id"), body.get("label")
        if not isinstance(case_id, str) or case_id not in offered:  # a list would not even hash
            return refuse(400, f"case {case_id!r} is not one this page offered")
        if value not in LABELS:
            return refuse(400, f"label {value!r}: expected one of {', '.join(LABELS)}")
        save_label(store, run.id, case_id, value, scorer=entry["name"], labeller=labeller)
        return flask.jsonify({"case_id": case_id, "label": value, "labeller": labeller})

    app.config["TOKEN"] = token
    return app


def make_label_server(flask_app, host: str = "127.0.0.1", port: int = 0):
    """A werkzeug server for the labelling app (``serve_forever()`` to run, ``shutdown()`` to stop)."""
    return make_local_server(flask_app, host, port, what="labelling page")
