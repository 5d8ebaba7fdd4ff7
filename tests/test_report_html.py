"""The HTML report and `calc --plot`: the curves against the engine, the charts' text and marks,
the page's content from the example project (real nvcc), and the page in a real headless
Chromium (DOM, sorting, screenshots at desktop and phone widths, no network)."""

from __future__ import annotations

import io
import os
import random
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, run_main
from harness.system import require

from occlint import gpus, plot
from occlint.curves import curves
from occlint.occupancy import cliffs, compute

SVG = "{http://www.w3.org/2000/svg}"
ARCHS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")


# --- curves: exact against the engine ------------------------------------------------------------


def _configs(n: int, seed: int = 15):
    rng = random.Random(seed)
    for _ in range(n):
        arch = rng.choice(ARCHS)
        block = rng.choice([32, 64, 100, 128, 256, 384, 512, 1024])
        regs = rng.randint(8, 200)
        static = rng.choice([0, 1024, 4096, 16384, 40000])
        dynamic = rng.choice([0, 0, 2048, 30000])
        yield arch, block, regs, static, dynamic


@pytest.mark.parametrize("config", list(_configs(40)), ids=lambda c: "-".join(map(str, c)))
def test_curves_are_the_engine_step_by_step(config):
    arch, block, regs, static, dynamic = config
    by_block, by_regs, by_smem = curves(arch, block, regs, static, dynamic)
    cl = cliffs(arch, block, regs, static, dynamic)
    now = compute(arch, block, regs, static, dynamic)
    for c, dim in ((by_block, cl.block_size), (by_regs, cl.registers), (by_smem, cl.shared_memory)):
        assert c.current_occupancy == now.occupancy
        assert (c.gain, c.loss) == (dim.gain, dim.loss)    # the labels are the calculator's cliffs
    # registers: contiguous runs over 1..255, each flat and each a real edge
    assert by_regs.segments[0].first == 1 and by_regs.segments[-1].last == 255
    for a, b in zip(by_regs.segments, by_regs.segments[1:], strict=False):
        assert b.first == a.last + 1 and b.active_blocks < a.active_blocks
    for s in by_regs.segments:
        for r in {s.first, (s.first + s.last) // 2, s.last}:
            assert compute(arch, block, r, static, dynamic).occupancy == s.occupancy
    # shared memory: the total per block, changed on the dynamic part first (as cliffs does)
    top = gpus.arch(arch).smem_per_block_optin
    assert by_smem.segments[0].first == 0 and by_smem.segments[-1].last == max(top, static + dynamic)
    for s in by_smem.segments:
        for t in {s.first, s.last}:
            st, dy = (static, t - static) if dynamic and t >= static else (min(t, static), 0) \
                if dynamic else (t, 0)
            assert compute(arch, block, regs, st, dy).occupancy == s.occupancy, (t, s)
    # block size: every warp multiple and the current size
    assert [s.first for s in by_block.segments] == sorted({*range(32, 1025, 32), block})
    for s in by_block.segments:
        assert s.occupancy == compute(arch, s.first, regs, static, dynamic).occupancy


def test_block_curve_and_its_cliffs_stop_at_launch_bounds():
    by_block, _, _ = curves("sm_90", 128, 32, max_block_size=256)
    assert [s.first for s in by_block.segments] == [32, 64, 96, 128, 160, 192, 224, 256]
    # 82 registers at 256 threads: 288 threads would gain warps, but __launch_bounds__(256)
    # forbids it, so the nearest gain is a smaller block (192: 3 blocks of 6 warps)
    unbounded, _, _ = curves("sm_80", 256, 82)
    assert unbounded.gain.value == 288
    bounded, _, _ = curves("sm_80", 256, 82, max_block_size=256)
    assert bounded.gain.value == 192 and bounded.gain.result.active_warps == 18
    assert bounded.loss.value == 224
    assert bounded.x_max == 256


# --- charts: text alternative, marks told apart without colour ----------------------------------


def _chart(curve, cid="c"):
    return ET.fromstring(plot.chart(curve, cid, heading=f"{curve.title} (sm_90)"))


def test_chart_has_an_accessible_name_description_and_labelled_marks():
    _, by_regs, _ = curves("sm_90", 256, 48, 16384)
    svg = _chart(by_regs, "k-regs")
    assert svg.get("role") == "img"
    ids = svg.get("aria-labelledby").split()
    found = {el.get("id"): (el.text or "") for el in svg.iter() if el.get("id")}
    assert found[ids[0]] == "Occupancy vs registers per thread (sm_90)"
    desc = found[ids[1]]
    assert "At 48 registers occupancy is 62.5%" in desc
    assert "Nearest gain: 40 registers (shed 8) \u2192 75%" in desc
    assert "Nearest loss: 49 registers (+1) \u2192 50%" in desc
    labels = {el.get("class").split()[1]: el.text for el in svg.iter(f"{SVG}text")
              if "label" in (el.get("class") or "")}
    assert labels == {"now-label": "now 48: 62.5%", "gain-label": "gain 40\u219275%",
                      "loss-label": "loss 49\u219250%"}
    # grayscale: the three marks differ in shape and fill, the two rules in dash pattern
    marks = {el.get("class"): el for el in svg.iter(f"{SVG}path") if el.get("class") in ("now", "gain", "loss")}
    assert set(marks) == {"now", "gain", "loss"}
    shapes = {cls: len(re.findall(r"[MLHZ]", el.get("d"))) for cls, el in marks.items()}
    assert shapes["now"] != shapes["gain"]                       # diamond vs triangle
    assert marks["loss"].get("fill") == "#fff" != marks["gain"].get("fill")   # hollow vs solid
    assert marks["gain"].get("d") != marks["loss"].get("d")
    dashes = {el.get("class"): el.get("stroke-dasharray") for el in svg.iter(f"{SVG}line")
              if el.get("class") in ("gain-rule", "loss-rule")}
    assert dashes["gain-rule"] and dashes["loss-rule"] and dashes["gain-rule"] != dashes["loss-rule"]


@pytest.mark.parametrize("config", list(_configs(60, seed=7)), ids=lambda c: "-".join(map(str, c)))
def test_chart_labels_stay_inside_and_apart(config):
    for curve in curves(*config):
        svg = _chart(curve)
        boxes = []
        for el in svg.iter(f"{SVG}text"):
            if "label" not in (el.get("class") or ""):
                continue
            x, y, w = float(el.get("x")), float(el.get("y")), len(el.text) * 5.6
            assert 0 <= x and x + w <= plot.WIDTH and 0 <= y - 9 and y <= plot.HEIGHT, el.text
            boxes.append((x, y - 9, x + w, y + 2))
        marks = []
        for el in svg.iter(f"{SVG}path"):
            if el.get("class") in ("now", "gain", "loss"):
                nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", el.get("d"))]
                xs = [v for v in nums[0::2]] + [v for v in nums[2::2]]
                ys = nums[1::2]
                marks.append((min(xs) + 1, min(ys) + 1, max(xs) - 1, max(ys) - 1))

        def apart(a, b):
            return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
        overlaps = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if not apart(a, b)]
        assert not overlaps, (curve.kind, overlaps)
        covered = [(a, m) for a in boxes for m in marks if not apart(a, m)]
        assert not covered, (curve.kind, covered)


# --- calc --plot ---------------------------------------------------------------------------------


def test_calc_plot_writes_the_three_curves(tmp_path):
    out = tmp_path / "occ.svg"
    r = run_main("calc", "--arch", "sm_90", "--regs", "48", "--smem", "16K", "--block", "256",
                "--plot", str(out))
    assert r.returncode == 0, r.stderr
    assert "occupancy: 62.5%" in r.stdout                   # the text answer is still printed
    root = ET.parse(out).getroot()
    charts = [el for el in root if el.tag == f"{SVG}svg"]
    assert [c.get("data-kind") for c in charts] == ["block_size", "registers", "shared_memory"]
    assert root.find(f"{SVG}title").text.startswith("sm_90: 256 threads/block, 48 registers/thread")
    assert "Nearest gain: 40 registers (shed 8)" in root.find(f"{SVG}desc").text


def test_calc_plot_needs_an_svg_name(tmp_path):
    r = run_main("calc", "--arch", "sm_90", "--regs", "48", "--plot", str(tmp_path / "occ.png"))
    assert r.returncode == 2
    assert r.stderr.startswith("occlint: error: --plot writes SVG")
    assert not (tmp_path / "occ.png").exists()


# --- the report of the example project (real nvcc) ----------------------------------------------


class _Dom(HTMLParser):
    """Elements by id and class, with their attributes and text (enough for assertions)."""

    def __init__(self):
        super().__init__()
        self.elements: list[dict] = []
        self.stack: list[dict] = []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, **{k: v or "" for k, v in attrs}, "text": ""}
        self.elements.append(el)
        if tag not in ("meta", "br", "line", "circle", "path", "polyline", "input", "img"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data

    def all(self, tag=None, cls=None, **attrs):
        return [e for e in self.elements if (tag is None or e["tag"] == tag)
                and (cls is None or cls in e.get("class", "").split())
                and all(e.get(k.replace("_", "-")) == v for k, v in attrs.items())]


@pytest.fixture(scope="module")
def example_report(tmp_path_factory, nvcc_path):
    work = tmp_path_factory.mktemp("report")
    shutil.copytree(ROOT / "examples", work / "examples")
    out = work / "report.html"
    r = run_cli("report", "--html", str(out), "examples", cwd=work)
    assert r.returncode == 0, r.stderr
    assert f"Wrote {out}: 2 kernels, 3 findings." in r.stderr
    dom = _Dom()
    dom.feed(out.read_text(encoding="utf-8"))
    return out, dom, work


def test_report_is_one_self_contained_file(example_report):
    out, dom, _ = example_report
    text = out.read_text(encoding="utf-8")
    assert not dom.all("link") and not dom.all("img") and not dom.all("iframe")
    assert all(not s.get("src") for s in dom.all("script"))
    assert not re.search(r"url\(|@import|src=\"http", text)
    csp = [m["content"] for m in dom.all("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and csp[0].startswith("default-src 'none'")
    assert len(text.encode()) < 200_000


def test_report_lists_kernels_curves_and_findings(example_report, nvcc_path):
    _, dom, work = example_report
    rows = dom.all("tr", data_arch="sm_90")
    assert {r["data-kernel"] for r in rows} == {"block_reduce_naive", "scale"}
    # the compiler's figures, as `occlint kernels` / ptxas give them
    from occlint.config import load_config
    from occlint.toolchain import collect_usage
    source = str(work / "examples" / "reduce.cu")
    usage = collect_usage([source], load_config(None, start=str(work)))
    regs = {u.kernel: u.registers for u in usage.usage_for(source)}
    assert len(regs) == 2
    for r in rows:
        assert _row_cells(dom, r)[2]["text"] == str(regs[r["data-kernel"]])
    naive = next(r for r in rows if r["data-kernel"] == "block_reduce_naive")
    assert [c["text"] for c in _row_cells(dom, naive)][4:10] == [
        "16 KiB", "1", "100%", "warps", "256", "at launch"]
    scale = next(r for r in rows if r["data-kernel"] == "scale")
    assert [c["text"] for c in _row_cells(dom, scale)][6:8] == ["\u2014", "exceeds __launch_bounds__(256)"]
    # three curves per kernel and arch, each with a title, a description and a table of numbers
    figures = dom.all("figure", cls="chartbox")
    assert sorted(f["data-kind"] for f in figures) == sorted(["block_size", "registers", "shared_memory"] * 2)
    assert len(dom.all("svg", cls="chart")) == 6 and len(dom.all("title")) >= 6
    assert all(d["text"].startswith("At ") for d in dom.all("desc"))
    assert len(dom.all("table", cls="numbers")) == 6
    # findings: snippet, fix diff, and links both ways between kernels and findings
    findings = dom.all("article", cls="finding")
    assert [f["data-code"] for f in findings] == ["OCC020", "OCC032", "OCC031"]
    occ020 = findings[0]
    assert "__shared__ float smem[4096];" in occ020["text"]
    assert "+    extern __shared__ float smem[];" in occ020["text"]
    marks = dom.all("mark")
    assert marks[0]["text"] == "__shared__ float smem[4096];"
    kernel_ids = {a["id"] for a in dom.all("article", cls="kernel")}
    finding_ids = {f["id"] for f in findings}
    links = [a["href"][1:] for a in dom.all("a") if a.get("href", "").startswith("#")]
    assert finding_ids <= set(links) and kernel_ids <= set(links)


def _row_cells(dom, row):
    i = dom.elements.index(row)
    cells = []
    for el in dom.elements[i + 1:]:
        if el["tag"] == "tr":
            break
        if el["tag"] == "td":
            cells.append(el)
    return cells


def test_check_writes_the_html_report_as_an_output_format(tmp_path, nvcc_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    r = run_cli("check", "examples", "--output-format", "concise,html:report.html", cwd=tmp_path)
    assert r.returncode == 1, r.stderr              # findings: check still fails the build
    assert "OCC020" in r.stdout
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="kernel-table"' in page and page.count('class="finding ') == 3
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg"') == 6


# --- in a real browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium():
    return require("chromium", "chromium")


def _not_blank(png: bytes, width: int, height: int) -> None:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("L")
    assert img.size == (width, height)
    hist = img.histogram()
    dark = sum(hist[:128]) / (width * height)
    assert 0.01 < dark < 0.6, f"{dark:.3f} of the pixels are dark"
    assert sum(1 for n in hist if n) > 16                 # text and charts, not a flat fill


def test_report_in_headless_chromium(example_report, chromium, tmp_path):
    from harness.cdp import Browser

    out, _, _ = example_report
    shots = Path(os.environ.get("OCCLINT_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    with Browser(chromium, tmp_path / "profile") as browser:
        page = browser.open_page(offline=True)
        page.set_viewport(1280, 800)
        page.goto(out.as_uri())
        assert page.requests == [out.as_uri()]           # nothing else fetched, offline
        assert page.console_errors == []
        dom = page.eval("""(() => ({
            kernels: [...document.querySelectorAll('#kernel-table tbody tr')].map(r => r.dataset.kernel),
            charts: [...document.querySelectorAll('figure.chartbox svg')].map(s =>
                [s.dataset.kind, s.querySelector('title').textContent, s.querySelector('desc').textContent.length,
                 s.getBoundingClientRect().width, s.querySelectorAll('.now,.gain,.loss').length]),
            findings: [...document.querySelectorAll('article.finding')].map(a => a.dataset.code),
            links: [...document.querySelectorAll('a[href^="#"]')].every(a => document.getElementById(a.hash.slice(1))),
            buttons: document.querySelectorAll('#kernel-table th button').length,
            ink: [...document.querySelectorAll('article.finding .msg')].every(m =>
                getComputedStyle(m).color === getComputedStyle(document.body).color),
        }))()""")
        assert sorted(dom["kernels"]) == ["block_reduce_naive", "scale"]
        assert len(dom["charts"]) == 6
        for kind, title, desc_len, width, marks in dom["charts"]:
            assert title.endswith("(sm_90)") and desc_len > 40 and marks >= 1
            assert width >= 300                            # three in a row at 1280 px
        assert dom["findings"] == ["OCC020", "OCC032", "OCC031"]
        assert dom["links"] and dom["buttons"] == 11
        assert dom["ink"]                                  # messages in body text colour
        # sorting by occupancy: the kernel that cannot launch comes first
        order = page.eval("""(() => { const b = [...document.querySelectorAll('#kernel-table th button')]
            .find(b => b.textContent.trim().startsWith('Occupancy')); b.click();
            return [...document.querySelectorAll('#kernel-table tbody tr')].map(r => r.dataset.kernel); })()""")
        assert order == ["scale", "block_reduce_naive"]
        desktop = page.screenshot(1280, 800)
        (shots / "report-1280x800.png").write_bytes(desktop)
        _not_blank(desktop, 1280, 800)
        page.eval("document.getElementById('kernels').scrollIntoView()")
        charts = page.screenshot(1280, 800)
        (shots / "report-kernels-1280x800.png").write_bytes(charts)
        _not_blank(charts, 1280, 800)
        # phone width: no sideways scrolling of the page, charts one per row and legible
        phone = page.screenshot(390, 844, mobile=True)
        (shots / "report-390x844.png").write_bytes(phone)
        _not_blank(phone, 390, 844)
        fit = page.eval("""(() => {
            const svgs = [...document.querySelectorAll('figure.chartbox svg')];
            const label = svgs[0].querySelector('text.label').getBoundingClientRect();
            return {page: document.documentElement.scrollWidth, view: innerWidth,
                    widest: Math.max(...svgs.map(s => s.getBoundingClientRect().right)),
                    lefts: new Set(svgs.slice(0, 3).map(s => Math.round(s.getBoundingClientRect().left))).size,
                    label: label.height}; })()""")
        assert fit["page"] <= fit["view"] and fit["widest"] <= fit["view"], fit
        assert fit["lefts"] == 1                            # stacked
        assert fit["label"] >= 9, fit                     # chart text stays readable


# --- without nvcc, and with hostile text ----------------------------------------------------------


def _lint(folder, usage):
    from occlint import record
    from occlint.config import load_config
    from occlint.engine import lint_paths

    config = record.replace(load_config(None, start=str(folder)), arch=("sm_90",))
    return lint_paths([str(folder)], config, usage=usage)


def test_report_without_compiler_figures_lists_kernels_but_draws_nothing(tmp_path):
    from occlint import report
    from occlint.emit import html

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    model = report.build(_lint(tmp_path / "examples", {}), root=str(tmp_path))
    assert not model.compiled
    assert {e.name for e in model.kernels} == {"block_reduce_naive", "scale"}
    page = html.page(model)
    assert "nvcc was not available" in page and 'class="chart"' not in page
    assert page.count("No compiler figures for this arch, so no curves.") == 2


def test_report_escapes_source_text_and_names(tmp_path):
    from occlint import report
    from occlint.emit import html
    from occlint.model import Usage

    src = tmp_path / "evil.cu"
    src.write_text('// <script>alert(1)</script> \x1b[31m\n'
                   '__global__ void k(float* p) { p[threadIdx.x] = 1; }\n'
                   'void run(float* p) { k<<<2, 100>>>(p); }  // "</pre><b>x</b>\n')
    usage = {str(src): [Usage("k", "sm_90", 12, source="recorded")]}
    page = html.page(report.build(_lint(tmp_path, usage), root=str(tmp_path)))
    assert "<script>alert" not in page and "</pre><b>x" not in page
    assert "\x1b" not in page and "\\x1b" in page
    dom = _Dom()
    dom.feed(page)
    assert [a["data-code"] for a in dom.all("article", cls="finding")] == ["OCC031"]
    assert len(dom.all("script")) == 1


def test_an_arch_with_the_same_curves_links_to_them_and_library_kernels_get_none(tmp_path):
    from occlint import record, report
    from occlint.config import load_config
    from occlint.emit import html
    from occlint.engine import lint_paths
    from occlint.model import Usage

    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* p) { p[threadIdx.x] = 1; }\n"
                   "void run(float* p) { k<<<1024, 256>>>(p); }\n")
    # sm_90 and sm_100 share every limit, sm_80 does not; `cub::Kernel` is in no source
    usage = {str(src): [Usage("k", a, 32, source="recorded") for a in ("sm_80", "sm_90", "sm_100")]
             + [Usage("cub::Kernel", "sm_90", 40, source="recorded")]}
    config = record.replace(load_config(None, start=str(tmp_path)), arch=("sm_80", "sm_90", "sm_100"))
    model = report.build(lint_paths([str(src)], config, usage=usage), root=str(tmp_path))
    k = next(e for e in model.kernels if e.name == "k")
    assert report.curves_key(k.archs["sm_90"]) == report.curves_key(k.archs["sm_100"])
    assert report.curves_key(k.archs["sm_80"]) != report.curves_key(k.archs["sm_90"])
    lib = next(e for e in model.kernels if e.name == "cub::Kernel")
    assert lib.path is None and not lib.archs["sm_90"].curves
    assert lib.archs["sm_90"].worst.basis == "best"          # still in the table, at its best size
    page = html.page(model)
    dom = _Dom()
    dom.feed(page)
    # sm_80 and sm_90 for k, not sm_100; a chart the same on both is drawn once, then linked
    distinct = {report.curve_key(c) for a in ("sm_80", "sm_90") for c in k.archs[a].curves}
    assert len(dom.all("svg", cls="chart")) == len(distinct) < 6
    assert len(dom.all("p", cls="same-chart")) == 6 - len(distinct)
    same = dom.all("p", cls="same")
    assert len(same) == 1 and f'href="#{k.anchor}-sm_90"' in page
    assert {r["data-kernel"] for r in dom.all("tr", data_arch="sm_90")} == {"k", "cub::Kernel"}


def test_a_finding_folded_over_archs_counts_once_per_arch_and_once_in_total():
    from occlint.emit import html
    from occlint.model import Finding, Span

    f = Finding("OCC010", "register-cliff", "m", "k.cu", Span(3, 5, 3, 9), arch="sm_80,sm_90", kernel="k")
    g = Finding("OCC031", "block-size-not-warp-multiple", "m", "k.cu", Span(4, 5, 4, 9), kernel="k")
    dom = _Dom()
    dom.feed(html.render([f, g], root=".", sources={"k.cu": "a\nb\nc\nd\n"}))
    heads = [th["text"].strip() for th in dom.all("th") if th["text"].strip()][:6]
    assert heads == ["Rule", "Severity", "sm_80", "sm_90", "any", "Total"]
    rows = {}
    for tr in dom.all("tr"):
        cells = _row_cells(dom, tr)
        if cells and cells[0]["text"].startswith("OCC"):
            rows[cells[0]["text"].split()[0]] = [c["text"] for c in cells[2:]]
    assert rows == {"OCC010": ["1", "1", "0", "1"], "OCC031": ["0", "0", "1", "1"]}


def _twin_kernels_page(tmp_path) -> str:
    """The report of two kernels with the same figures on sm_90 (the same three charts)."""
    from occlint import record, report
    from occlint.config import load_config
    from occlint.emit import html
    from occlint.engine import lint_paths
    from occlint.model import Usage

    src = tmp_path / "k.cu"
    src.write_text("__global__ void a(float* p) { p[threadIdx.x] = 1; }\n"
                   "__global__ void b(float* p) { p[threadIdx.x] = 2; }\n"
                   "void run(float* p) { a<<<1024, 256>>>(p); b<<<1024, 256>>>(p); }\n")
    usage = {str(src): [Usage(n, "sm_90", 32, source="recorded") for n in ("a", "b")]}
    config = record.replace(load_config(None, start=str(tmp_path)), arch=("sm_90",))
    return html.page(report.build(lint_paths([str(src)], config, usage=usage), root=str(tmp_path)))


def test_a_chart_the_same_for_another_kernel_is_drawn_once_and_shown_in_place(tmp_path):
    """Two kernels with the same figures: the second kernel's charts reference the first's
    drawings (<use>), with their own accessible names; their numbers link to the first."""
    page = _twin_kernels_page(tmp_path)
    dom = _Dom()
    dom.feed(page)
    svgs = dom.all("svg", cls="chart")
    assert len(svgs) == 6 and len(dom.all("use", cls="again")) == 3
    assert len(dom.all("table", cls="numbers")) == 3 and len(dom.all("p", cls="numbers-ref")) == 3
    titles = [t["text"] for t in dom.all("title") if t["text"].startswith("Occupancy vs")]
    assert len(titles) == 6 and all(t.endswith("(sm_90)") for t in titles)
    for use in dom.all("use", cls="again"):          # each reference names a drawing on the page
        assert f'<g id="{use["href"][1:]}">' in page


def test_a_chart_shown_again_renders_in_chromium(tmp_path, chromium):
    """The <use> of a drawing in another inline SVG resolves in a real browser: the reference
    has the drawing's size and the page shows as many curves as charts."""
    from harness.cdp import Browser

    out = tmp_path / "r.html"
    out.write_text(_twin_kernels_page(tmp_path), encoding="utf-8")
    with Browser(chromium, tmp_path / "profile") as browser:
        page = browser.open_page(offline=True)
        page.set_viewport(1280, 800)
        page.goto(out.as_uri())
        assert page.console_errors == []
        boxes = page.eval("""(() => [...document.querySelectorAll('use.again')].map(u => {
            const b = u.getBBox(), d = document.getElementById(u.getAttribute('href').slice(1)).getBBox();
            return [Math.round(b.width), Math.round(b.height), Math.round(d.width), Math.round(d.height)]; }))()""")
        assert len(boxes) == 3
        for w, h, dw, dh in boxes:
            assert w == dw > 200 and h == dh > 150, boxes
