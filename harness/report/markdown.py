"""Markdown summary of a results document: peaks, timed bench cases, correctness, compile time
and size per implementation, cross-check."""
from __future__ import annotations

from collections import defaultdict

from harness.report import verdict
from harness.report.style import fmt
from harness.results.merge import gpu_name
from harness.results.records import QUICK_NOTE, counts, flag, flag_note, impl_label, loud, quick_runs

# what a compile figure's named parts are
PART_NAMES = {"tool_compile_s": "the tool's own compile (inside compiling(): e.g. cute.compile, NVRTC)",
              "autotune_s": "autotuning"}


def mode_pair(t: dict, cold_key: str, sustained_key: str, spec: str) -> str:
    """'cold / sustained' of one figure, e.g. '1.39 / 1.6' (the cold one alone where a run has no
    sustained figure: a host timer, or a run from before the mode existed)."""
    cold, sus = t.get(cold_key), t.get(sustained_key)
    return fmt(cold, spec) if sus is None else f"{fmt(cold, spec)} / {fmt(sus, spec)}"


def time_pair(t: dict) -> str:
    return mode_pair(t, "device_ms_cold", "device_ms_sustained", ".4g")


def pct_pair(t: dict) -> str:
    return mode_pair(t, "pct_of_peak", "pct_of_peak_sustained", ".1f")


def clock_pair(t: dict) -> str:
    """Mean SM clock (MHz) in the cold and the sustained samples."""
    cold, sus = (t.get("cold") or {}).get("sm_clock_mhz"), (t.get("sustained") or {}).get("sm_clock_mhz")
    return "" if cold is None and sus is None else f"{fmt(cold, '.0f')} / {fmt(sus, '.0f')}"


def per_impl(records: list[dict]) -> dict[tuple[str, str], dict]:
    """(problem, implementation) -> test-case tallies, worst error, compile figures, LOC, reasons,
    longest build, best % of peak (cold, and sustained) over the rows that count (see flag())."""
    out: dict[tuple[str, str], dict] = {}
    for r in records:
        row = out.setdefault((r["problem"], impl_label(r)), {"counts": defaultdict(int), "worst": None,
                                                             "compile": r.get("compile") or {},
                                                             "loc": r.get("loc") or {}, "notes": [],
                                                             "first_build_s": 0.0, "best_pct": None,
                                                             "best_pct_sustained": None})
        row["counts"][r["status"]] += 1
        for key in ("best_pct", "best_pct_sustained"):
            pct = (r.get("timing") or {}).get(key.replace("best_pct", "pct_of_peak")) if counts(r) else None
            if pct is not None and (row[key] is None or pct > row[key]):
                row[key] = pct
        # the longest build in the run: the cold one, where a run skipped the compile processes
        row["first_build_s"] = max(row["first_build_s"], r["build_s"] or 0.0)
        if r.get("max_rel_err") is not None and r["status"] == "ok":
            row["worst"] = max(row["worst"] or 0.0, r["max_rel_err"])
        note = r["reason"] if r["status"] in ("unavailable", "not_applicable") else \
            (f"{r['case']}: {flag_note(r)}" if flag(r) else "")
        if note and note not in row["notes"]:
            row["notes"].append(note)
    return out


def _span(values: list[float], show) -> str:
    """'3007' or '3006-3010'."""
    low, high = show(min(values)), show(max(values))
    return low if low == high else f"{low}-{high}"


def _ceiling_lines(doc: dict) -> list[str]:
    """The measured ceilings (copy, read stream), per GPU, as a span over the runs merged into this document."""
    refs = doc.get("references") or {}
    by_run = doc.get("references_by_run") or {doc["run"]["id"]: refs}
    gpu_of = {m["id"]: m["gpu"] for m in doc["run"].get("merged_from") or []}
    mem = (refs.get("theoretical") or {}).get("memory_bytes_per_s")
    lines = []
    for key, what, pattern in (("copy_bytes_per_s", "Device-to-device copy", "read + write"),
                               ("read_bytes_per_s", "Read stream", "read only")):
        per_gpu: dict[str, list[float]] = {}
        for run, r in by_run.items():
            if key in r:
                per_gpu.setdefault(gpu_of.get(run, ""), []).append(r[key])
        for gpu, values in per_gpu.items():
            where = "measured in this run" if len(values) == 1 else f"measured in each of the {len(values)} timed runs"
            lines.append(f"- {what}{' on ' + gpu if len(per_gpu) > 1 else ''}, {where}: "
                         f"**{_span(values, lambda c: f'{c / 1e9:.0f}')} GB/s** ({pattern})"
                         + (f", {_span(values, lambda c: f'{100 * c / mem:.1f}')}% of the theoretical "
                            f"{mem / 1e9:.0f} GB/s" if mem and len(per_gpu) == 1 else "") + ".")
    return lines


def _peaks(doc: dict) -> list[str]:
    refs = doc.get("references") or {}
    if not refs or "copy_bytes_per_s" not in refs:
        return [f"Peaks: not measured ({refs.get('error', 'no GPU bench case in this run')[:200]})."] if refs else []
    theo = refs.get("theoretical") or {}
    flops = ", ".join(f"{dt} {v / 1e12:.0f}" for dt, v in (theo.get("flops_per_s") or {}).items())
    return _ceiling_lines(doc) + [
        f"- Theoretical dense TFLOP/s: {flops or 'unknown for this GPU'} ({theo.get('basis', '')}).",
        f"- % of peak: a memory-bound problem against a stream of its own access pattern measured in the same run, "
        f"a compute-bound one against its vendor rows on the same case in the same run ({_bases_of_problems(doc)})."]


def _bases_of_problems(doc: dict) -> str:
    """What each problem of the run is judged against, in its order of problems."""
    import problems
    from harness.measure.roofline import CEILING_BASIS
    present = {r["problem"] for r in doc.get("records", [])}
    out = []
    for p in (problems.get(n) for n in problems.names() if n in present):
        if p.roofline == "memory":       # as the run's rows were judged (a run from before a pattern had its own)
            basis = next(((r.get("timing") or {}).get("peak_basis") for r in doc["records"] if r["problem"] == p.name
                          and ((r.get("timing") or {}).get("peak_basis") or "").endswith(", same run, cold")), None)
            out.append(f"{p.name}: {basis.split(',')[0] if basis else CEILING_BASIS[p.ceiling]}")
        else:                            # the vendor rows the run's rows were judged against
            used = sorted({basis.split(" on the same case")[0] for r in doc["records"] if r["problem"] == p.name
                           and " on the same case" in (basis := (r.get("timing") or {}).get("peak_basis") or "")})
            which = "the fastest of" if p.vendor_reference == "fastest" else "the first timed of"
            out.append(f"{p.name}: {' or '.join(used)}" if used else f"{p.name}: {which} {', '.join(p.vendor)}")
    return "; ".join(out)


def headline(doc: dict) -> list[str]:
    """Per problem, one row per implementation: its time on the problem's first bench case (else on
    its first timed bench case) in both timing modes, % of peak, compile cold / warm, LOC and its
    integrity flag (a flagged row is shown, never counted as a best)."""
    import problems
    stats = per_impl(doc["records"])
    lines = ["## Headline", "", "Device time and % of peak in both timing modes: **cold** (L2 flushed before each "
             "sample, the GPU idle between samples, so it runs at its boost clock) / **sustained** (back-to-back "
             "calls for about a second, no flush: the clock a power-bound kernel settles at). They differ most "
             "for compute-bound cases (large GEMMs run at the power limit); % of peak compares each mode with "
             "the reference measured the same way. The SM clock column gives the mean MHz of each.", "",
             "| problem | implementation | case | device ms cold / sustained | achieved (cold) |"
             " % of peak cold / sustained | SM MHz cold / sustained | compile cold / warm s | LOC | flag |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for problem in sorted({r["problem"] for r in doc["records"]}):
        order = [c.name for c in problems.get(problem).cases() if c.kind == "bench"]
        timed = defaultdict(list)
        for r in doc["records"]:
            t = r.get("timing") or {}
            if r["problem"] == problem and r["kind"] == "bench" and (t.get("device_ms_cold") or t.get("suspect")):
                timed[impl_label(r)].append(r)
        rank = {c: i for i, c in enumerate(order)}
        shown = {label: min(rows, key=lambda r: rank.get(r["case"], len(order))) for label, rows in timed.items()}
        for label, r in sorted(shown.items(), key=lambda kv: (rank.get(kv[1]["case"], len(order)), kv[0])):
            t, s = r["timing"], stats[(problem, label)]
            compile_cell = (f"{fmt(s['compile'].get('cold_s'))} / {fmt(s['compile'].get('warm_s'))}"
                            if s["compile"].get("cold_s") else f"first build {fmt(s['first_build_s'])}")
            lines.append(f"| {problem} | {label} | {r['case']} | {time_pair(t)} | "
                         f"{fmt(t.get('achieved'), '.4g')} {t.get('unit') or ''} | "
                         f"{pct_pair(t)} | {clock_pair(t)} | "
                         f"{compile_cell} | {fmt(s['loc'].get('total'), 'd')} | {_flag_cell(r)} |")
    return lines + [""] if len(lines) > 5 else []


def held_note(t: dict) -> str:
    """" (held)" where the sustained window of a host-bound tool waited behind a GPU-side gate while its
    calls were queued (the host hidden), " (host)" where the gate ended first (the host showed)."""
    sus = t.get("sustained") or {}
    return " (held)" if sus.get("host_hidden") == "gate" else " (host)" if sus.get("exposed") else ""


def reference_cell(t: dict) -> str:
    """What a row's cold % was computed from: the reference's label and time (in the row's own state
    where it was timed beside the row: "cuBLAS 1.37, beside it")."""
    ref = t.get("reference") or {}
    if not ref.get("ms"):
        return ""
    beside = "" if not ref.get("adjacent") or ref["adjacent"] == ref["label"] else f" (by {ref['adjacent']} beside it)"
    return f"{ref['label']} {ref['ms']:.4g}{beside}"


def _flag_cell(r: dict) -> str:
    """The integrity flag in bold, and "quick" for a row of a quick run (a selection, not a fault)."""
    return " ".join(([f"**{loud(flag(r))}**"] if flag(r) else []) + (["quick"] if r.get("quick") else []))


def title(doc: dict) -> str:
    """'ways results: GPU', naming every GPU of a merged document."""
    gpus = dict.fromkeys(m["gpu"] for m in doc["run"].get("merged_from") or []) or [gpu_name(doc)]
    return "ways results: " + " + ".join(gpus)


def lead(doc: dict) -> list[str]:
    """What a reader sees first: what the run found, a sentence a problem, and the overview figure."""
    found = verdict.findings(doc)
    return ["## What this run found", "", *[f"- {line}" for line in found], "",
            "![the headline case of each problem](figures/overview.png)", ""] if found else []


def markdown(doc: dict) -> str:
    env = doc["environment"]
    gpus = env.get("gpus") or []
    driver = f", driver {gpus[0]['driver']} (CUDA {gpus[0]['driver_cuda']})" if gpus else ""
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())
    commits = env.get("git_commit") or "not recorded"
    lines = [f"# {title(doc)}", "", *lead(doc),
             f"Run {doc['run']['id']}, started {doc['run']['started']}"
             f"{'' if doc['run'].get('complete') else ' (incomplete: interrupted)'}"
             f"{', ' + str(doc['run'].get('duration_s')) + ' s' if doc['run'].get('duration_s') else ''};"
             f" commit{'s' if ', ' in commits else ''} {commits}; Python {env['python']}{driver}.", "",
             f"Versions: {versions}.", ""]
    if quick_runs(doc):
        lines += [f"Rows marked quick come from a {QUICK_NOTE}.", ""]
    merged = doc["run"].get("merged_from")
    if merged:
        lines += ["Merged from these runs (where two measured the same implementation and case on one GPU, "
                  "the one from the file named last is shown):", ""]
        lines += [f"- `{m['file']}`: run {m['id']}, {m['gpu']}, started {m['started']}, commit "
                  f"{m['commit'] or 'not recorded'}{'' if m['complete'] else ' (incomplete)'}" for m in merged]
        lines.append("")
    table = verdict.markdown(doc)
    lines += ["## Verdict", "", table] if table.strip() else []
    lines += _peaks(doc) + [""]
    lines += headline(doc)
    from harness.report import scorecard
    lines += scorecard.markdown_lines(doc)
    by_problem = defaultdict(list)
    for r in doc["records"]:
        by_problem[r["problem"]].append(r)
    for problem in sorted(by_problem):
        rows = by_problem[problem]
        lines += [f"## {problem}", ""]
        timed = [r for r in rows if r.get("timing")]
        if timed:
            lines += ["| case | implementation | device ms cold (IQR) | sustained ms | SM MHz cold / sustained |"
                      " host ms | launch µs | achieved (cold) | % of peak cold / sustained | reference (cold ms) |"
                      " % of theoretical (cold) | engine | flag |",
                      "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|"]
            for r in sorted(timed, key=lambda r: (r["case"], impl_label(r))):
                t = r["timing"]
                cold = t.get("cold") or {}
                iqr = (f" ({fmt(cold.get('q1_ms'), '.4g')}–{fmt(cold.get('q3_ms'), '.4g')})"
                       if cold.get("q1_ms") else "")
                lines.append(f"| {r['case']} | {impl_label(r)} | {fmt(t.get('device_ms_cold'), '.4g')}{iqr} | "
                             f"{fmt(t.get('device_ms_sustained'), '.4g')}{held_note(t)} | {clock_pair(t)} | "
                             f"{fmt(t.get('host_ms'), '.4g')} | {fmt(t.get('launch_us'), '.3g')} | "
                             f"{fmt(t.get('achieved'), '.4g')} {t.get('unit') or ''} | "
                             f"{pct_pair(t)} | {reference_cell(t)} | {fmt(t.get('pct_of_theoretical'), '.1f')} | "
                             f"{t.get('engine', '')} | {_flag_cell(r)} |")
            lines.append("")
        lines += ["| implementation | ok | compile only | not applicable | wrong | failed | skipped | unavailable |"
                  " worst rel err | compile cold s | compile warm s | first call s | LOC (kernel) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        notes = []
        for (_, label), s in sorted(per_impl(rows).items()):
            c, comp, loc = s["counts"], s["compile"], s["loc"]
            lines.append(f"| {label} | {c['ok']} | {c['compile_only']} | {c['not_applicable']} | {c['wrong']} | "
                         f"{c['failed']} | {c['skipped']} | "
                         f"{c['unavailable']} | {fmt(s['worst'], '.2e')} | {fmt(comp.get('cold_s'))} | "
                         f"{fmt(comp.get('warm_s'))} | {fmt(comp.get('first_call_s'))} | "
                         f"{fmt(loc.get('total'), 'd')} ({fmt(loc.get('kernel'), 'd')}) |")
            notes += [f"- {label}: {n}" for n in s["notes"]]
            notes += [f"- {label}: no warm compile figure: {comp['warm_note']}"] if comp.get("warm_note") else []
            warm_parts = comp.get("warm_parts_s") or {}
            notes += [f"- {label}: of the cold compile, {PART_NAMES.get(name, name.removesuffix('_s'))} took "
                      f"{seconds:.3g} s (median)" + (f"; warm (its cache filled) {warm_parts[name]:.3g} s"
                                                     if name in warm_parts else "")
                      for name, seconds in (comp.get("cold_parts_s") or {}).items()]
        lines += [""] + notes + ([""] if notes else [])
    worst = {}
    for x in doc.get("crosscheck") or []:
        key = (x["problem"], x["case"])
        if key not in worst or x["max_rel_diff"] > worst[key]["max_rel_diff"]:
            worst[key] = x
    if worst:
        lines += ["## Cross-check: largest pairwise difference between implementations, per test case", "",
                  "| problem | case | pair | max abs diff | max rel diff |", "|---|---|---|---:|---:|"]
        for (p, c), x in sorted(worst.items()):
            lines.append(f"| {p} | {c} | {x['a']} vs {x['b']} | {fmt(x['max_abs_diff'], '.2e')} | "
                         f"{fmt(x['max_rel_diff'], '.2e')} |")
        lines.append("")
    return "\n".join(lines)
