"""Markdown summary of a results document (the HTML report and figures build on the same rows)."""
from __future__ import annotations

from collections import defaultdict


def _fmt(x, spec=".3g"):
    return "" if x is None or x == "" else format(x, spec) if isinstance(x, (int, float)) else str(x)


def impl_label(r: dict) -> str:
    return f"{r['backend']}[{r['variant']}]" if r["variant"] else r["backend"]


def markdown(doc: dict) -> str:
    env = doc["environment"]
    dev = env.get("device") or {}
    gpus = env.get("gpus") or []
    gpu_name = dev.get("name") or (gpus[0]["name"] if gpus else "no GPU")
    lines = [f"# ways results — {gpu_name}", "",
             f"Run {doc['run']['id']} started {doc['run']['started']}"
             f"{'' if doc['run'].get('complete') else ' (incomplete: interrupted)'}; "
             f"commit {env.get('git_commit') or '?'}; Python {env['python']}.", ""]
    refs = doc.get("references") or {}
    if refs:
        lines += ["Peaks: " + "; ".join(f"{k} {_fmt(v)}" for k, v in refs.get("summary", {}).items()), ""]
    by_problem = defaultdict(list)
    for r in doc["records"]:
        by_problem[r["problem"]].append(r)
    for problem in sorted(by_problem):
        rows = by_problem[problem]
        lines += [f"## {problem}", "",
                  "| case | kind | implementation | status | device ms (cold) | device ms (warm) | host ms |"
                  " achieved | % of peak | compile cold s | compile warm s | LOC (kernel) | max rel err |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        notes = []
        for r in sorted(rows, key=lambda r: (r["kind"] != "bench", r["case"], impl_label(r))):
            t = r.get("timing") or {}
            c = r.get("compile") or {}
            loc = r.get("loc") or {}
            achieved = f"{_fmt(t.get('achieved'), '.4g')} {t.get('unit') or ''}".strip()
            lines.append(f"| {r['case']} | {r['kind']} | {impl_label(r)} | {r['status']} | "
                         f"{_fmt(t.get('device_ms_cold'), '.4g')} | {_fmt(t.get('device_ms_warm'), '.4g')} | "
                         f"{_fmt(t.get('host_ms'), '.4g')} | {achieved} | {_fmt(t.get('pct_of_peak'), '.1f')} | "
                         f"{_fmt(c.get('cold_s'))} | {_fmt(c.get('warm_s'))} | "
                         f"{_fmt(loc.get('total'), 'd')} ({_fmt(loc.get('kernel'), 'd')}) | "
                         f"{_fmt(r.get('max_rel_err'), '.2e')} |")
            if r["status"] in ("unavailable", "not_applicable") and r["reason"]:
                notes.append(f"{impl_label(r)}: {r['reason']}")
            elif r["status"] in ("wrong", "failed"):
                notes.append(f"{impl_label(r)} on {r['case']}: {r['status']}: "
                             f"{(r['error'] or '').strip().splitlines()[-1] if r['error'] else ''}")
        lines.append("")
        for n in dict.fromkeys(notes):
            lines.append(f"- {n}")
        if notes:
            lines.append("")
    worst = {}
    for x in doc.get("crosscheck") or []:
        key = (x["problem"], x["case"])
        if key not in worst or x["max_rel_diff"] > worst[key]["max_rel_diff"]:
            worst[key] = x
    if worst:
        lines += ["## Cross-check (largest pairwise difference per test case)", "",
                  "| problem | case | pair | max abs diff | max rel diff |", "|---|---|---|---:|---:|"]
        for (p, c), x in sorted(worst.items()):
            lines.append(f"| {p} | {c} | {x['a']} vs {x['b']} | {_fmt(x['max_abs_diff'], '.2e')} | "
                         f"{_fmt(x['max_rel_diff'], '.2e')} |")
        lines.append("")
    return "\n".join(lines)
