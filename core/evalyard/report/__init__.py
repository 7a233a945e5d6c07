"""Reports people look at: one self-contained HTML page per run (optionally compared with a
base run), also served by ``evalyard serve``.

``build_report(store, "RUN")`` returns the page as text; nothing in it loads from the network.
"""

from __future__ import annotations


def build_report(store, run_ref: str, compare_ref: str | None = None,
                 nav: list[tuple[str, str]] | None = None, *, large_above: int | None = None) -> str:
    """The page of one run. Up to ``data.FULL_TABLE_MAX_CASES`` cases (or ``large_above``) it holds
    every case; a larger run gets the bounded page of ``data.gather_large_run``, and its
    comparison comes from SQL aggregates (``compare_data.large_compare``)."""
    from .compare_data import gather_compare, large_compare, regressed_case_ids
    from .data import gather_large_run, gather_run, is_large
    from .render import render_report

    run = store.get_run(run_ref)
    if not is_large(store, run, large_above):
        gathered = gather_run(store, run)
        compare = gather_compare(store, compare_ref, run, gathered["table"]) if compare_ref else None
        return render_report(gathered, compare, nav=nav)
    result = large_compare(store, store.get_run(compare_ref), run) if compare_ref else None
    gathered = gather_large_run(store, run, extra_ids=regressed_case_ids(result) if result else [])
    compare = gather_compare(store, compare_ref, run, gathered["table"], result) if compare_ref else None
    return render_report(gathered, compare, nav=nav)


__all__ = ["build_report"]
