"""Small server-rendered SVG charts for the analytics and simulation pages: no JavaScript,
no external assets, every label escaped. Each chart is an `<svg role="img">` with a title;
the pages show the same numbers in a table beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

WIDTH = 640
ROW = 26
LABEL_WIDTH = 180
VALUE_WIDTH = 90


@dataclass(frozen=True)
class Bar:
    """One bar: its label, its value (for length), and the text shown after it."""

    label: str
    value: float
    text: str
    css: str = "bar"


def _svg(height: int, title: str, body: SafeString) -> SafeString:
    return format_html(
        '<svg viewBox="0 0 {} {}" role="img" aria-label="{}" preserveAspectRatio="xMinYMin meet">'
        "<title>{}</title>{}</svg>",
        WIDTH,
        height,
        title,
        title,
        body,
    )


def _n(value: float) -> str:
    """A coordinate as SVG text (format_html escapes its arguments into strings first)."""
    return f"{value:.1f}"


def _short(label: str, limit: int = 26) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def bars(title: str, rows: Sequence[Bar]) -> SafeString:
    """Horizontal bars, one per row, scaled to the largest value."""
    if not rows:
        return mark_safe("")
    top = max((r.value for r in rows), default=0) or 1
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    parts = []
    for index, row in enumerate(rows):
        y = index * ROW + 4
        width = max(1.0, span * row.value / top) if row.value > 0 else 0
        parts.append(
            format_html(
                '<text x="{}" y="{}" text-anchor="end">{}</text>'
                '<rect class="{}" x="{}" y="{}" width="{}" height="{}" rx="2"></rect>'
                '<text x="{}" y="{}" class="muted-text">{}</text>',
                LABEL_WIDTH - 8,
                y + 14,
                _short(row.label),
                row.css,
                LABEL_WIDTH,
                y,
                _n(width),
                ROW - 8,
                _n(LABEL_WIDTH + width + 6),
                y + 14,
                row.text,
            )
        )
    body = mark_safe("".join(parts))  # each part was built by format_html
    return _svg(len(rows) * ROW + 8, title, body)


def grouped_bars(title: str, labels: Sequence[str], series: Sequence[Bar]) -> SafeString:
    """Two or more bars per label: `series` is flattened label by label (each label has
    `len(series) // len(labels)` consecutive bars, each with its own css class)."""
    if not labels:
        return mark_safe("")
    per = max(1, len(series) // len(labels))
    top = max((b.value for b in series), default=0) or 1
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    bar_height = 12
    group = per * (bar_height + 3) + 10
    parts = []
    for index, label in enumerate(labels):
        y0 = index * group + 4
        parts.append(
            format_html(
                '<text x="{}" y="{}" text-anchor="end">{}</text>',
                LABEL_WIDTH - 8,
                y0 + bar_height,
                _short(label),
            )
        )
        for offset, bar in enumerate(series[index * per : (index + 1) * per]):
            y = y0 + offset * (bar_height + 3)
            width = max(1.0, span * bar.value / top) if bar.value > 0 else 0
            parts.append(
                format_html(
                    '<rect class="{}" x="{}" y="{}" width="{}" height="{}" rx="2"></rect>'
                    '<text x="{}" y="{}" class="muted-text">{}</text>',
                    bar.css,
                    LABEL_WIDTH,
                    y,
                    _n(width),
                    bar_height,
                    _n(LABEL_WIDTH + width + 6),
                    y + bar_height - 1,
                    bar.text,
                )
            )
    return _svg(len(labels) * group + 8, title, mark_safe("".join(parts)))


def stacked(title: str, parts: Sequence[Bar]) -> SafeString:
    """One bar split into its parts (a mix), left to right."""
    total = sum(p.value for p in parts)
    if total <= 0:
        return mark_safe("")
    x = 0.0
    rects = []
    for part in parts:
        width = WIDTH * part.value / total
        if width <= 0:
            continue
        rects.append(
            format_html(
                '<rect class="{}" x="{}" y="0" width="{}" height="28"><title>{}: {}</title></rect>',
                part.css,
                _n(x),
                _n(width),
                part.label,
                part.text,
            )
        )
        x += width
    return _svg(28, title, mark_safe("".join(rects)))


def columns(title: str, labels: Sequence[str], stacks: Sequence[Sequence[Bar]]) -> SafeString:
    """Stacked columns, one per label (e.g. per day), bottom to top."""
    if not labels:
        return mark_safe("")
    height, axis = 160, 20
    top = max((sum(b.value for b in stack) for stack in stacks), default=0) or 1
    step = WIDTH / len(labels)
    parts = [
        format_html(
            '<line class="axis" x1="0" y1="{}" x2="{}" y2="{}"></line>', height, WIDTH, height
        )
    ]
    for index, (label, stack) in enumerate(zip(labels, stacks, strict=True)):
        x = index * step + step * 0.15
        y = float(height)
        for bar in stack:
            h = (height - 10) * bar.value / top
            if h <= 0:
                continue
            y -= h
            parts.append(
                format_html(
                    '<rect class="{}" x="{}" y="{}" width="{}" height="{}">'
                    "<title>{} {}: {}</title></rect>",
                    bar.css,
                    _n(x),
                    _n(y),
                    _n(step * 0.7),
                    _n(h),
                    label,
                    bar.label,
                    bar.text,
                )
            )
        last = index == len(labels) - 1
        if len(labels) <= 14 or index % max(1, len(labels) // 10) == 0 or last:
            # The first and last labels are anchored inside the chart, never clipped.
            anchor = "start" if index == 0 else "end" if last else "middle"
            at = 0 if index == 0 else WIDTH if last else index * step + step / 2
            parts.append(
                format_html(
                    '<text x="{}" y="{}" text-anchor="{}" class="muted-text">{}</text>',
                    _n(at),
                    height + axis - 4,
                    anchor,
                    label,
                )
            )
    return _svg(height + axis, title, mark_safe("".join(parts)))


def legend(items: Sequence[tuple[str, str]]) -> SafeString:
    """A legend: `(css class, label)` pairs."""
    return format_html(
        '<ul class="legend">{}</ul>',
        format_html_join(
            "", '<li><span class="swatch {}" aria-hidden="true"></span>{}</li>', items
        ),
    )


__all__ = ["Bar", "bars", "columns", "grouped_bars", "legend", "stacked"]
