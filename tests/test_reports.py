"""Reports for people: `ways report --html` (figures, one self-contained page, merged runs) and
`ways compare` (verdicts from both runs' spread), on real results committed from the H100."""
import copy
import json
import re
import shutil

import pytest

import backends
import problems
from harness.report import markdown
from harness.results import compare, merge, records
from tests.conftest import ROOT
from tests.test_cli import ways

CUTE = ROOT / "tests/fixtures/results/cute_dsl-h100.json"
NVRTC = ROOT / "tests/fixtures/results/nvrtc-h100.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def scaled(doc: dict, factor: float, backend: str, gpu: str | None = None) -> dict:
    """A copy of `doc` in which `backend`'s timings take `factor` times as long (and, given `gpu`,
    ran on another GPU whose peaks scale the same way, so its % of peak is unchanged)."""
    doc = copy.deepcopy(doc)
    doc["run"]["id"] += "-b"
    if gpu:
        doc["environment"]["device"]["name"] = gpu
        doc["environment"]["gpus"][0]["name"] = gpu
    for r in doc["records"]:
        t = r.get("timing")
        if not t:
            continue
        f = factor if r["backend"] == backend else 1.0
        g = f if gpu is None else 1.0
        for key in ("device_ms_cold", "device_ms_warm", "host_ms"):
            t[key] *= f
        for key in ("median_ms", "q1_ms", "q3_ms"):
            t["cold"][key] *= f
        t["pct_of_peak"] /= g
    return doc


@pytest.fixture(scope="module")
def html_report(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install '.[report]')")
    pytest.importorskip("pygments", reason="the HTML page needs pygments (pip install '.[report]')")
    out = tmp_path_factory.mktemp("report")
    r = ways("report", str(CUTE), str(NVRTC), "--html", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_figures_exist_and_are_not_empty(html_report):
    figures = html_report / "figures"
    for name in ("compile-times", "loc-vs-peak", "crosscheck", "scorecard", "gemm-8192x8192x8192-bfloat16",
                 "segreduce-1048576x256-float32", "elementwise-268435456-float32"):
        png, svg = figures / f"{name}.png", figures / f"{name}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000, png
        assert "<svg" in svg.read_text() and svg.stat().st_size > 5000, svg


def test_html_report_says_where_the_page_is(tmp_path):
    r = ways("report", str(CUTE), "--html", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert f"page: {(tmp_path / 'index.html').resolve()}" in r.stdout and (tmp_path / "index.html").is_file()


def test_figures_are_reproducible(html_report, tmp_path):
    """The same results give byte-identical figures (no date, fixed SVG ids), so a regenerated
    committed report differs only where its results do."""
    r = ways("report", str(CUTE), str(NVRTC), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    again = sorted((tmp_path / "figures").iterdir())
    assert again and all(f.read_bytes() == (html_report / "figures" / f.name).read_bytes() for f in again)


def test_page_is_self_contained_with_tables_figures_and_source(html_report):
    page = (html_report / "index.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "the page loads something from a network"
    assert page.count("<table class=sortable>") >= 7 and page.count("<svg") >= 10
    # each problem shows both backends' source, escaped and highlighted, with LOC and compile time
    assert page.count("backends/cute_dsl/gemm.py") == 1 and "HopperGemm" in page
    assert "backends/nvrtc/gemm.py" in page and "&lt;typename T" in page and 'class="highlight"' in page
    assert "compile 0.828 s cold" in page and "LOC" in page
    assert "NVIDIA H100 80GB HBM3" in page and "nvidia-cutlass-dsl" in page


def test_merged_report_names_its_runs(html_report):
    doc = json.loads((html_report / "results.json").read_text())
    ids = {m["id"] for m in doc["run"]["merged_from"]}
    assert ids == {merge.load(CUTE)["run"]["id"], merge.load(NVRTC)["run"]["id"]}
    # the cuBLAS rows both runs measured appear once; each record says where it came from
    keys = [(r["problem"], r["case"], r["backend"], r["variant"]) for r in doc["records"]]
    assert len(keys) == len(set(keys)) and all(r["source"]["run"] in ids for r in doc["records"])
    text = (html_report / "report.md").read_text()
    assert "Merged from these runs" in text and "measured in each of the 2 timed runs: **" in text


def test_a_report_comes_with_its_manifest(html_report):
    """manifest.json: each run's command, dates and commit, the GPUs and driver."""
    found = json.loads((html_report / "manifest.json").read_text())
    cute = merge.load(CUTE)
    run = next(r for r in found["runs"] if r["id"] == cute["run"]["id"])
    assert run["command"] == "ways " + " ".join(cute["run"]["argv"]) and run["started"] and run["finished"]
    assert run["commit"] == cute["environment"]["git_commit"]
    assert found["gpus"][0]["name"].startswith("NVIDIA H100") and found["gpus"][0]["driver"]
    assert len(found["runs"]) == 2 and found["records"] > 0


def test_merged_environment_has_every_runs_commit_and_packages():
    cute, nvrtc = merge.load(CUTE), merge.load(NVRTC)
    env = merge.merge([nvrtc, cute])["environment"]     # the first run had no CuTe DSL installed
    assert env["git_commit"] == f"{nvrtc['environment']['git_commit']}, {cute['environment']['git_commit']}"
    assert env["versions"]["nvidia-cutlass-dsl"] == "4.8.1" and env["versions"]["torch"] == "2.11.0"
    other = copy.deepcopy(cute)
    other["run"]["id"] += "-b"
    other["environment"]["versions"]["torch"] = "2.12.0"
    assert merge.merge([cute, other])["environment"]["versions"]["torch"] == "2.11.0 / 2.12.0"


def test_a_merge_keeps_a_verdict_over_a_row_left_skipped_or_failed():
    """Lanes of a resumed run: one lane's row skipped after a time-out, another lane's rerun of it
    not applicable: whichever file is named last, the verdict is kept (an ok row over a failed one)."""
    a = merge.load(CUTE)
    b = copy.deepcopy(a)
    b["run"]["id"] += "-b"
    first, second = a["records"][0], b["records"][0]
    first.update(status="skipped", reason="not run: another case timed out", timing=None)
    second.update(status="not_applicable", reason="no kernel for this case", timing=None)
    for docs in ([a, b], [b, a]):
        kept = [r for r in merge.merge(docs)["records"] if r["case"] == first["case"]
                and (r["backend"], r["variant"]) == (first["backend"], first["variant"])]
        assert [r["status"] for r in kept] == ["not_applicable"]
    second.update(status="failed", error="timed out")
    first.update(status="ok")
    for docs in ([a, b], [b, a]):
        assert first["case"] in {r["case"] for r in merge.merge(docs)["records"] if r["status"] == "ok"}


def test_merging_runs_from_two_gpus_tags_each_implementation():
    a = merge.load(CUTE)
    b = scaled(a, 0.8, "cute_dsl", gpu="NVIDIA H200")
    doc = merge.merge([a, b], ["h100.json", "h200.json"])
    labels = {(r["source"]["tag"], r["backend"]) for r in doc["records"]}
    assert ("H100", "cute_dsl") in labels and ("H200", "cute_dsl") in labels
    assert len(doc["records"]) == 2 * len(a["records"])
    text = markdown.markdown(doc)
    assert text.startswith("# ways results: NVIDIA H100 80GB HBM3 + NVIDIA H200")
    assert "- Device-to-device copy on NVIDIA H200, measured in this run: **" in text


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (Debian: apt-get install chromium)")
def test_page_in_headless_chromium(html_report, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright drives chromium (pip install playwright)")
    errors = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((html_report / "index.html").as_uri())
        table = page.locator("h2#gemm ~ table.sortable").first          # gemm's timed cases
        header = table.locator("th", has_text="cold ms")
        column = [h.inner_text() for h in table.locator("th").all()].index("cold ms")

        def cold_ms():
            return [float(c) for c in table.locator(f"tbody tr td:nth-child({column + 1})").all_inner_texts()]
        header.click()
        ascending = cold_ms()
        header.click()
        descending, sort_state = cold_ms(), header.get_attribute("aria-sort")
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=False)
        browser.close()
    assert not errors, errors
    assert ascending == sorted(ascending) and descending == sorted(descending, reverse=True) and len(ascending) > 3
    assert sort_state == "descending"
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20000


def test_compare_same_gpu_finds_the_slowdown_and_exits_1(tmp_path):
    a = merge.load(NVRTC)
    b = scaled(a, 1.5, "nvrtc")
    verdicts = {(v.case, v.implementation): v for v in compare.compare(a, b, 0.05)}
    slow = verdicts[("8192x8192x8192-bfloat16", "nvrtc")]
    assert slow.verdict == "slower" and slow.regression and slow.change == pytest.approx(0.5)
    assert verdicts[("8192x8192x8192-bfloat16", "array_api[torch]")].verdict == "same"
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    r = ways("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert r.returncode == 1 and "slower (regression)" in r.stdout and "device time yes" in r.stdout
    faster = ways("compare", str(tmp_path / "b.json"), str(tmp_path / "a.json"))
    assert faster.returncode == 0 and "faster" in faster.stdout
    assert "GPU A / B" not in faster.stdout             # records that name no GPU: no column for it
    for r in b["records"]:                              # B from a --gpus run: its records name their GPU
        r["gpu"] = {"index": 1, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-x", "host": "h"}
    table = compare.render(a, b, compare.compare(a, b, 0.05), 0.05)
    assert "| GPU A / B |" in table and "| slower (regression) | - / 1 |" in table
    assert "on the same GPU" not in table                # A's records name no GPU: nothing to tell apart
    for r in a["records"]:                              # A on the same chip for the cuBLAS rows, another for the rest
        uuid = "GPU-x" if r["backend"] == "array_api" else "GPU-y"
        r["gpu"] = {"index": 0 if uuid == "GPU-y" else 1, "name": "NVIDIA H100 80GB HBM3", "uuid": uuid, "host": "h"}
    verdicts = compare.compare(a, b, 0.05)
    table = compare.render(a, b, verdicts, 0.05)
    same_chip = [v for v in verdicts if v.same_chip]
    assert same_chip and all(v.implementation.startswith("array_api") for v in same_chip)
    n = len(same_chip)
    assert f"on the same GPU (UUID) in both: {n} case(s): 0 faster, 0 slower, {n} same" in table
    assert "on different GPUs: " in table


def test_compare_with_a_repeat_judges_b_by_how_a_agrees_with_itself(tmp_path):
    """Lanes against one GPU: B may differ from A in as many cases as A's own repeat does, plus one,
    and no case's % of peak may move more than 3 points beyond what it moved in the repeat."""
    a = merge.load(NVRTC)
    repeat = scaled(a, 1.02, "nvrtc")                    # the repeat: nvrtc 2% slower, spreads apart
    cases = compare.equivalence(a, repeat, repeat)
    assert cases.cases > 0 and cases.not_same == cases.not_same_repeat and cases.holds
    moved = scaled(repeat, 1.15, "array_api")            # B: cuBLAS rows 15% slower on top
    worse = compare.equivalence(a, repeat, moved)
    torch_cases = sum(1 for v in compare.compare(a, moved) if v.implementation.startswith("array_api"))
    assert worse.not_same == worse.not_same_repeat + torch_cases and not worse.holds
    for name, doc in (("a", a), ("a2", repeat), ("b", repeat), ("c", moved)):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    ok = ways("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--repeat", str(tmp_path / "a2.json"))
    assert ok.returncode == 0 and "agrees with A as well as A agrees with itself: yes" in ok.stdout, ok.stdout
    bad = ways("compare", str(tmp_path / "a.json"), str(tmp_path / "c.json"), "--repeat", str(tmp_path / "a2.json"))
    assert bad.returncode == 1 and "itself: no" in bad.stdout


def test_compare_same_chip_judges_only_the_cases_b_timed_on_a_s_gpu(tmp_path):
    """Lanes are several chips: with --same-chip, B's cases on another chip than A's do not count."""
    a = merge.load(NVRTC)
    for r in a["records"]:
        r["gpu"] = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-a", "host": "h"}
    repeat = copy.deepcopy(a)
    b = scaled(a, 1.15, "array_api")                     # cuBLAS rows 15% slower: timed on another chip
    for r in b["records"]:
        if r["backend"] == "array_api":
            r["gpu"] = {**r["gpu"], "index": 1, "uuid": "GPU-b"}
    assert not compare.equivalence(a, repeat, b).holds
    chip = compare.equivalence(a, repeat, b, same_chip=True)
    on_a = sum(1 for v in compare.compare(a, b) if v.same_chip)
    assert chip.holds and chip.cases == on_a > 0 and chip.not_same == 0
    for name, doc in (("a", a), ("a2", repeat), ("b", b)):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    files = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    r = ways("compare", *files, "--repeat", str(tmp_path / "a2.json"), "--same-chip")
    assert r.returncode == 0 and "(those B timed on A's GPU)" in r.stdout and "itself: yes" in r.stdout, r.stdout
    assert ways("compare", *files, "--same-chip").returncode == 2


def test_compare_with_a_repeat_holds_each_case_to_its_own_move():
    a = merge.load(NVRTC)
    key = next((r["problem"], r["case"]) for r in a["records"] if r["backend"] == "nvrtc" and r.get("timing"))
    b = copy.deepcopy(a)
    for r in b["records"]:                               # one case's % of peak 5 points off, its time the same
        if r["backend"] == "nvrtc" and (r["problem"], r["case"]) == key and r.get("timing"):
            r["timing"]["pct_of_peak"] -= 5
    e = compare.equivalence(a, copy.deepcopy(a), b)
    assert e.worst[0][0] == pytest.approx(5) and e.worst[0][1:3] == key and not e.holds


def test_compare_overlapping_spreads_is_same_or_ambiguous():
    a = merge.load(NVRTC)
    small = {(v.case, v.implementation): v.verdict for v in compare.compare(a, scaled(a, 1.0005, "nvrtc"), 0.05)}
    assert small[("8192x8192x8192-bfloat16", "nvrtc")] == "same"
    wide = scaled(a, 1.08, "nvrtc")
    for r in wide["records"]:           # spreads so wide they overlap though the medians differ by 8%
        if r["backend"] == "nvrtc" and r.get("timing"):
            r["timing"]["cold"]["q1_ms"] *= 0.5
            r["timing"]["cold"]["q3_ms"] *= 1.5
    verdicts = {(v.case, v.implementation): v for v in compare.compare(a, wide, 0.05)}
    assert verdicts[("8192x8192x8192-bfloat16", "nvrtc")].verdict == "ambiguous"
    assert not verdicts[("8192x8192x8192-bfloat16", "nvrtc")].regression


def test_compare_across_gpus_uses_percent_of_peak(tmp_path):
    a = merge.load(CUTE)
    b = scaled(a, 0.7, "cute_dsl", gpu="NVIDIA H200")          # faster in ms, same % of peak
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    r = ways("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert r.returncode == 0, r.stdout
    assert "device time no" in r.stdout and "% of peak yes" in r.stdout and "compared: % of peak" in r.stdout
    assert all(v.verdict == "same" for v in compare.compare(a, b))


@pytest.mark.parametrize("args,msg", [
    (["report", "nope.json"], "no results file at nope.json"),
    (["compare", "nope.json", "nope2.json"], "no results file"),
    (["compare", str(CUTE), str(CUTE), "--threshold", "-1"], "must be a fraction"),
])
def test_bad_report_and_compare_input(args, msg):
    r = ways(*args)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr


def test_scorecard_takes_its_figures_from_the_records():
    from harness.report import scorecard
    doc = merge.merge([merge.load(CUTE), merge.load(NVRTC)], ["cute", "nvrtc"])
    rows = {r["implementation"]: r for r in scorecard.rows(doc)}
    for label, row in rows.items():
        recs = [r for r in doc["records"] if markdown.impl_label(r) == label]
        pcts = [r["timing"]["pct_of_peak"] for r in recs if (r.get("timing") or {}).get("pct_of_peak") is not None]
        assert row["best % of peak"] == (max(pcts) if pcts else None)
        colds = [r["compile"]["cold_s"] for r in recs if (r.get("compile") or {}).get("cold_s") is not None]
        assert row["compile cold s"] == (max(colds) if colds else None)
        assert row["LOC"] == sum({r["problem"]: r["loc"]["total"] for r in recs}.values())
    assert rows["nvrtc"]["ahead of time"] == "sm_90a" and rows["cute_dsl"]["ahead of time"] == "sm_90a"
    assert "## Scorecard" in markdown.markdown(doc)


def test_scorecard_of_two_gpus_has_a_row_per_implementation_and_peak_columns_per_gpu():
    from harness.report import scorecard
    a = merge.load(CUTE)
    doc = merge.merge([a, scaled(a, 0.8, "cute_dsl", gpu="NVIDIA H200")], ["h100.json", "h200.json"])
    rows = {r["implementation"]: r for r in scorecard.rows(doc)}
    assert "cute_dsl" in rows and not any("@" in label for label in rows)
    for (problem, tag) in {(r["problem"], r["source"]["tag"]) for r in doc["records"]}:
        pcts = [r["timing"]["pct_of_peak"] for r in doc["records"] if r["backend"] == "cute_dsl" and not r["variant"]
                and (r["problem"], r["source"]["tag"]) == (problem, tag)
                and (r.get("timing") or {}).get("pct_of_peak") is not None]
        assert rows["cute_dsl"]["per problem"].get(f"{problem} {tag}") == (max(pcts) if pcts else None)
    header, _, _ = scorecard.table(doc)
    assert "% peak gemm H100" in header and "% peak gemm H200" in header
    from harness.report import slides                # the code slides' caption: the % on each GPU
    problem = next(p for p in ("gemm", "segreduce", "elementwise") if len(slides.best_rows(doc, p)) == 2)
    caption = slides.caption(doc, problem, "cute_dsl", slides.best_rows(doc, problem))
    for tag, best in slides.best_rows(doc, problem).items():
        assert f"{tag} {best['cute_dsl']['timing']['pct_of_peak']:.1f}%" in caption


CANONICAL = ROOT / "reports" / "h100" / "results.json"


def canonical_problems() -> list[str]:
    """The problems the canonical run has rows of (a problem added since has its views from its own run)."""
    return sorted({r["problem"] for r in merge.load(CANONICAL)["records"]})
PANEL_TITLE = re.compile(r">(\w+) \((?:no kernel|SIMT|tile|tensor-core DSL|C\+\+|other)\)<")


def slide_text_px(svg: str) -> list[float]:
    """Every text size of a slide's SVG, in pixels of the 1920-pixel-wide slide."""
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
    return [float(px) * 1920 / width for px in re.findall(r"font-size: ([\d.]+)px", svg)]


def png_size(path):
    import struct
    return struct.unpack(">II", path.read_bytes()[16:24])


def test_slides_a_room_can_read(tmp_path):
    """The canonical run's slides: 1920x1080, no glyph under 14 px, at most six code panels a slide,
    each named tool on a code slide, every problem with its verdict slide, the page linking them."""
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install '.[report]')")
    from harness.report.slide_canvas import MIN_GLYPH_PX
    named = ["array_api", "cuda_coop", "numba_simt", "triton", "helion", "cute_dsl", "nvrtc"]      # > 6: two slides
    r = ways("report", str(CANONICAL), "--slides", "--slide-tools", ",".join(named), "--html", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    slides = tmp_path / "slides"
    pngs = sorted(slides.glob("*.png"))
    assert {p.stem for p in pngs} >= {f"verdict-{p}" for p in canonical_problems()} | {"overview"}
    for png in pngs:
        assert png_size(png) == (1920, 1080), png.name
        svg = png.with_suffix(".svg").read_text()
        sizes = slide_text_px(svg)
        assert sizes and min(sizes) >= MIN_GLYPH_PX - 0.01, (png.name, min(sizes))
    for problem in canonical_problems():
        code = sorted(slides.glob(f"code-{problem}*.svg"))
        panels = [PANEL_TITLE.findall(svg.read_text()) for svg in code]
        assert all(1 <= len(p) <= 6 for p in panels), (problem, panels)
        shown = [t for p in panels for t in p]
        files = [backends.source_path(t, problem) for t in named]
        expressible = [t for t, f in zip(named, files, strict=True)
                       if f.is_file() and "not_expressible" not in f.read_text()]
        assert shown == expressible, (problem, shown)            # each once, in the order named
        assert all("lines" in svg.read_text() for svg in code)   # how many lines the whole file has
    page = (tmp_path / "index.html").read_text()
    assert all(f"slides/{p.name}" in page for p in pngs)
    assert "NVIDIA H100" in (slides / "overview.svg").read_text()     # the footer: GPU and date
    assert re.search(r"run \d{4}-\d\d-\d\d", (slides / "overview.svg").read_text())


def test_the_committed_slides_of_the_canonical_run_are_all_there_at_1920x1080():
    """The PNGs kept (their glyph sizes are checked on the slides test_slides_a_room_can_read writes
    again from the same results: the SVGs are not kept)."""
    committed = sorted((CANONICAL.parent / "slides").glob("*.png"))
    assert {p.stem for p in committed} >= {f"verdict-{p}" for p in canonical_problems()} | {"overview"}
    assert {p.stem.split("-")[1] for p in committed if p.stem.startswith("code-")} == set(canonical_problems())
    for png in committed:
        assert png_size(png) == (1920, 1080), png.name


def test_slides_of_two_gpus_have_a_verdict_and_an_overview_each(tmp_path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install '.[report]')")
    from harness.report import slides
    a = merge.load(CUTE)
    doc = merge.merge([a, scaled(a, 0.8, "cute_dsl", gpu="NVIDIA H200")], ["h100.json", "h200.json"])
    names = {p.stem for p in slides.write(doc, tmp_path, ["cute_dsl"])}
    tags = {tag for p in problems.names() for tag in slides.best_rows(doc, p)}
    assert len(tags) == 2 and {f"overview-{t}" for t in tags} <= names
    assert any(n.startswith("code-") for n in names)
    footer = (tmp_path / f"overview-{sorted(tags)[0]}.svg").read_text()
    assert "H100" in footer and "H200" in footer


def test_slide_tools_names_only_known_backends(tmp_path):
    r = ways("report", str(CUTE), "--slide-tools", "triton,nope", "--out", str(tmp_path))
    assert r.returncode == 2 and "--slide-tools: unknown backend 'nope' (valid: array_api" in r.stderr, r.stderr


def test_default_code_slides_show_one_tool_per_family(tmp_path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install '.[report]')")
    from harness.report import slides
    doc = merge.load(CANONICAL)
    for problem in ("segreduce", "attention"):
        tools = slides.default_tools(slides.best_rows(doc, problem))
        families = [backends.get(t).family for t in tools]
        assert len(families) == len(set(families)) >= 4, (problem, tools)
        best = slides.best_rows(doc, problem)[None]
        for t in tools:                                           # each its family's best at the headline case
            same = [r for n, r in best.items() if backends.get(n).family == backends.get(t).family]
            assert best[t]["timing"]["pct_of_peak"] == max(r["timing"]["pct_of_peak"] for r in same)


def test_the_kernel_is_found_in_every_implementation_file():
    from harness.report import kernel_source
    for name in backends.names():
        for problem in backends.problems_of(name):
            source = backends.source_path(name, problem).read_text()
            lines, total = kernel_source.excerpt(source)
            if "not_expressible" in source:
                assert not lines
                continue
            assert lines and len(lines) < total, (name, problem)
            assert not any(line.startswith(("import ", "from ")) for _, line in lines), (name, problem)   # module level
    for problem in backends.problems_of("nvrtc"):                # C++ in a string, shown as C++
        nvrtc = kernel_source.spans(backends.source_path("nvrtc", problem).read_text())
        assert [s.language for s in nvrtc] == ["cuda"], problem


def test_a_compile_figure_measured_in_one_lane_joins_the_rows_another_lane_ran():
    """A resumed --gpus run: lane 1 measured nvrtc scan's compile processes before the call's limit,
    the resume dealt its rows to lane 0. Lane 1's document, with no row of that implementation, keeps
    the figure, and the merge puts it on lane 0's rows of the same GPU model."""
    row = merge.load(CUTE)["records"][0]
    run = {"type": "run", "run": {"id": "lane", "started": "t", "argv": [], "kinds": ["test"], "complete": False},
           "environment": {"gpus": [{"name": "NVIDIA H200"}]}}
    figure = {"case": row["case"], "cold_s": 2.9, "warm_s": 1.7}
    key = {"backend": row["backend"], "variant": row["variant"], "problem": row["problem"]}
    lane1 = records.merge([run, {"type": "compile", **key, "compile": figure}, {"type": "end", "run": {}}])
    lane0 = records.merge([run, {"type": "record", "record": {**row, "compile": None}}, {"type": "end", "run": {}}])
    assert lane1["records"] == [] and lane1["compiles"] == [{**key, "compile": figure}]
    assert "compiles" not in lane0 and lane0["records"][0]["compile"] is None
    for docs in ([lane0, lane1], [lane1, lane0]):
        doc = merge.merge(docs, ["gpu0", "gpu1"])
        assert [r["compile"] for r in doc["records"]] == [figure] and "compiles" not in doc
    other = {**lane1, "environment": {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}}   # another GPU model's
    doc = merge.merge([lane0, other], ["h200", "h100"])
    assert doc["records"][0]["compile"] is None and doc["compiles"] == [{**key, "compile": figure}]
