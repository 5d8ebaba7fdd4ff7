"""`html`: one self-contained page (inline CSS, inline SVG, a few lines of inline script for
sorting), that opens offline from a file:// URL. A Content-Security-Policy forbids every fetch.

    render(findings, root=..., sources=..., result=lint_result)   # the emitter (check --output-format)
    page(model)                                                  # from an occlint.report model

Without `result` (the findings alone) the page has the summary and the findings, no kernels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from html import escape

from occlint import __version__, plot, report
from occlint.emit.encode import xml_text
from occlint.model import Finding
from occlint.report import BUCKETS, ReportModel, occupancy_buckets, shown_path
from occlint.units import format_size

SEVERITIES = ("error", "warning", "info")
DASH = "\u2014"


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None,
           result=None) -> str:
    findings = list(findings)
    if result is not None and result.config is not None:
        model = report.build(result, root=root, findings=findings)
    else:
        model = ReportModel(root, tuple(sorted({a for f in findings for a in archs_of(f)},
                                               key=report.arch_order)), [], findings,
                            dict(sources or {}), sorted({f.path for f in findings}), [], 0.5, False)
    return page(model)


def _pct(v: float | None) -> str:
    return "\u2014" if v is None else f"{v * 100:.1f}".rstrip("0").rstrip(".") + "%"


def _range(pair, fmt=str) -> str:
    if pair is None:
        return "\u2014"
    lo, hi = pair
    return fmt(lo) if lo == hi else f"{fmt(lo)}\u2013{fmt(hi)}"


def _breakable(name: str) -> str:
    """A long qualified name that may wrap after `::`, `<` and `,` (HTML-escaped)."""
    return escape(name).replace("::", "::<wbr>").replace("&lt;", "&lt;<wbr>").replace(",", ",<wbr>")


def archs_of(f: Finding) -> list[str]:
    """The archs a finding holds for: one, several when folded ("sm_80,sm_90"), none."""
    return [a.strip() for a in (f.arch or "").split(",") if a.strip()]


def _limiter(text: str) -> str:
    """A limiter's name in words ("shared memory"); other text (why it cannot launch) as is."""
    from occlint.occupancy import LIMITERS

    return text.replace("_", " ") if text in LIMITERS else text


def _basis(basis: str) -> str:
    return {"launch": "at launch", "launch_bounds": "at __launch_bounds__",
            "best": "best block size"}[basis]


def page(model: ReportModel) -> str:
    root = model.root
    counts = Counter(f.severity for f in model.findings)
    ids = {id(f): f"f{i}" for i, f in enumerate(model.findings, 1)}
    out = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
        "<title>occlint report</title>", f"<style>{CSS}</style></head><body>",
        '<a class="skip" href="#kernels">Skip to kernels</a>',
        "<header><h1>occlint occupancy report</h1>",
        f"<p>{len(model.files)} file{'s' * (len(model.files) != 1)} under <code>{escape(root)}</code>"
        f" \u00b7 archs {escape(', '.join(model.archs) or 'none')} \u00b7 occupancy target "
        f"{_pct(model.min_occupancy)} \u00b7 occlint {escape(__version__)}</p>",
        '<nav aria-label="Sections"><a href="#summary">Summary</a> <a href="#kernels">Kernels</a> '
        '<a href="#findings">Findings</a></nav></header><main>',
    ]
    for notice in model.notices:
        out.append(f'<p class="notice" role="note">{escape(notice)}</p>')
    out += _summary(model, counts)
    out += _kernels(model, ids)
    out += _findings(model, ids)
    out.append(f"</main><script>{SCRIPT}</script></body></html>\n")
    return xml_text("".join(out))      # no control characters or lone surrogates (file names)


def _summary(model: ReportModel, counts: Counter) -> list[str]:
    analysed = len(model.kernels)
    with_usage = sum(1 for e in model.kernels if any(f.usages for f in e.archs.values()))
    out = ['<section id="summary" aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2>',
           '<ul class="cards">',
           f'<li><strong id="n-kernels">{analysed}</strong> kernel{"s" * (analysed != 1)} analysed'
           f' ({with_usage} with compiler figures)</li>',
           f'<li><strong id="n-findings">{len(model.findings)}</strong> finding'
           f'{"s" * (len(model.findings) != 1)}: '
           + ", ".join(f'<span class="sev sev-{s}">{counts.get(s, 0)} {s}</span>' for s in SEVERITIES)
           + "</li></ul>"]
    # findings per rule and severity, per arch
    archs = list(model.archs)
    by_rule: dict[str, Counter] = {}
    totals: Counter = Counter()
    names, sev = {}, {}
    for f in model.findings:
        for a in archs_of(f) or [""]:        # a finding folded over archs counts for each
            by_rule.setdefault(f.code, Counter())[a] += 1
        totals[f.code] += 1
        names[f.code], sev[f.code] = f.name, f.severity
    out.append('<h3>Findings per rule</h3><div class="scroll"><table class="sortable" id="rule-table">'
               '<caption>Findings per rule, severity and arch (\u201cany\u201d: arch-independent)</caption>'
               '<thead><tr><th scope="col">Rule</th><th scope="col">Severity</th>'
               + "".join(f'<th scope="col" class="num">{escape(a)}</th>' for a in archs)
               + '<th scope="col" class="num">any</th><th scope="col" class="num">Total</th></tr></thead><tbody>')
    for code in sorted(by_rule):
        c = by_rule[code]
        out.append(f'<tr><td><a href="#findings" data-filter="{code}">{code}</a> {escape(names[code])}</td>'
                   f'<td data-sort="{SEVERITIES.index(sev[code]) if sev[code] in SEVERITIES else 9}">'
                   f'<span class="sev sev-{escape(sev[code])}">{escape(sev[code])}</span></td>'
                   + "".join(f'<td class="num">{c.get(a, 0)}</td>' for a in archs)
                   + f'<td class="num">{c.get("", 0)}</td><td class="num">{totals[code]}</td></tr>')
    if not by_rule:
        out.append(f'<tr><td colspan="{len(archs) + 4}">No findings.</td></tr>')
    out.append("</tbody></table></div>")
    # occupancy distribution
    if model.kernels:
        buckets = occupancy_buckets(model)
        out.append('<h3>Occupancy distribution</h3><div class="scroll"><table id="dist-table">'
                   "<caption>Kernels by their lowest occupancy, per arch</caption><thead><tr>"
                   '<th scope="col">Occupancy</th>'
                   + "".join(f'<th scope="col">{escape(a)}</th>' for a in archs) + "</tr></thead><tbody>")
        top = max((n for counts_ in buckets.values() for n in counts_), default=1) or 1
        for i, label in enumerate(BUCKETS):
            out.append(f'<tr><th scope="row">{escape(label)}</th>')
            for a in archs:
                n = buckets[a][i]
                out.append(f'<td><span class="bar b{i}" style="width:{n * 120 / top:.0f}px"></span>'
                           f'<span class="barn">{n}</span></td>')
            out.append("</tr>")
        out.append("</tbody></table></div>")
    out.append("</section>")
    return out


def _kernels(model: ReportModel, ids: dict[int, str]) -> list[str]:
    out = ['<section id="kernels" aria-labelledby="kernels-h"><h2 id="kernels-h">Kernels</h2>']
    if not model.kernels:
        out.append("<p>No kernel information: this page was written from findings alone.</p></section>")
        return out
    if not model.compiled:
        out.append('<p class="notice">nvcc was not available: registers, spills and barriers are '
                   "unknown and occupancy ignores registers.</p>")
    out.append('<p>One row per kernel and arch; template instantiations are aggregated (ranges). '
               "Occupancy is the lowest over the kernel\u2019s evaluations. Click a column heading to sort.</p>"
               '<div class="scroll"><table class="sortable" id="kernel-table"><caption>Kernels per arch'
               '</caption><thead><tr><th scope="col">Kernel</th><th scope="col">Arch</th>'
               '<th scope="col" class="num">Registers</th><th scope="col" class="num">Spills (B)</th>'
               '<th scope="col" class="num">Static smem</th><th scope="col" class="num">Barriers</th>'
               '<th scope="col" class="num">Occupancy</th><th scope="col">Limiter</th>'
               '<th scope="col" class="num">Block</th><th scope="col">Basis</th>'
               '<th scope="col" class="num">Findings</th></tr></thead><tbody>')
    for e in model.kernels:
        for arch in model.archs:
            fig = e.archs.get(arch)
            if fig is None:
                continue
            w = fig.worst
            regs = fig.span(lambda u: u.registers)
            spills = fig.span(lambda u: u.spill_stores + u.spill_loads)
            smem = fig.span(lambda u: u.static_smem)
            bars = fig.span(lambda u: u.barriers)
            occ_sort = -1 if w is None or w.occupancy is None else w.occupancy
            n_find = sum(1 for f in e.findings if not f.arch or arch in archs_of(f))
            out.append(
                f'<tr data-kernel="{escape(e.name, quote=True)}" data-arch="{arch}">'
                f'<td><a href="#{e.anchor}">{_breakable(e.name)}</a></td><td>{arch}</td>'
                f'<td class="num" data-sort="{regs[1] if regs else -1}">{_range(regs)}</td>'
                f'<td class="num" data-sort="{spills[1] if spills else -1}">{_range(spills)}</td>'
                f'<td class="num" data-sort="{smem[1] if smem else -1}">{_range(smem, format_size)}</td>'
                f'<td class="num" data-sort="{bars[1] if bars else -1}">{_range(bars)}</td>'
                f'<td class="num" data-sort="{occ_sort:.4f}">{_pct(w.occupancy) if w else DASH}</td>'
                f'<td>{escape(_limiter(w.limiter)) + (" (registers unknown)" if w and w.usage is None else "") if w else ""}</td>'
                f'<td class="num" data-sort="{w.block if w else -1}">{w.block if w and w.block else DASH}</td>'
                f'<td>{_basis(w.basis) if w else ""}</td>'
                f'<td class="num">{n_find}</td></tr>')
    out.append("</tbody></table></div>")
    counter = [0]                          # chart ids: c1, c2, ... (short: a page holds thousands)
    drawings: dict = {}
    for e in model.kernels:
        out += _kernel_detail(model, e, ids, counter, drawings)
    out.append("</section>")
    return out


def _kernel_detail(model: ReportModel, e, ids: dict[int, str], counter: list[int],
                   drawings: dict) -> list[str]:
    """One kernel's section. `drawings`: chart key -> (drawing id, figure id, label) of the
    charts drawn so far in the page, which a chart that is the same everywhere reuses."""
    where = (f"defined at <code>{escape(shown_path(e.path, model.root))}:{e.line}</code>" if e.path
             else "compiled, not found in the sources")
    out = [f'<article class="kernel" id="{e.anchor}" data-kernel="{escape(e.name, quote=True)}">'
           f"<h3>{escape(e.name)}</h3><p>{where}"]
    if len(e.instantiations) > 1 or (e.instantiations and e.instantiations[0] != e.name):
        out.append(" \u00b7 instantiations: " + ", ".join(f"<code>{escape(i)}</code>" for i in e.instantiations))
    out.append("</p>")
    if e.findings:
        out.append('<p>Findings: ' + ", ".join(
            f'<a href="#{ids[id(f)]}">{f.code}{" (" + escape(f.arch) + ")" if f.arch else ""} line {f.span.line}</a>'
            for f in e.findings if id(f) in ids) + "</p>")
    drawn: dict[tuple, str] = {}          # curves key -> the arch whose section shows them
    shown: dict[tuple, tuple[str, str]] = {}   # one chart's key -> (arch, figure id) drawing it
    for arch in model.archs:
        fig = e.archs.get(arch)
        if fig is None:
            continue
        out.append(f'<section class="arch" id="{e.anchor}-{arch}" data-arch="{arch}">'
                   f"<h4>{escape(e.name)} on {arch}</h4>")
        if fig.usages:
            out.append('<p class="usage">' + "; ".join(
                f"<code>{escape(_ulabel(u))}</code>: {u.registers} registers, "
                f"{u.spill_stores + u.spill_loads} B spilled, {format_size(u.static_smem)} static shared memory, "
                f"{u.barriers} barrier{'s' * (u.barriers != 1)}" for u in fig.usages) + "</p>")
        if fig.evaluations:
            out.append('<div class="scroll"><table class="evals"><caption>Occupancy evaluations</caption><thead><tr>'
                       '<th scope="col">Configuration</th><th scope="col">Basis</th><th scope="col" class="num">Block</th>'
                       '<th scope="col" class="num">Dynamic smem</th><th scope="col" class="num">Occupancy</th>'
                       '<th scope="col" class="num">Blocks/SM</th><th scope="col">Limiter</th><th scope="col">Where</th>'
                       "</tr></thead><tbody>")
            for ev in fig.evaluations:
                out.append(f"<tr><td><code>{escape(ev.label)}</code></td><td>{_basis(ev.basis)}</td>"
                           f'<td class="num">{ev.block or DASH}</td><td class="num">{format_size(ev.dynamic_smem)}</td>'
                           f'<td class="num">{_pct(ev.occupancy)}</td><td class="num">{ev.active_blocks}</td>'
                           f"<td>{escape(_limiter(ev.limiter))}</td><td><code>{escape(ev.where)}</code></td></tr>")
            out.append("</tbody></table></div>")
        key = report.curves_key(fig) if fig.curves else None
        if fig.curves and key in drawn:
            same = drawn[key]
            out.append(f'<p class="at same">The curves are those on <a href="#{e.anchor}-{same}">{same}</a>: '
                       "the same limits give the same occupancy at every point.</p>")
        elif fig.curves:
            drawn[key] = arch
            ev = fig.focus
            at = (f"{ev.block} threads/block, {ev.usage.registers} registers/thread, "
                  f"{format_size(ev.static_smem + ev.dynamic_smem)} shared memory/block "
                  f"({_basis(ev.basis)}, <code>{escape(ev.where)}</code>)")
            out.append(f'<p class="at">Curves at {at}:</p><div class="charts">')
            for curve in fig.curves:
                one = report.curve_key(curve)
                if one in shown:           # this chart is drawn for an arch above: a link to it
                    first, fid = shown[one]
                    out.append(f'<p class="same-chart" data-kind="{curve.kind}">{escape(curve.title)}: '
                               f'as on <a href="#{fid}">{first}</a> (the same at every point).</p>')
                    continue
                counter[0] += 1
                fid = f"{e.anchor}-c{counter[0]}"
                shown[one] = (arch, fid)
                heading = f"{curve.title} ({arch})"
                drawing = drawings.get(one)    # the same chart of another kernel: drawn once
                if drawing is None:
                    drawings[one] = (f"b{counter[0]}", fid, f"{e.name} on {arch}")
                    svg = plot.chart(curve, f"c{counter[0]}", heading=heading, body_id=f"b{counter[0]}")
                    numbers = _chart_table(curve)
                else:
                    svg = plot.chart_again(curve, f"c{counter[0]}", drawing[0], heading=heading)
                    numbers = (f'<p class="numbers-ref">Numbers: as in the chart of <a href="#{drawing[1]}">'
                               f"{escape(drawing[2])}</a>.</p>")
                out.append(f'<figure class="chartbox" id="{fid}" data-kind="{curve.kind}">' + svg
                           + f'<figcaption>{escape(plot.description(curve))}</figcaption>'
                           + numbers + "</figure>")
            out.append("</div>")
        elif not fig.usages:
            out.append('<p class="notice">No compiler figures for this arch, so no curves.</p>')
        elif e.path is None:
            out.append("<p>Compiled only (a library or generated kernel): its figures, no curves.</p>")
        out.append("</section>")
    out.append("</article>")
    return out


def _ulabel(u) -> str:
    return f"{u.kernel}<{', '.join(u.template_args)}>" if u.template_args else u.kernel


def _chart_table(curve) -> str:
    head = {"block_size": "Threads per block", "registers": "Registers per thread",
            "shared_memory": "Shared memory per block"}[curve.kind]
    # end tags of cells and rows are implied (HTML): a page holds thousands of these rows
    # numeric columns aligned by the stylesheet (table.numbers), not a class on each cell
    rows = "".join(f'<tr><td>{escape(a)}<td>{b}<td>{c}<td>{escape(d)}'
                   for a, b, c, d in plot.table_rows(curve))
    return (f'<details><summary>Numbers</summary><table class="numbers"><thead><tr><th scope="col">{head}</th>'
            '<th scope="col" class="num">Occupancy</th><th scope="col" class="num">Blocks/SM</th>'
            f'<th scope="col">Limiter</th></tr></thead><tbody>{rows}</tbody></table></details>')


def _findings(model: ReportModel, ids: dict[int, str]) -> list[str]:
    from occlint import fix as fixing

    out = ['<section id="findings" aria-labelledby="findings-h"><h2 id="findings-h">Findings</h2>']
    if not model.findings:
        out.append("<p>No findings.</p>")
    for f in model.findings:
        fid = ids[id(f)]
        path = shown_path(f.path, model.root)
        kernel = model.finding_kernel.get(id(f))
        out.append(f'<article class="finding f-{escape(f.severity)}" id="{fid}" data-code="{f.code}">'
                   f'<h3><span class="sev sev-{escape(f.severity)}">{escape(f.severity)}</span> '
                   f'<a href="{escape(f.url, quote=True)}">{f.code}</a> {escape(f.name)}'
                   f'{" on " + escape(f.arch) if f.arch else ""}</h3>'
                   f'<p class="loc"><code>{escape(path)}:{f.span.line}:{f.span.column}</code>'
                   + (f' \u00b7 kernel <a href="#{kernel}">{escape(f.kernel or "")}</a>' if kernel else
                      (f" \u00b7 kernel <code>{escape(f.kernel)}</code>" if f.kernel else ""))
                   + f'</p><p class="msg">{escape(f.message)}</p>')
        text = model.sources.get(f.path, "")
        out.append(_snippet(f, text))
        if f.fix is not None:
            after = fixing.apply(text, f.fix.edits) if text else ""
            diff = fixing.unified_diff(path, text, after) if text else ""
            label = "safe fix" if f.fix.applicability == "safe" else f"{f.fix.applicability} fix"
            out.append(f'<div class="fix"><p><strong>{escape(label)}:</strong> {escape(f.fix.message)}</p>')
            if diff:
                out.append('<pre class="diff" aria-label="fix as a unified diff">' + "".join(
                    f'<span class="{_diff_class(line)}">{escape(line.rstrip(chr(10))) or " "}</span>'
                    for line in diff.splitlines(keepends=True)) + "</pre>")
            out.append("</div>")
        out.append("</article>")
    out.append("</section>")
    return out


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "dh"
    if line.startswith("@@"):
        return "dhunk"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")


def _snippet(f: Finding, text: str, context: int = 2) -> str:
    from occlint.source.text import split_lines

    lines = split_lines(text)
    if not 1 <= f.span.line <= len(lines):
        return ""
    first, last = max(1, f.span.line - context), min(len(lines), f.span.end_line + context)
    out = ['<pre class="snippet" aria-label="source">']
    for n in range(first, last + 1):
        line = lines[n - 1]
        if f.span.line <= n <= f.span.end_line:
            a = f.span.column - 1 if n == f.span.line else 0
            b = f.span.end_column - 1 if n == f.span.end_line else len(line)
            b = max(b, a + 1) if n == f.span.line == f.span.end_line else b
            body = (escape(line[:a]) + f"<mark>{escape(line[a:b])}</mark>" + escape(line[b:]))
            out.append(f'<span class="ln hl"><span class="no">{n}</span>{body or " "}</span>')
        else:
            out.append(f'<span class="ln"><span class="no">{n}</span>{escape(line) or " "}</span>')
    out.append("</pre>")
    return "".join(out)


CSS = """
:root{--ink:#1b1b1b;--muted:#555;--line:#d0d0d0;--bg:#fff;--soft:#f4f5f7;--link:#1d3f7a}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
header,main{max-width:1240px;margin:0 auto;padding:0 16px}
header{padding-top:12px;border-bottom:1px solid var(--line)}
h1{font-size:1.5rem;margin:.3em 0}
h2{font-size:1.25rem;margin:1.4em 0 .5em;border-bottom:2px solid var(--ink)}
h3{font-size:1.05rem;margin:1.2em 0 .3em}
h4{font-size:.98rem;margin:1em 0 .3em}
a{color:var(--link)}
nav a{margin-right:1em}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:4px}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.notice{background:#fff7d6;border-left:4px solid #8a6d00;padding:6px 10px}
.cards{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:10px}
.cards li{border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--soft)}
.cards strong{font-size:1.3rem;margin-right:.2em}
.scroll{overflow-x:auto;max-width:100%;background:linear-gradient(to right,#fff 30%,#fff0) left/24px 100% no-repeat local,linear-gradient(to left,#fff 30%,#fff0) right/24px 100% no-repeat local,radial-gradient(farthest-side at 0 50%,#0003,#0000) left/10px 100% no-repeat scroll,radial-gradient(farthest-side at 100% 50%,#0003,#0000) right/10px 100% no-repeat scroll}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:14px}
caption{text-align:left;font-weight:600;padding:4px 0;color:var(--muted)}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:var(--soft)}
.num,table.numbers td:nth-child(2),table.numbers td:nth-child(3){text-align:right;font-variant-numeric:tabular-nums}
th button{background:none;border:0;padding:0;margin:0;font:inherit;color:inherit;text-align:inherit;cursor:pointer}
th button:focus-visible{outline:2px solid var(--link)}
th button::after{content:" \\2195";color:var(--muted)}
th[aria-sort=ascending] button::after{content:" \\25B2"}
th[aria-sort=descending] button::after{content:" \\25BC"}
#kernel-table td:first-child{min-width:14em;max-width:26em;overflow-wrap:anywhere}
.sev{display:inline-block;border-radius:3px;padding:0 5px;font-size:.85em;font-weight:600;border:1px solid}
.sev-error{color:#8b0000;border-style:double;border-width:3px}
.sev-warning{color:#6b4a00;border-style:solid}
.sev-info{color:#1d3f7a;border-style:dashed}
.bar{display:inline-block;height:.8em;background:#1d3f7a;margin-right:6px;vertical-align:middle;min-width:1px}
.bar.b0{background:repeating-linear-gradient(45deg,#000 0 3px,#fff 3px 6px);border:1px solid #000}
.bar.b1{background:repeating-linear-gradient(90deg,#333 0 2px,#fff 2px 4px);border:1px solid #333}
.bar.b2{background:#555}.bar.b3{background:#888}.bar.b4{background:#aaa}.bar.b5{background:#ccc;border:1px solid #666}
#dist-table td{min-width:170px;white-space:nowrap}
article.kernel{border-top:1px solid var(--line);padding-top:.3em;content-visibility:auto;contain-intrinsic-size:auto 1000px}
article.finding{content-visibility:auto;contain-intrinsic-size:auto 300px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:12px}
figure.chartbox{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px}
figure.chartbox svg{width:100%;height:auto;display:block;font-family:inherit}
figcaption{font-size:13px;color:var(--muted);margin-top:4px}
details summary{cursor:pointer;font-size:13px;margin-top:4px}
table.numbers{font-size:12.5px}
article.finding{border:1px solid var(--line);border-left-width:6px;border-radius:4px;padding:4px 12px;margin:10px 0}
article.finding.f-error{border-left-style:double;border-left-color:#8b0000}
article.finding.f-warning{border-left-color:#6b4a00}
article.finding.f-info{border-left-style:dashed;border-left-color:#1d3f7a}
article.finding h3{margin:.4em 0 .2em}
.loc{margin:.2em 0;color:var(--muted)}
pre{background:var(--soft);padding:6px 8px;overflow-x:auto;border-radius:4px}
.ln{display:block;white-space:pre}.ln .no{display:inline-block;min-width:3.5em;color:var(--muted);user-select:none}
.ln.hl{background:#fff1b8;font-weight:600}
mark{background:transparent;text-decoration:underline wavy #a3261b 1.5px;text-underline-offset:3px;color:inherit}
.diff .add{display:block;background:#e6f4ea}.diff .add::before{content:""}
.diff .del{display:block;background:#fbe9e7;text-decoration:line-through;text-decoration-color:#999}
.diff .dh,.diff .dhunk{display:block;color:var(--muted)}.diff .ctx{display:block}
@media (max-width:640px){body{font-size:14px}header,main{padding:0 10px}
 th,td{padding:2px 5px}.charts{grid-template-columns:1fr}
 #kernel-table td:first-child{min-width:10em}}
"""

SCRIPT = """
(function(){
function key(td){var v=td.getAttribute('data-sort');if(v===null)v=td.textContent.trim();
 var n=parseFloat(v);return isNaN(n)||!/^-?[0-9.]+$/.test(v)?{s:v.toLowerCase()}:{n:n}}
function cmp(a,b){if(a.n!==undefined&&b.n!==undefined)return a.n-b.n;
 return String(a.s!==undefined?a.s:a.n).localeCompare(String(b.s!==undefined?b.s:b.n))}
document.querySelectorAll('table.sortable').forEach(function(t){
 var ths=t.tHead.rows[0].cells;
 Array.prototype.forEach.call(ths,function(th,i){
  var b=document.createElement('button');b.type='button';
  while(th.firstChild)b.appendChild(th.firstChild);th.appendChild(b);
  b.addEventListener('click',function(){
   var asc=th.getAttribute('aria-sort')!=='ascending';
   Array.prototype.forEach.call(ths,function(o){o.removeAttribute('aria-sort')});
   th.setAttribute('aria-sort',asc?'ascending':'descending');
   var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
   rows.sort(function(r,s){var c=cmp(key(r.cells[i]),key(s.cells[i]));return asc?c:-c});
   rows.forEach(function(r){body.appendChild(r)});
  });
 });
});
})();
"""
