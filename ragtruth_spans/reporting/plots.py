"""Inline SVG charts for the HTML report: grouped bars (with optional interval whiskers) and line charts.

Each series has a colour from the Okabe–Ito palette (distinguishable with common colour-vision deficiencies)
*and* a pattern (bars) or dash style (lines), so no chart relies on colour alone. Every chart is an ``<svg
role="img">`` with a ``<title>`` and a ``<desc>`` that states its numbers; the same numbers are in the report's
tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
PATTERNS = ("solid", "hatch", "dots", "cross", "back-hatch", "grid")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4")
WIDTH, HEIGHT = 640, 300
MARGIN = {"left": 56, "right": 16, "top": 36, "bottom": 64}


@dataclass(frozen=True)
class BarSeries:
    """One series of a grouped bar chart: a value per category (None: no bar) and optional ``[low, high]``
    intervals drawn as whiskers."""

    name: str
    values: Sequence[float | None]
    intervals: Sequence[Sequence[float] | None] | None = None


@dataclass(frozen=True)
class LineSeries:
    """One line of a line chart: points ``(x, y)`` in data units."""

    name: str
    points: Sequence[tuple[float, float]]


def _pattern_defs(chart_id: str, count: int) -> str:
    shapes = {
        "hatch": '<path d="M0,6 L6,0" stroke="{c}" stroke-width="2"/>',
        "back-hatch": '<path d="M0,0 L6,6" stroke="{c}" stroke-width="2"/>',
        "dots": '<circle cx="3" cy="3" r="1.6" fill="{c}"/>',
        "cross": '<path d="M0,6 L6,0 M0,0 L6,6" stroke="{c}" stroke-width="1.2"/>',
        "grid": '<path d="M3,0 L3,6 M0,3 L6,3" stroke="{c}" stroke-width="1.2"/>',
    }
    defs = []
    for i in range(count):
        kind, colour = PATTERNS[i % len(PATTERNS)], PALETTE[i % len(PALETTE)]
        if kind == "solid":
            continue
        defs.append(f'<pattern id="{chart_id}-p{i}" width="6" height="6" patternUnits="userSpaceOnUse">'
                    f'<rect width="6" height="6" fill="#fff"/>{shapes[kind].format(c=colour)}</pattern>')
    return f"<defs>{''.join(defs)}</defs>" if defs else ""


def _fill(chart_id: str, index: int) -> str:
    if PATTERNS[index % len(PATTERNS)] == "solid":
        return PALETTE[index % len(PALETTE)]
    return f"url(#{chart_id}-p{index})"


def _legend(chart_id: str, names: Sequence[str], *, lines: bool) -> str:
    items, x = [], MARGIN["left"]
    for i, name in enumerate(names):
        colour = PALETTE[i % len(PALETTE)]
        if lines:
            dash = f' stroke-dasharray="{DASHES[i % len(DASHES)]}"' if DASHES[i % len(DASHES)] else ""
            swatch = f'<line x1="{x}" y1="14" x2="{x + 18}" y2="14" stroke="{colour}" stroke-width="2.5"{dash}/>'
        else:
            swatch = (f'<rect x="{x}" y="8" width="14" height="12" fill="{_fill(chart_id, i)}" stroke="{colour}"/>')
        items.append(f'{swatch}<text x="{x + 22}" y="18" class="legend">{escape(name)}</text>')
        x += 30 + 7 * len(name)
    return "".join(items)


def _y_axis(top: float, label: str) -> str:
    plot_h = HEIGHT - MARGIN["top"] - MARGIN["bottom"]
    parts = []
    for k in range(5):
        value = top * k / 4
        y = HEIGHT - MARGIN["bottom"] - plot_h * k / 4
        parts.append(f'<line x1="{MARGIN["left"]}" x2="{WIDTH - MARGIN["right"]}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'class="gridline"/><text x="{MARGIN["left"] - 6}" y="{y + 4:.1f}" text-anchor="end" '
                     f'class="tick">{value:.2f}</text>')
    parts.append(f'<text transform="translate(14,{MARGIN["top"] + plot_h / 2:.0f}) rotate(-90)" '
                 f'text-anchor="middle" class="axis-label">{escape(label)}</text>')
    return "".join(parts)


def _svg(chart_id: str, title: str, desc: str, body: str) -> Markup:
    return Markup(f'<svg id="{chart_id}" class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
                  f'aria-labelledby="{chart_id}-t {chart_id}-d" xmlns="http://www.w3.org/2000/svg">'
                  f'<title id="{chart_id}-t">{escape(title)}</title><desc id="{chart_id}-d">{escape(desc)}</desc>'
                  f'{body}</svg>')


def _describe(categories: Sequence[str], series: Sequence[BarSeries]) -> str:
    parts = []
    for s in series:
        values = ", ".join(f"{c} {'n/a' if v is None else f'{v:.3f}'}" for c, v in zip(categories, s.values))
        parts.append(f"{s.name}: {values}")
    return "; ".join(parts)


def bar_chart(chart_id: str, title: str, categories: Sequence[str], series: Sequence[BarSeries], *,
              y_label: str, top: float | None = None) -> Markup:
    """Grouped bars: one group per category, one bar per series; ``top`` is the y-axis maximum (default: the
    largest value or interval bound)."""
    bounds = [v for s in series for v in s.values if v is not None]
    bounds += [iv[1] for s in series for iv in (s.intervals or ()) if iv is not None]
    top = top or max([*bounds, 1e-9])
    plot_w = WIDTH - MARGIN["left"] - MARGIN["right"]
    plot_h = HEIGHT - MARGIN["top"] - MARGIN["bottom"]
    group_w = plot_w / max(len(categories), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    base = HEIGHT - MARGIN["bottom"]
    parts = [_pattern_defs(chart_id, len(series)), _legend(chart_id, [s.name for s in series], lines=False),
             _y_axis(top, y_label)]
    for c, category in enumerate(categories):
        x0 = MARGIN["left"] + group_w * c + group_w * 0.1
        parts.append(f'<text x="{MARGIN["left"] + group_w * (c + 0.5):.1f}" y="{base + 16}" text-anchor="middle" '
                     f'class="tick">{escape(category)}</text>')
        for i, s in enumerate(series):
            value = s.values[c]
            if value is None:
                continue
            h = plot_h * value / top
            x = x0 + bar_w * i
            label = f"{s.name}, {category}: {value:.3f}"
            parts.append(f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bar_w * 0.9:.1f}" height="{h:.1f}" '
                         f'fill="{_fill(chart_id, i)}" stroke="{PALETTE[i % len(PALETTE)]}">'
                         f'<title>{escape(label)}</title></rect>')
            interval = s.intervals[c] if s.intervals else None
            if interval is not None:
                xm, y_lo, y_hi = x + bar_w * 0.45, base - plot_h * interval[0] / top, base - plot_h * interval[1] / top
                parts.append(f'<path d="M{xm:.1f},{y_lo:.1f} V{y_hi:.1f} M{xm - 4:.1f},{y_lo:.1f} h8 '
                             f'M{xm - 4:.1f},{y_hi:.1f} h8" class="whisker"/>')
    return _svg(chart_id, title, _describe(categories, series), "".join(parts))


def line_chart(chart_id: str, title: str, series: Sequence[LineSeries], *, x_label: str, y_label: str) -> Markup:
    """Lines over the unit square (x and y in [0, 1]), one dash style and colour per series."""
    plot_w = WIDTH - MARGIN["left"] - MARGIN["right"]
    plot_h = HEIGHT - MARGIN["top"] - MARGIN["bottom"]
    base = HEIGHT - MARGIN["bottom"]
    parts = [_legend(chart_id, [s.name for s in series], lines=True), _y_axis(1.0, y_label)]
    for k in range(5):
        x = MARGIN["left"] + plot_w * k / 4
        parts.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle" class="tick">{k / 4:.2f}</text>')
    parts.append(f'<text x="{MARGIN["left"] + plot_w / 2:.0f}" y="{HEIGHT - 20}" text-anchor="middle" '
                 f'class="axis-label">{escape(x_label)}</text>')
    desc = []
    for i, s in enumerate(series):
        path = " ".join(f"{'M' if j == 0 else 'L'}{MARGIN['left'] + plot_w * x:.1f},{base - plot_h * y:.1f}"
                        for j, (x, y) in enumerate(s.points))
        dash = DASHES[i % len(DASHES)]
        parts.append(f'<path d="{path}" fill="none" stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="2.5"'
                     f'{f" stroke-dasharray={chr(34)}{dash}{chr(34)}" if dash else ""}>'
                     f'<title>{escape(s.name)}</title></path>')
        desc.append(f"{s.name}: {len(s.points)} points")
    return _svg(chart_id, title, "; ".join(desc), "".join(parts))
