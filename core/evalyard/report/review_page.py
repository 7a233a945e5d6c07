"""``evalyard review BASE NEW``: the blind side-by-side review page of one reviewer in one session.

The page holds, per case, the case's texts and two answers named A and B, their sides drawn for
this reviewer (``reviewing.reviewer_cases``); it is built from nothing else, so no run id, model
name, prompt, cost, latency or score can reach its HTML, its data or its answers. Writes are
guarded as the labelling page's are (``local_page``); the one write route stores this
reviewer's verdict on a case of this session, and nothing else; ``/media/SHA256`` answers with
the images and audio of this session's cases only.
"""

from __future__ import annotations

import secrets

from . import media_view
from .labelling import _cut
from .local_page import guarded_app, make_local_server, page_response, read_refused, write_refused
from .render import assets, data_element, environment, media_element, script

#: The verdicts and the keys that give them (shown on the page).
KEYS = {"A": "a", "B": "b", "tie": "t", "both_bad": "x"}


def create_review_app(store, session, *, reviewer: str, token: str | None = None):
    """The review page's WSGI app for ``reviewer`` in ``session`` (a ``ReviewSessionRow``)."""
    from ..errors import InputError
    from ..reviewing import record, reviewer_cases, session_cases
    from ..store.reviews import session_reviews

    token = token or secrets.token_urlsafe(32)
    cases = reviewer_cases(session_cases(store, session), session.secret, reviewer, cut=_cut)
    offered = {case["id"] for case in cases}
    # a case's images and audio belong to the case, the same for both sides: read from NEW's
    # copy of the suite, named on the page by their hash only (the route's URL holds nothing else)
    from ..scoring import Case
    from ..store.labels import run_cases

    stored = run_cases(store, store.get_run(session.new_run), sorted(offered))
    shown = []
    for case in cases:
        case["input_parts"] = stored[case["id"]].input_parts if case["id"] in stored else None
        shown.append(Case(id=case["id"], input_parts=case["input_parts"], messages=case["messages"]))
        shown += [Case(id=case["id"], messages=side["messages"]) for side in (case["a"], case["b"]) if side["messages"]]
    media = media_view.records(shown)
    css = assets()[0]
    js, script_hash = script("media.js", "conversation.js", "post.js", "review.js")
    flask, app, refuse = guarded_app("evalyard.review", script_hash, media=bool(media))

    @app.get("/")
    def page():
        from markupsafe import Markup

        # this reviewer's earlier verdicts (in their own A/B frame), so a resumed session shows them
        given = {r["case_id"]: {"verdict": r["verdict"], "note": r["note"]}
                 for r in session_reviews(store, session.id) if r["reviewer"] == reviewer}
        data = {"session": session.id, "reviewer": reviewer, "token": token, "cases": cases, "given": given,
                "keys": KEYS}
        html = environment().get_template("review.html.j2").render(
            css=Markup(css), js=Markup(js), data=Markup(data_element(data, compress_above=1 << 62)),
            media=Markup(media_element(media_view.served_sources(media))),
            session=session.id, reviewer=reviewer, count=len(cases), keys=KEYS)
        return page_response(flask, html, token)

    app.add_url_rule("/media/<sha256>", "media", media_view.media_route(
        flask, store, lambda sha256: sha256 in media, lambda: read_refused(flask, refuse, token)))

    @app.post("/review")
    def review():
        refused = write_refused(flask, refuse, token)
        if refused:
            return refused
        body = flask.g.body
        case_id, verdict, note = body.get("case_id"), body.get("verdict"), body.get("note", "")
        if not isinstance(case_id, str) or case_id not in offered:
            return refuse(400, f"case {case_id!r} is not one this page offered")
        if note is None:
            note = ""
        try:
            record(store, session, case_id, reviewer, verdict, note)
        except InputError as exc:
            return refuse(400, str(exc))
        return flask.jsonify({"case_id": case_id, "verdict": verdict, "reviewer": reviewer})

    app.config["TOKEN"] = token
    return app


def make_review_server(flask_app, host: str = "127.0.0.1", port: int = 0):
    """A werkzeug server for the review app (``serve_forever()`` to run, ``shutdown()`` to stop)."""
    return make_local_server(flask_app, host, port, what="review page")

