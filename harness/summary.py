"""The table `ways run` prints last, and what it skipped and why."""
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.report import impl_label

STYLE = {"ok": "green", "wrong": "bold red", "failed": "bold red", "unavailable": "dim",
         "not_applicable": "yellow", "compile_only": "cyan"}


def _f(x, spec):
    return "" if x is None else format(x, spec)


def print_summary(doc: dict) -> None:
    console = Console()
    table = Table(title="ways run")
    for col in ("problem", "case", "implementation", "status", "cold ms", "warm ms", "achieved",
                "% peak", "compile s", "LOC", "max rel err"):
        table.add_column(col, justify="right" if col not in ("problem", "case", "implementation", "status") else "left")
    skipped = {}
    for r in doc["records"]:
        if r["status"] == "unavailable":
            skipped[impl_label(r)] = r["reason"]
            continue
        t, c, loc = r.get("timing") or {}, r.get("compile") or {}, r.get("loc") or {}
        achieved = f"{_f(t.get('achieved'), '.4g')} {t.get('unit') or ''}".strip()
        table.add_row(r["problem"], r["case"], escape(impl_label(r)),
                      f"[{STYLE.get(r['status'], '')}]{r['status']}[/]",
                      _f(t.get("device_ms_cold"), ".4g"), _f(t.get("device_ms_warm"), ".4g"), achieved,
                      _f(t.get("pct_of_peak"), ".1f"), _f(c.get("cold_s"), ".3g"),
                      _f(loc.get("total"), "d"), _f(r.get("max_rel_err"), ".1e"))
    console.print(table)
    for label, reason in skipped.items():
        console.print(escape(f"skipped {label}: {reason}"))
    bad = [r for r in doc["records"] if r["status"] in ("wrong", "failed")]
    for r in bad:
        last = (r["error"] or "").strip().splitlines()
        console.print(f"[red]{r['status']}[/] " + escape(f"{impl_label(r)} {r['problem']} {r['case']}: "
                                                         f"{last[-1] if last else ''}"))
