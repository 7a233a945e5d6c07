"""A case's images and audio on evalyard's pages: where the browser gets each one.

A case keeps its media parts naming their bytes by sha256 (``evalyard.media``); a page's data
carries the parts as they are, and a second data element (``evalyard-media``) maps each hash to
its source, ``{sha256: {"src": ..., "linked": bool}}``, which ``assets/media.js`` reads:

- a static page (``evalyard report``, ``evalyard experiments report``) embeds media as data URIs
  up to ``EMBED_MEDIA_BYTES`` in total, in the order the page shows them, so a page of a few
  images stays one file; the rest are written once beside the page (``PAGE_media/SHA256.EXT``)
  and linked by a relative path, and the page says which. Nothing is fetched from the network.
  A page written where no folder can sit beside it (a stream) leaves those media out and says so;
- a served page (``evalyard label``, ``evalyard review``, ``evalyard serve``) links each medium to
  its server's ``/media/SHA256`` route, which answers only for media of the cases it shows.

A page without media gets no data element and the same Content-Security-Policy as before.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Callable, Iterable

from ..media import parts_of

#: Media bytes a static page embeds, in total (a data URI is a third larger than its bytes):
#: a few screenshots or clips keep the report one file; a suite of photos does not make it a
#: page the browser chokes on.
EMBED_MEDIA_BYTES = 4 * 1024 * 1024
#: A medium's file extension beside a static page, by its type.
EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif",
              "audio/wav": ".wav", "audio/mpeg": ".mp3", "audio/flac": ".flac"}
#: The served pages' route, with the hash appended.
ROUTE = "/media/"


def records(cases: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """The stored media of these cases (their input's parts, then their messages'), by sha256, in
    the order first shown; a remote image has no bytes here and is left out."""
    found: dict[str, dict[str, Any]] = {}
    for case in cases:
        for _, part in parts_of(case):
            info = part.get("media") or {}
            if info.get("sha256"):
                found.setdefault(info["sha256"], info)
    return found


def static_sources(store, media: dict[str, dict[str, Any]], folder: Path | None,
                   budget: int = EMBED_MEDIA_BYTES) -> dict[str, dict[str, Any]]:
    """Sources for a static page: data URIs while the total stays within ``budget``, then files
    written once in ``folder`` and linked (None: nowhere to write, those are left out, their
    ``src`` None); a linked or left-out medium's source names the budget, which the page says."""
    sources: dict[str, dict[str, Any]] = {}
    embedded = 0
    for sha, info in media.items():
        if embedded + info["size"] <= budget:
            media_type, data = store.media(sha)
            embedded += len(data)
            sources[sha] = {"src": f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}", "linked": False}
        elif folder is not None:
            name = sha + EXTENSIONS.get(info["type"], "")
            target = folder / name
            if not (target.is_file() and target.stat().st_size == info["size"]):  # written once
                folder.mkdir(parents=True, exist_ok=True)
                target.write_bytes(store.media(sha)[1])
            sources[sha] = {"src": f"{folder.name}/{name}", "linked": True, "budget": budget}
        else:
            sources[sha] = {"src": None, "budget": budget}
    return sources


def served_sources(media: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Sources for a served page: its own route, by hash (nothing else in the URL)."""
    return {sha: {"src": ROUTE + sha, "linked": False} for sha in media}


def beside(page: Path) -> Path:
    """The folder of the media a static page links: ``report.html`` -> ``report_media``."""
    return page.with_name(page.stem + "_media")


def policy(sources: dict[str, dict[str, Any]] | None) -> str:
    """The Content-Security-Policy's img-src and media-src for these sources: ``data:`` (the
    favicon, embedded media) and ``'self'`` only when a medium is linked or served."""
    if not sources:
        return "img-src data:"
    linked = any(s["src"] and not s["src"].startswith("data:") for s in sources.values())
    allowed = "data: 'self'" if linked else "data:"
    return f"img-src {allowed}; media-src {allowed}"


def media_route(flask, store, allowed: Callable[[str], bool], refused: Callable[[], Any]):
    """The view of ``/media/<sha256>``: the bytes of a medium this page may show (``allowed``)
    with its type; ``refused()`` first says why a request may not have any (or None)."""
    from ..errors import EvalyardError

    def view(sha256: str):
        answer = refused()
        if answer is not None:
            return answer
        if not allowed(sha256):
            return flask.jsonify({"error": "no such medium on this page"}), 404
        try:
            media_type, data = store.media(sha256)
        except EvalyardError:
            return flask.jsonify({"error": "no such medium on this page"}), 404
        response = flask.Response(data, content_type=media_type)
        response.headers["X-Content-Type-Options"] = "nosniff"  # the type stored, never a guess
        return response
    return view
