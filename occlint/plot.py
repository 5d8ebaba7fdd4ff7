"""Plain SVG charts of `occlint.curves`: no library, no script, no fonts to load.

    svg = chart(curve, chart_id="k1-sm_90-regs")      # one <svg> element, for inline HTML
    page = standalone(curves_tuple, heading)           # a whole .svg file with the three charts

Each chart has a <title> and a <desc> (its text alternative), is drawn in one ink colour with
the marks told apart by shape and line pattern (the current point is a filled diamond, the gain
cliff an upward triangle on a dashed rule, the loss cliff a hollow downward triangle on a dotted
rule), and carries each mark's label as text, so it reads the same in grayscale and in print.
"""

from __future__ import annotations

import itertools
from html import escape

from occlint.curves import Curve
from occlint.units import format_size

WIDTH, HEIGHT = 360, 230
LEFT, RIGHT, TOP, BOTTOM = 44, 14, 30, 42
INK = "#1d3f7a"        # the curve
GAIN = "#1a6b32"       # gain cliff (also an upward triangle and a dashed rule)
LOSS = "#a3261b"       # loss cliff (also a hollow downward triangle and a dotted rule)
NOW = "#111111"


def _pct(v: float) -> str:
    return f"{v * 100:.1f}".rstrip("0").rstrip(".") + "%"


def value_text(curve: Curve, x: int) -> str:
    """A value of the varied resource in words: '256 threads', '48 registers', '16 KiB'."""
    if curve.kind == "shared_memory":
        return format_size(x)
    return f"{x} {'threads' if curve.kind == 'block_size' else 'registers'}"


def _ticks(curve: Curve) -> list[int]:
    hi = curve.x_max
    if curve.kind == "shared_memory":
        unit = 1024
        for step_kib in (8, 16, 32, 48, 64, 128):
            if hi / (step_kib * unit) <= 6:
                break
        step = step_kib * unit
    elif curve.kind == "registers":
        step = 32 if hi <= 192 else 64
    else:
        step = 128 if hi <= 512 else 256
        step = 64 if hi <= 256 else step
    return list(range(0, hi + 1, step))


def _tick_label(curve: Curve, x: int) -> str:
    if curve.kind == "shared_memory":
        return f"{x // 1024}K" if x else "0"
    return str(x)


def step_words(curve: Curve, which: str) -> str:
    """'gain: 40 registers (shed 8) -> 75%' or '' when there is no such cliff."""
    s = curve.gain if which == "gain" else curve.loss
    if s is None:
        return ""
    if curve.kind == "block_size":
        move = f"{s.value} threads ({s.delta:+d})"
    elif which == "gain":
        move = f"{value_text(curve, s.value)} (shed {format_size(s.delta) if curve.kind == 'shared_memory' else s.delta})"
    else:
        move = f"{value_text(curve, s.value)} (+{format_size(s.delta) if curve.kind == 'shared_memory' else s.delta})"
    return f"{which}: {move} \u2192 {_pct(s.result.occupancy)}"


def description(curve: Curve) -> str:
    """The chart's text alternative: where the configuration is and where the cliffs are."""
    parts = [f"At {value_text(curve, curve.current)} occupancy is {_pct(curve.current_occupancy)}."]
    gain, loss = step_words(curve, "gain"), step_words(curve, "loss")
    parts.append(f"Nearest gain: {gain[6:]}." if gain else "No change raises occupancy.")
    parts.append(f"Nearest loss: {loss[6:]}." if loss else "No change lowers occupancy.")
    peak = max((s.occupancy for s in curve.segments), default=0.0)
    parts.append(f"Highest on this curve: {_pct(peak)}.")
    return " ".join(parts)


def _occ_at(curve: Curve, x: int) -> float:
    for s in curve.segments:
        if s.first <= x <= s.last:
            return s.occupancy
    return curve.current_occupancy


def _shell(curve: Curve, chart_id: str, heading: str | None, at: tuple[int, int] | None) -> list[str]:
    """The <svg> start tag with the chart's accessible name and description."""
    cid = escape(chart_id, quote=True)
    title = heading or curve.title          # the accessible name; the visible title is shorter
    place = f' x="{at[0]}" y="{at[1]}" width="{WIDTH}" height="{HEIGHT}"' if at else ""
    return [f'<svg xmlns="http://www.w3.org/2000/svg"{place} class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'role="img" aria-labelledby="{cid}-t {cid}-d" data-kind="{curve.kind}">',
            f'<title id="{cid}-t">{escape(title)}</title>',
            f'<desc id="{cid}-d">{escape(description(curve))}</desc>']


def chart_again(curve: Curve, chart_id: str, body_id: str, *, heading: str | None = None) -> str:
    """A chart drawn by `chart(..., body_id=body_id)` earlier in the same page, shown again with
    its own accessible name: the drawing is referenced (<use>), not repeated."""
    return "".join(_shell(curve, chart_id, heading, None)) + \
        f'<use href="#{escape(body_id, quote=True)}" class="again"/></svg>'


def chart(curve: Curve, chart_id: str, *, heading: str | None = None,
          at: tuple[int, int] | None = None, body_id: str | None = None) -> str:
    """One <svg> element; `chart_id` makes its ids unique within a page. `at`: place it at (x, y)
    with its natural size inside another SVG (else it scales to its container's width).
    `body_id`: the drawing is a group of that id, which `chart_again` can show elsewhere."""
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = max(curve.x_max - curve.x_min, 1)

    def X(v: float) -> float:
        return round(LEFT + (v - curve.x_min) * pw / span, 1)

    def Y(v: float) -> float:
        return round(TOP + (1 - v) * ph, 1)

    out = _shell(curve, chart_id, heading, at)
    if body_id is not None:
        out.append(f'<g id="{escape(body_id, quote=True)}">')
    out.append(f'<text x="{LEFT}" y="16" class="ct" font-size="12" font-weight="600">{escape(curve.title)}</text>')
    # grid, axes and ticks: one path each; text attributes on groups (compact, and no CSS needed)
    levels = (0, 0.25, 0.5, 0.75, 1.0)
    ticks = _ticks(curve)
    base = TOP + ph
    out.append(f'<path d="{"".join(f"M{LEFT},{Y(v)}H{LEFT + pw}" for v in levels[1:])}" '
               'stroke="#ccc" stroke-width="0.6"/>')
    out.append(f'<path d="M{LEFT},{TOP}V{base}H{LEFT + pw}{"".join(f"M{X(t)},{base}v4" for t in ticks)}" '
               'fill="none" stroke="#555"/>')
    out.append('<g font-size="10"><g text-anchor="end">'
               + "".join(f'<text x="{LEFT - 4}" y="{Y(v) + 3.5}">{int(v * 100)}%</text>' for v in levels)
               + '</g><g text-anchor="middle">'
               + "".join(f'<text x="{X(t)}" y="{base + 15}">{_tick_label(curve, t)}</text>' for t in ticks)
               + f'<text x="{LEFT + pw / 2}" y="{HEIGHT - 6}" font-size="10.5">{escape(curve.x_label)}</text>'
               "</g></g>")
    # the curve
    if curve.step:
        d = []
        for i, s in enumerate(curve.segments):
            x0, x1, y = X(s.first - (1 if i else 0)), X(s.last), Y(s.occupancy)
            d.append(f"{'M' if i == 0 else 'L'}{x0},{y}H{x1}")
        out.append(f'<path d="{"".join(d)}" fill="none" stroke="{INK}" stroke-width="2" class="curve"/>')
    else:
        pts = " ".join(f"{X(s.first)},{Y(s.occupancy)}" for s in curve.segments)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{INK}" stroke-width="1.5" class="curve"/>')
        # a dot at each point: zero-length segments with round caps (one element, not 32 circles)
        dots = "".join(f"M{X(s.first)},{Y(s.occupancy)}h0" for s in curve.segments)
        out.append(f'<path d="{dots}" stroke="{INK}" stroke-width="3.6" stroke-linecap="round" class="dots"/>')
    # cliffs: a rule from the current level to the cliff's level, a marker and a label
    labels: list[tuple[float, float, str, str, str]] = []
    now_x, now_y = X(curve.current), Y(curve.current_occupancy)
    for which, step, colour, dash in (("gain", curve.gain, GAIN, "4 3"), ("loss", curve.loss, LOSS, "1.5 2.5")):
        if step is None:
            continue
        x, y = X(step.value), Y(step.result.occupancy)
        out.append(f'<line x1="{x}" y1="{now_y}" x2="{x}" y2="{y}" stroke="{colour}" stroke-width="1.3" '
                   f'stroke-dasharray="{dash}" class="{which}-rule"/>')
        if which == "gain":
            out.append(f'<path d="M{x},{y - 6}L{x + 5.5},{y + 4}H{x - 5.5}Z" fill="{colour}" class="gain"/>')
        else:
            out.append(f'<path d="M{x},{y + 6}L{x + 5.5},{y - 4}H{x - 5.5}Z" fill="#fff" stroke="{colour}" '
                       f'stroke-width="1.5" class="loss"/>')
        short = f"{which} {_short(curve, step.value)}\u2192{_pct(step.result.occupancy)}"
        labels.append((x, y, short, colour, which, 1 if step.value >= curve.current else -1))
    out.append(f'<path d="M{now_x},{now_y - 6}L{now_x + 6},{now_y}L{now_x},{now_y + 6}L{now_x - 6},{now_y}Z" '
               f'fill="{NOW}" stroke="#fff" stroke-width="1" class="now"/>')
    cliff_sides = {1 if s.value >= curve.current else -1 for s in (curve.gain, curve.loss) if s}
    labels.append((now_x, now_y, f"now {_short(curve, curve.current)}: {_pct(curve.current_occupancy)}",
                   NOW, "now", -1 if cliff_sides == {1} else 1))     # away from the cliffs
    marks = [(x - 6, y - 7, x + 6, y + 7) for x, y, *_ in labels]      # labels keep off the marks
    out.extend(_place_labels(labels, LEFT, LEFT + pw, TOP, TOP + ph, marks))
    out.append("</g></svg>" if body_id is not None else "</svg>")
    return "".join(out)


def _short(curve: Curve, x: int) -> str:
    if curve.kind == "shared_memory":
        return format_size(x).replace(" ", "")
    return str(x)


def _place_labels(labels, x_lo, x_hi, y_lo, y_hi, marks=()) -> list[str]:
    """Text labels near their marks (on the side `side` points to: the cliff's direction from the
    current point), nudged so that they stay inside the plot and do not overlap."""
    out, taken, avoid = [], [], list(marks)
    char_w, h = 5.6, 11
    order = {"now": 0, "gain": 1, "loss": 2}
    for x, y, text, colour, which, side in sorted(labels, key=lambda item: order[item[4]]):
        w = len(text) * char_w
        sides = (8, -8 - w, -w / 2) if side > 0 else (-8 - w, 8, -w / 2)
        near = [(x + dx, y + dy) for dy in (-10, 16, -22, 28, -34, 40) for dx in sides]

        def grid(x=x, y=y, w=w):         # then anywhere in the plot, nearest first (rarely needed)
            yield from sorted(((gx, gy) for gx in range(int(x_lo), int(x_hi), 8)
                               for gy in range(int(y_lo), int(y_hi) + 1, 6)),
                              key=lambda p: (p[0] + w / 2 - x) ** 2 + (p[1] - y) ** 2)
        best = None
        for lx, ly in itertools.chain(near, grid()):
            lx = min(max(lx, x_lo + 2), x_hi - w)
            if ly - h < y_lo - 14 or ly > y_hi - 2:
                continue
            box = (lx, ly - h + 2, lx + w, ly + 2)
            if any(_overlap(box, t) for t in taken) or any(_overlap(box, m) for m in avoid):
                continue
            best = (lx, ly, box)
            break
        if best is None:
            lx = min(max(x + 8, x_lo + 2), x_hi - w)
            ly = max(min(y - 10, y_hi - 2), y_lo)
            best = (lx, ly, (lx, ly - h + 2, lx + w, ly + 2))
        lx, ly, box = best
        taken.append(box)
        out.append(f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="10" fill="{colour}" '
                   f'class="label {which}-label" paint-order="stroke" stroke="#fff" stroke-width="3">'
                   f'{escape(text)}</text>')
    return out


def _overlap(a, b) -> bool:
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


def table_rows(curve: Curve) -> list[tuple[str, str, str, str]]:
    """The chart's numbers: (value or range, occupancy, blocks/SM, limiter) per point or run."""
    rows = []
    for s in curve.segments:
        if s.first == s.last:
            where = _short(curve, s.first)
        else:
            where = f"{_short(curve, s.first)}\u2013{_short(curve, s.last)}"
        rows.append((where, _pct(s.occupancy), str(s.active_blocks), s.limiter.replace("_", " ")))
    return rows


def standalone(curves: tuple[Curve, ...], heading: str, subheading: str = "") -> str:
    """A self-contained .svg file: a heading (and a second line) and the three charts side by side."""
    gap, top = 10, 48 if subheading else 30
    width = len(curves) * WIDTH + (len(curves) - 1) * gap
    height = HEIGHT + top + 4
    name = f"{heading}: {subheading}" if subheading else heading
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n',
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="occ-t occ-d" '
           'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">',
           f'<title id="occ-t">{escape(name)}</title>',
           f'<desc id="occ-d">{escape(" ".join(c.title + ": " + description(c) for c in curves))}</desc>',
           f'<rect width="{width}" height="{height}" fill="#fff"/>',
           f'<text x="8" y="20" font-size="14" font-weight="600">{escape(heading)}</text>']
    if subheading:
        out.append(f'<text x="8" y="38" font-size="13">{escape(subheading)}</text>')
    for i, c in enumerate(curves):
        out.append(chart(c, f"c{i}", at=(i * (WIDTH + gap), top)).replace(
            ' xmlns="http://www.w3.org/2000/svg"', "", 1))
    out.append("</svg>\n")
    return "".join(out)
