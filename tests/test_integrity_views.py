"""An integrity flag (a suspect timing, a wrong output) shows in every view, and a flagged row
never counts as a tool's best: CLI tables, headline, report tables, HTML badge, summary.csv."""
import copy
import csv
import io
import json

import pytest

from harness.measure import roofline
from harness.report import markdown
from harness.report.terminal import print_summary
from harness.results import records
from tests.conftest import ROOT

NVRTC = ROOT / "tests/fixtures/results/nvrtc-h100.json"
CASE = "268435456-float32"


@pytest.fixture
def doc():
    """The committed nvrtc run, with its elementwise fp32 bench row made 12% faster than measured
    (above the copy, under the theoretical peak) and its fp16 row marked wrong after timing."""
    d = copy.deepcopy(json.loads(NVRTC.read_text()))
    for r in d["records"]:
        if r["problem"] == "elementwise" and r["kind"] == "bench" and r["case"] == CASE:
            r["timing"]["device_ms_cold"] /= 1.12
        elif r["problem"] == "elementwise" and r["kind"] == "bench" and r["dtype"] == "float16":
            r.update(status="wrong", error="after timing, on new values written into the same input arrays: "
                                            "output 'z': 3 of 5 compared elements off")
    roofline.apply(d)
    return d


def _row(d, dtype):
    return next(r for r in d["records"] if r["problem"] == "elementwise" and r["kind"] == "bench"
                and r["dtype"] == dtype)


def test_the_record_carries_the_flag_and_its_reason(doc):
    cheat, wrong = _row(doc, "float32"), _row(doc, "float16")
    assert records.flag(cheat) == "suspect" and "copy" in cheat["timing"]["suspect"]
    assert records.flag(wrong) == "wrong" and "new values" in records.flag_note(wrong)
    assert records.flag(_row(doc, "bfloat16")) == ""


def test_flagged_rows_never_count_as_best(doc):
    best = markdown.per_impl(doc["records"])[("elementwise", "nvrtc")]["best_pct"]
    assert best == pytest.approx(_row(doc, "bfloat16")["timing"]["pct_of_peak"])
    assert best < _row(doc, "float32")["timing"]["pct_of_peak"]


def test_cli_tables_show_the_flags(doc, capsys):
    print_summary(doc)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if CASE in x and "nvrtc" in x)
    assert "SUSPECT" in line
    assert any("WRONG" in x and "268435456-float16" in x for x in out.splitlines())
    assert "suspect nvrtc elementwise 268435456-float32" in out and "wrong nvrtc elementwise" in out


def test_markdown_headline_and_tables_show_the_flags(doc):
    text = markdown.markdown(doc)
    headline = text.split("## Headline")[1].split("\n## ")[0]
    assert any("nvrtc" in x and CASE in x and "**SUSPECT**" in x for x in headline.splitlines())
    table = text.split("\n## elementwise")[1]
    assert any(CASE in x and "**SUSPECT**" in x for x in table.splitlines())
    assert any("268435456-float16" in x and "**WRONG**" in x for x in table.splitlines())
    assert "cold" in headline and "sustained" in headline     # the timing modes are named


def test_html_page_shows_badges(doc):
    pytest.importorskip("pygments", reason="the HTML page needs pygments (pip install '.[report]')")
    from harness.report import page
    page = page.render(doc, [])
    assert page.count("<span class=flag") >= 2
    assert ">SUSPECT</span>" in page and ">WRONG</span>" in page and "copy measured in the same run" in page


def test_summary_csv_has_the_flag_columns(doc, tmp_path):
    records.write_summary(doc, tmp_path)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "summary.csv").read_text())))
    by = {(r["problem"], r["case"], r["kind"]): r for r in rows}
    assert by[("elementwise", CASE, "bench")]["flag"] == "suspect"
    assert "copy" in by[("elementwise", CASE, "bench")]["flag_reason"]
    assert by[("elementwise", "268435456-float16", "bench")]["flag"] == "wrong"
    assert {"device_ms_sustained", "pct_of_peak_sustained", "sm_clock_mhz_sustained"} <= set(rows[0])
