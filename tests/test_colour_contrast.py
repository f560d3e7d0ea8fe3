"""The stylesheet's colours meet WCAG 2.1 AA in the light and the dark scheme.

Reads `reviews/static/beamweaver/css/beamweaver.css` itself: the colour custom properties of `:root` and of
`@media (prefers-color-scheme: dark)`, then every rule that sets a text colour, a
background, an SVG fill, a form control's border or the focus outline, and checks each
pair the page can actually show:

- text (1.4.3): 4.5:1 against its own background, or, when the rule sets none, against
  every page background it can sit on (`--bg`, `--surface`); a background without a text
  colour carries the inherited `--text`;
- non-text (1.4.11), 3:1: the borders of inputs, selects, textareas and buttons, chart
  bars, shapes without text (status dots, legend swatches: a rule sizing a coloured box)
  against the page backgrounds, and the focus outline against every background a
  focusable element sits on.

The stylesheet has no large-text rules, so no pair gets the 3:1 large-text allowance.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = (
    Path(__file__).resolve().parents[1]
    / "reviews"
    / "static"
    / "beamweaver"
    / "css"
    / "beamweaver.css"
)
TEXT = 4.5
NON_TEXT = 3.0
PAGE_BACKGROUNDS = ("bg", "surface")
_VAR = re.compile(r"var\(--([\w-]+)\)")
_HEX = re.compile(r"#[0-9a-fA-F]{6}\b")
_CONTROLS = re.compile(r"\b(input|select|textarea)\b|\.button\b")


def _source() -> str:
    return re.sub(r"/\*.*?\*/", "", CSS.read_text(), flags=re.S)


def _properties(block: str) -> dict[str, str]:
    return {
        name: value.lower() for name, value in re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", block)
    }


def schemes() -> dict[str, dict[str, str]]:
    """The colour custom properties of each scheme (dark falls back on light)."""
    css = _source()
    light = re.match(r"\s*:root\s*\{([^}]*)\}", css)
    dark = re.search(r"@media\s*\(prefers-color-scheme:\s*dark\)\s*\{\s*:root\s*\{([^}]*)\}", css)
    assert light and dark, "expected a :root block and a prefers-color-scheme: dark one"
    base = _properties(light.group(1))
    return {"light": base, "dark": {**base, **_properties(dark.group(1))}}


def rules() -> list[tuple[str, dict[str, str]]]:
    """Every rule below `:root` as (selector, declarations), media blocks flattened."""
    found = []
    for raw, body in re.findall(r"([^{}@;]+)\{([^{}]*)\}", _source()):
        selector = " ".join(raw.split())
        if not selector or selector.startswith(":root") or selector[0].isdigit():
            continue  # custom properties, keyframe steps
        declarations = {}
        for declaration in body.split(";"):
            name, _, value = declaration.partition(":")
            if value.strip():
                declarations[name.strip().lower()] = value.replace("!important", "").strip()
        found.append((selector, declarations))
    return found


def _colour(value: str | None, palette: dict[str, str]) -> str | None:
    """The colour a declaration names (a custom property or a hex), if any."""
    if not value:
        return None
    var = _VAR.search(value)
    if var:
        assert var.group(1) in palette, f"undefined colour property --{var.group(1)}"
        return palette[var.group(1)]
    hex_value = _HEX.search(value)
    return hex_value.group(0).lower() if hex_value else None


def luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def pairs(palette: dict[str, str]) -> list[tuple[str, str, str, float]]:
    """(what, foreground, background, required ratio) for every pair the CSS can show."""
    page = [palette[name] for name in PAGE_BACKGROUNDS]
    every_background = sorted(
        {palette[n] for n in palette if n == "bg" or n.endswith("-bg")} | set(page)
    )
    # Classes of boxes a rule sizes (status dots, legend swatches) draw shapes, not text.
    shapes = {
        name
        for selector, decls in rules()
        if "width" in decls and "height" in decls
        for name in re.findall(r"\.[\w-]+", selector)
    }
    found = []
    for selector, decls in rules():
        colour = _colour(decls.get("color"), palette)
        background = _colour(decls.get("background") or decls.get("background-color"), palette)
        if colour and background:
            found.append((f"{selector} text", colour, background, TEXT))
        elif colour:
            found += [(f"{selector} text", colour, bg, TEXT) for bg in page]
        elif background and set(re.findall(r"\.[\w-]+", selector)) & shapes:
            # A shape with no text (a status dot, a legend swatch): a graphic.
            found += [(f"{selector} shape", background, bg, NON_TEXT) for bg in page]
        elif background:
            found.append((f"{selector} inherited text", palette["text"], background, TEXT))
        fill = _colour(decls.get("fill"), palette)
        if fill:
            required = TEXT if re.search(r"\btext\b", selector) else NON_TEXT
            found += [(f"{selector} fill", fill, bg, required) for bg in page]
        border = _colour(decls.get("border-color") or decls.get("border"), palette)
        if border and _CONTROLS.search(selector):
            found += [(f"{selector} border", border, bg, NON_TEXT) for bg in page]
        outline = _colour(decls.get("outline") or decls.get("outline-color"), palette)
        if outline:
            found += [(f"{selector} outline", outline, bg, NON_TEXT) for bg in every_background]
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_colour_pair_meets_wcag_aa(scheme: str) -> None:
    palette = schemes()[scheme]
    failures = [
        f"{what}: {fg} on {bg} is {contrast(fg, bg):.2f}:1 (needs {required}:1)"
        for what, fg, bg, required in pairs(palette)
        if contrast(fg, bg) < required
    ]
    assert failures == []


def test_the_pairs_that_matter_are_the_ones_checked() -> None:
    """The parser found the rules of body text, muted text, links, buttons, status
    badges, banners, error text, form control borders and the focus outline."""
    checked = {what for what, *_ in pairs(schemes()["light"])}
    for expected in (
        "body text",
        ".muted text",
        "a text",
        ".button text",
        ".button.primary text",
        ".button.danger text",
        ".pill-pending, .pill-interrupted, .pill-queued, .pill-running text",
        ".pill-decided, .pill-succeeded, .pill-completed text",
        ".pill-cancelled, .pill-expired, .pill-failed, .pill-refused text",
        ".banner-error text",
        ".banner-warning text",
        ".field-error, .field-errors text",
        ".kind-tool_review inherited text",
        ".button border",
        ":focus-visible outline",
        ".presence-dot shape",
        ".swatch.bar-5 shape",
    ):
        assert expected in checked, expected
    assert any("textarea border" in what for what in checked)


def test_the_ratio_is_wcags() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
