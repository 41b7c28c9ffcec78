"""Charts drawn on the server as inline SVG: no script (the pages' CSP allows none), no library, and a
table beside each one in the page for screen readers (the SVG itself is one labelled image).

A chart is one bar per day for each series, side by side, on a scale from 0 to the largest value; the
colours are CSS classes of the shipped stylesheet, so the markup holds no style attribute.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 200
LEFT, BOTTOM, TOP = 40, 24, 12  # room for the scale's labels


@dataclass(frozen=True)
class Series:
    """One row of figures of a chart: its name, its CSS class, one value a day."""

    name: str
    css: str
    values: tuple[int, ...]


def bar_chart(label: str, days: tuple[str, ...], series: tuple[Series, ...]) -> Markup:
    """An SVG bar chart of `series` over `days` (YYYY-MM-DD), named `label` for assistive technology."""
    top = max((v for s in series for v in s.values), default=0) or 1
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    slot = plot_w / max(len(days), 1)
    bar = max(slot * 0.8 / max(len(series), 1), 1.0)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH}" y2="{TOP + plot_h}"/>',
        f'<text class="scale" x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{top}</text>',
        f'<text class="scale" x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end">0</text>',
    ]
    for n, day in enumerate(days):
        x0 = LEFT + n * slot + slot * 0.1
        for k, one in enumerate(series):
            value = one.values[n]
            h = plot_h * value / top
            parts.append(
                f'<rect class="{escape(one.css)}" x="{x0 + k * bar:.1f}" y="{TOP + plot_h - h:.1f}" '
                f'width="{bar:.1f}" height="{h:.1f}"><title>{escape(day)}: {value} '
                f"{escape(one.name)}</title></rect>"
            )
    if days:
        parts.append(f'<text class="scale" x="{LEFT}" y="{HEIGHT - 6}">{escape(days[0])}</text>')
        parts.append(
            f'<text class="scale" x="{WIDTH}" y="{HEIGHT - 6}" text-anchor="end">{escape(days[-1])}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
