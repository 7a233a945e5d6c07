"""Turn gathered report data into one self-contained HTML page (the report and the dashboard
share these templates and assets)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def environment():
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["j2", "html"]),
                      trim_blocks=True, lstrip_blocks=True)
    from ..models.usage import format_latency

    env.globals.update(num=num, signed=signed, delta_class=delta_class, usage_text=usage_text,
                       cost_text=cost_text, versions_text=versions_text, latency_text=format_latency)
    return env


@lru_cache(maxsize=1)
def assets() -> tuple[str, str, str]:
    """(css, js, the CSP source that allows exactly this script and no other)."""
    css = (HERE / "assets" / "report.css").read_text(encoding="utf-8")
    return (css, *script("media.js", "conversation.js", "report.js"))


@lru_cache(maxsize=4)
def script(*names: str) -> tuple[str, str]:
    """Asset scripts as one (the page's only script), and the CSP source that allows exactly it
    and no other."""
    js = "\n".join((HERE / "assets" / name).read_text(encoding="utf-8") for name in names)
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode()
    return js, f"sha256-{digest}"


def num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.3f}"
    return str(value)


def signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def delta_class(delta: float | None, higher_is_better: bool) -> str:
    if not delta:
        return ""
    return "good" if (delta > 0) == bool(higher_is_better) else "bad"


def usage_text(usage: dict[str, Any], key: str) -> str:
    if not usage.get("known"):
        return "none recorded"
    value = usage.get(key)
    return "unknown" if value is None else f"{value:,}"


def cost_text(usage: dict[str, Any]) -> str:
    if not usage.get("known") and not usage.get("calls"):
        return "none (no model calls)"
    cost = usage.get("cost_usd") if usage.get("known") else None
    return "unknown" if cost is None else f"${cost:,.4f}"


def versions_text(versions: dict[str, Any]) -> str:
    parts = []
    for key, value in versions.items():
        if isinstance(value, dict):
            parts.extend(f"{k} {v}" for k, v in value.items())
        else:
            parts.append(f"{key} {value}")
    return ", ".join(parts) or "unknown"


def embed_json(data: Any) -> str:
    """JSON safe inside a <script> element: no '<' can close it, whatever the cases contain."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
    except ValueError:  # a NaN or infinity in some details: JSON.parse would reject the page
        text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


def render_page(template: str, nav: list[tuple[str, str]] | None = None,
                media: dict[str, Any] | None = None, **context: Any) -> str:
    """A page of ``template``; ``media``: its media's sources (``media_view``), which its policy
    allows and its data element carries."""
    from markupsafe import Markup

    from . import media_view

    css, js, script_hash = assets()
    return environment().get_template(template).render(
        css=Markup(css), js=Markup(js), script_hash=script_hash, nav=nav or [],
        media_policy=Markup(media_view.policy(media)), media_element=Markup(media_element(media)),
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), **context)


def media_element(sources: dict[str, dict[str, Any]] | None) -> str:
    """The data element ``media.js`` reads (a page's media sources, ``media_view``); empty for a
    page without media."""
    if not sources:
        return ""
    return f'<script type="application/json" id="evalyard-media">{embed_json(sources)}</script>'


#: Above this much JSON the page carries it gzipped and base64-encoded (a fifth of the size
#: for typical text, see benchmarks/RESULTS.md; level 3 packs nearly as tight as the default
#: level at a fraction of its time); smaller pages keep it as plain text anyone can read or grep.
COMPRESS_ABOVE = 1 << 20


def data_element(data: Any, compress_above: int = COMPRESS_ABOVE) -> str:
    """The <script> element that carries the page's data, gzipped and base64-encoded when large."""
    text = embed_json(data)
    if len(text) <= compress_above:
        return f'<script type="application/json" id="evalyard-data">{text}</script>'
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=3, mtime=0)).decode("ascii")
    return f'<script type="application/octet-stream" id="evalyard-data" data-encoding="gzip-base64">{packed}</script>'


def render_report(gathered: dict[str, Any], compare: dict[str, Any] | None = None,
                  nav: list[tuple[str, str]] | None = None, paging: dict[str, Any] | None = None,
                  media: dict[str, Any] | None = None) -> str:
    from markupsafe import Markup

    table = dict(gathered["table"])
    if compare:
        table["base"] = compare["table"]
    compare_view = {k: v for k, v in compare.items() if k != "table"} if compare else None
    return render_page("report.html.j2", nav=nav, media=media, h=gathered["header"], scorers=gathered["scorers"],
                       compare=compare_view, data_element=Markup(data_element(table)),
                       large=gathered.get("large"), paging=paging, at_k=gathered.get("at_k") or [])
