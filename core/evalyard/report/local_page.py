"""The protections of evalyard's local pages that write (``evalyard label``, ``evalyard review``):
one place, so both pages hold the same rules.

- the server listens on one address (127.0.0.1 unless told otherwise) and answers only requests
  whose Host is a name of that address (a DNS-rebinding page cannot reach it under another name);
- every write carries the session's token, a random value made when the server starts and
  embedded in the page, in the ``X-Evalyard-Token`` header; another site's page cannot read it;
- every write's Origin (which browsers always send on a POST) must be this server's own origin,
  so a cross-site form or fetch is refused (403) even before the token is looked at;
- every answer carries a Content-Security-Policy that allows the page's own script (by hash)
  and requests to itself only, may not be framed (no clickjacking of the keys), is not cached
  (the page carries the token) and sends no Referer;
- a page with images or audio gets them from its own ``/media/SHA256`` route (``media_view``),
  which an <img> or <audio> reaches without a header of the page's choosing: the page sets the
  token in a cookie of its own (HttpOnly, SameSite=Strict, so no other site's request carries
  it), and the route answers only with that cookie, never to a request from another origin, and
  only for media of the cases the page offers.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

TOKEN_HEADER = "X-Evalyard-Token"
#: Addresses that mean "every interface": the name a browser would reach the page under is
#: unknown there, so the Host check could not tell this server's name from a rebinding one's.
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def policy(script_hash: str, media: bool = False) -> str:
    """The pages' policy; ``media``: the page shows images or audio, from its own route."""
    images = "img-src data: 'self'; media-src 'self'" if media else "img-src data:"
    return (f"default-src 'none'; script-src '{script_hash}'; style-src 'unsafe-inline'; {images}; "
            "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")


def guarded_app(name: str, script_hash: str, media: bool = False) -> tuple[Any, Any, Any]:
    """(flask, a Flask app with the Host check and the headers above, ``refuse(status, message)``).
    ``app.config["ALLOWED_HOSTS"]``: the Host values it answers (``make_local_server`` sets them
    once the port is known; until then nothing is answered)."""
    from .serve import _flask

    flask = _flask()
    app = flask.Flask(name)
    app.config["ALLOWED_HOSTS"] = set()
    header = policy(script_hash, media)

    def refuse(status: int, message: str):
        return flask.jsonify({"error": message}), status

    @app.before_request
    def known_host():
        if flask.request.host not in app.config["ALLOWED_HOSTS"]:
            return refuse(403, f"unknown host {flask.request.host!r}")
        return None

    @app.after_request
    def headers(response):
        response.headers["Content-Security-Policy"] = header
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    return flask, app, refuse


def write_refused(flask, refuse, token: str):
    """The refusal of a write that is not from this page (wrong Origin, missing or wrong token,
    a body that is not a JSON object), or None with the body in ``flask.g.body``."""
    request = flask.request
    if request.headers.get("Origin") != f"{request.scheme}://{request.host}":
        return refuse(403, "cross-origin write refused")
    if not hmac.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
        return refuse(403, "missing or wrong session token")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return refuse(400, "expected a JSON object")
    flask.g.body = body
    return None


def cookie_name(token: str) -> str:
    """The media cookie's name, one per session: cookies are kept per host, not per port, and two
    pages (two reviewers) may run on one machine at once."""
    return "evalyard-" + hashlib.sha256(token.encode()).hexdigest()[:16]


def page_response(flask, html: str, token: str):
    """The page, with the token in its media cookie (see the module docstring)."""
    response = flask.Response(html, content_type="text/html; charset=utf-8")
    response.set_cookie(cookie_name(token), token, httponly=True, samesite="Strict", path="/")
    return response


def read_refused(flask, refuse, token: str):
    """The refusal of a media request that is not from this page (another origin, or without
    the session's cookie), or None."""
    request = flask.request
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        return refuse(403, "cross-origin request refused")
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        return refuse(403, "cross-origin request refused")
    if not hmac.compare_digest(request.cookies.get(cookie_name(token), ""), token):
        return refuse(403, "missing or wrong session token")
    return None


def _host_names(host: str, port: int) -> set[str]:
    """The Host values a browser sends for this server."""
    names = {f"{host}:{port}", f"[{host}]:{port}"}
    if host in ("127.0.0.1", "::1", "localhost"):
        names |= {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    return names


def make_local_server(flask_app, host: str = "127.0.0.1", port: int = 0, what: str = "page"):
    """A werkzeug server for a guarded app (``serve_forever()`` to run, ``shutdown()`` to stop)."""
    from werkzeug.serving import make_server as werkzeug_server

    if host in WILDCARD_HOSTS:
        raise ValueError(f"--host {host!r}: the {what} listens on one address (its Host check needs it); "
                         f"give that address, such as this machine's address on the network")
    try:
        server = werkzeug_server(host, port, flask_app, threaded=True)
    except SystemExit:  # werkzeug prints why it could not bind and exits; the caller says it in one line
        raise OSError(f"the address is in use or not this machine's") from None
    flask_app.config["ALLOWED_HOSTS"] = _host_names(host, server.server_port)
    return server
