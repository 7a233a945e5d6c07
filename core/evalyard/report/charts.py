"""Small hand-written SVG charts, rendered on the server so the page needs no chart library."""

from __future__ import annotations

from html import escape

WIDTH, HEIGHT = 320, 120
PAD_LEFT, PAD_BOTTOM, PAD_TOP = 28, 18, 6
BINS = 12


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def histogram_range(low: float, high: float, threshold: float | None = None) -> tuple[float, float]:
    """The span a histogram covers: the values' range, widened to show the threshold."""
    if threshold is not None:
        low, high = min(low, threshold), max(high, threshold)
    if high == low:
        high = low + 1.0
    return low, high


def histogram_svg(values: list[float], threshold: float | None = None, bins: int = BINS) -> str:
    """A histogram of scored values, with the threshold drawn as a dashed line."""
    low, high = histogram_range(min(values), max(values), threshold)
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - low) / (high - low) * bins))] += 1
    return histogram_counts_svg(counts, low, high, threshold)


def histogram_counts_svg(counts: list[int], low: float, high: float, threshold: float | None = None) -> str:
    """A histogram drawn from counts already binned over [low, high] (a large run's come from SQL)."""
    bins = len(counts)
    values = sum(counts)
    top = max(counts) or 1
    plot_w, plot_h = WIDTH - PAD_LEFT - 4, HEIGHT - PAD_BOTTOM - PAD_TOP
    bar_w = plot_w / bins
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
             f'role="img" aria-label="histogram of {values} values">']
    for i, count in enumerate(counts):
        h = plot_h * count / top
        x = PAD_LEFT + i * bar_w
        lo, hi = low + (high - low) * i / bins, low + (high - low) * (i + 1) / bins
        parts.append(f'<rect class="bar" x="{x + 1:.1f}" y="{PAD_TOP + plot_h - h:.1f}" width="{bar_w - 2:.1f}" '
                     f'height="{h:.1f}"><title>{_fmt(lo)} to {_fmt(hi)}: {count}</title></rect>')
    axis_y = PAD_TOP + plot_h
    parts.append(f'<line class="axis" x1="{PAD_LEFT}" y1="{axis_y}" x2="{WIDTH - 4}" y2="{axis_y}"/>')
    parts.append(f'<text class="tick" x="{PAD_LEFT}" y="{HEIGHT - 4}">{_fmt(low)}</text>')
    parts.append(f'<text class="tick" x="{WIDTH - 4}" y="{HEIGHT - 4}" text-anchor="end">{_fmt(high)}</text>')
    parts.append(f'<text class="tick" x="{PAD_LEFT - 4}" y="{PAD_TOP + 8}" text-anchor="end">{top}</text>')
    parts.append(f'<text class="tick" x="{PAD_LEFT - 4}" y="{axis_y}" text-anchor="end">0</text>')
    if threshold is not None:
        x = PAD_LEFT + plot_w * (threshold - low) / (high - low)
        parts.append(f'<line class="threshold" x1="{x:.1f}" y1="{PAD_TOP}" x2="{x:.1f}" y2="{axis_y}">'
                     f'<title>threshold {_fmt(threshold)}</title></line>')
    parts.append("</svg>")
    return "".join(parts)


def label_bars_svg(counts: dict[str, int]) -> str:
    """Horizontal bars, one per label, longest first."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:12]
    row_h, label_w = 18, 110
    height = row_h * len(items) + 4
    top = max(c for _, c in items) or 1
    bar_space = WIDTH - label_w - 40
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
             f'role="img" aria-label="label counts">']
    for i, (label, count) in enumerate(items):
        y = 2 + i * row_h
        w = max(1.0, bar_space * count / top)
        name = escape(label if len(label) <= 16 else label[:15] + "\u2026")
        parts.append(f'<text class="tick" x="{label_w - 6}" y="{y + 12}" text-anchor="end">{name}</text>')
        parts.append(f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row_h - 5}">'
                     f'<title>{escape(label)}: {count}</title></rect>')
        parts.append(f'<text class="tick" x="{label_w + w + 4:.1f}" y="{y + 12}">{count}</text>')
    parts.append("</svg>")
    return "".join(parts)
