"""Reports people look at: one self-contained HTML page per run (optionally compared with a
base run), also served by ``evalyard serve``.

``build_report(store, "RUN")`` returns the page as text; nothing in it loads from the network.
"""

from __future__ import annotations


def build_report(store, run_ref: str, compare_ref: str | None = None,
                 nav: list[tuple[str, str]] | None = None) -> str:
    from .compare_data import gather_compare
    from .data import gather_run
    from .render import render_report

    run = store.get_run(run_ref)
    gathered = gather_run(store, run)
    compare = gather_compare(store, compare_ref, run, gathered["table"]) if compare_ref else None
    return render_report(gathered, compare, nav=nav)


__all__ = ["build_report"]
