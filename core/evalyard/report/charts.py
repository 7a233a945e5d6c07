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


#: Line colours of the at-k chart's series (a grid's cells), in order; then they repeat.
SERIES_COLOURS = ("#3559c7", "#c23b30", "#1f8a4c", "#8a3ffc", "#d97706", "#0e7490")


def at_k_svg(measure: str, series: list[dict]) -> str:
    """A measure's mean against the cutoff k, one line per series (a run, or a grid's cells), each
    point with its 95% interval as a bar. ``series``: ``{"label", "points": [{"k", "mean",
    "ci95"}]}``. The cutoffs are spaced evenly (1, 5, 10, 100 read better so than on a linear
    axis); the value axis spans [0, 1] unless a value lies outside it."""
    ks = sorted({p["k"] for s in series for p in s["points"]})
    values = [v for s in series for p in s["points"] if p.get("mean") is not None
              for v in (p["mean"], *(p.get("ci95") or ()))]
    low, high = min([0.0, *values]), max([1.0, *values])
    legend_h = 14 * len(series) if len(series) > 1 else 0
    width, height = 360, 170 + legend_h
    left, right, top, bottom = 34, 14, 8, 30 + legend_h
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(k: int) -> float:
        return left + (plot_w * ks.index(k) / (len(ks) - 1) if len(ks) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h * (high - v) / (high - low)

    parts = [f'<svg class="chart at-k" data-measure="{escape(measure)}" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(measure)} at k">']
    for v in (low, (low + high) / 2, high):
        parts.append(f'<line class="grid-line" x1="{left}" y1="{y(v):.1f}" x2="{width - right}" y2="{y(v):.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 4}" y="{y(v) + 3:.1f}" text-anchor="end">{_fmt(v)}</text>')
    axis_y = top + plot_h
    parts.append(f'<line class="axis" x1="{left}" y1="{axis_y}" x2="{width - right}" y2="{axis_y}"/>')
    for k in ks:
        parts.append(f'<text class="tick" x="{x(k):.1f}" y="{axis_y + 12}" text-anchor="middle">{k}</text>')
    parts.append(f'<text class="tick" x="{left + plot_w / 2:.1f}" y="{axis_y + 24}" text-anchor="middle">'
                 f'{escape(measure)}@k: mean and 95% interval</text>')
    for n, s in enumerate(series):
        colour = SERIES_COLOURS[n % len(SERIES_COLOURS)]
        label = escape(str(s["label"]))
        points = [p for p in s["points"] if p.get("mean") is not None]
        parts.append(f'<g class="series" data-series="{n}" data-label="{label}">')
        if len(points) > 1:
            line = " ".join(f"{x(p['k']):.1f},{y(p['mean']):.1f}" for p in points)
            parts.append(f'<polyline class="line" points="{line}" fill="none" stroke="{colour}" stroke-width="1.8"/>')
        for p in points:
            px, py = x(p["k"]), y(p["mean"])
            ci = p.get("ci95")
            tip = f"{label}, {escape(measure)}@{p['k']}: mean {p['mean']:.4f}"
            parts.append(f'<g class="point" data-k="{p["k"]}" data-mean="{p["mean"]:.6g}">')
            if ci:
                tip += f", 95% interval [{ci[0]:.4f}, {ci[1]:.4f}]"
                parts.append(f'<line class="interval" x1="{px:.1f}" y1="{y(ci[0]):.1f}" x2="{px:.1f}" y2="{y(ci[1]):.1f}" '
                             f'stroke="{colour}" stroke-width="1.2"/>')
                for end in ci:
                    parts.append(f'<line class="interval" x1="{px - 3:.1f}" y1="{y(end):.1f}" x2="{px + 3:.1f}" '
                                 f'y2="{y(end):.1f}" stroke="{colour}" stroke-width="1.2"/>')
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.2" fill="{colour}"><title>{tip}</title></circle></g>')
        parts.append("</g>")
        if len(series) > 1:
            ly = height - legend_h + 14 * n + 4
            parts.append(f'<line x1="{left}" y1="{ly:.1f}" x2="{left + 16}" y2="{ly:.1f}" stroke="{colour}" stroke-width="2"/>'
                         f'<text class="tick legend" x="{left + 20}" y="{ly + 3:.1f}">{label}</text>')
    parts.append("</svg>")
    return "".join(parts)
