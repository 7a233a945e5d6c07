"""Reports people look at: one self-contained HTML page per run (optionally compared with a
base run), also served by ``evalyard serve``.

``build_report(store, "RUN")`` returns the page as text; nothing in it loads from the network
(a case's images and audio are embedded, or beyond a budget linked as files beside the page:
``media_view``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


def build_report(store, run_ref: str, compare_ref: str | None = None,
                 nav: list[tuple[str, str]] | None = None, *, large_above: int | None = None,
                 media: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> str:
    """The page of one run. Up to ``data.FULL_TABLE_MAX_CASES`` cases (or ``large_above``) it holds
    every case; a larger run gets the bounded page of ``data.gather_large_run``, and its
    comparison comes from SQL aggregates (``compare_data.large_compare``).

    ``media``: where the page's images and audio come from, a function of their records
    (``media_view``); by default embedded up to ``media_view.EMBED_MEDIA_BYTES``, the rest left
    out (``static_page_media`` writes them beside a page written to a file)."""
    from .compare_data import gather_compare, large_compare, regressed_case_ids
    from .data import gather_large_run, gather_run, is_large
    from .media_view import static_sources
    from .render import render_report

    place = media or (lambda found: static_sources(store, found, None))
    run = store.get_run(run_ref)
    if not is_large(store, run, large_above):
        gathered = gather_run(store, run)
        compare = gather_compare(store, compare_ref, run, gathered["table"]) if compare_ref else None
    else:
        result = large_compare(store, store.get_run(compare_ref), run) if compare_ref else None
        gathered = gather_large_run(store, run, extra_ids=regressed_case_ids(result) if result else [])
        compare = gather_compare(store, compare_ref, run, gathered["table"], result) if compare_ref else None
    return render_report(gathered, compare, nav=nav, media=place(gathered["media"]) if gathered["media"] else None)


def static_page_media(store, page: Path, budget: int | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The media of a static page written to ``page``: embedded up to ``budget`` bytes
    (``media_view.EMBED_MEDIA_BYTES``), the rest written once beside it and linked."""
    from .media_view import EMBED_MEDIA_BYTES, beside, static_sources

    limit = EMBED_MEDIA_BYTES if budget is None else budget
    return lambda found: static_sources(store, found, beside(page), limit)


__all__ = ["build_report", "static_page_media"]
