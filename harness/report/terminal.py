"""What `ways run` prints last: the timed cases, then correctness, compile time and size per
implementation, and what was skipped and why."""
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.report.markdown import clock_pair, pct_pair, per_impl, time_pair
from harness.results.records import flag, flag_note, impl_label, loud


def _f(x, spec):
    return "" if x is None else format(x, spec)


def print_summary(doc: dict) -> None:
    console = Console(width=None if sys.stdout.isatty() else 160)
    print_phases(console, doc["run"])
    for line in profile_lines(doc):
        console.print(line, highlight=False)
    timed = [r for r in doc["records"] if r.get("timing")]
    if timed:
        table = Table(title="timed (bench) cases: cold (L2 flushed, gaps) / sustained (back to back)")
        for col in ("problem", "case", "implementation", "device ms", "host ms", "achieved", "% peak", "SM MHz",
                    "flag"):
            table.add_column(col, justify="left" if col in ("problem", "case", "implementation", "flag") else "right")
        for r in sorted(timed, key=lambda r: (r["problem"], r["case"], impl_label(r))):
            t = r["timing"]
            table.add_row(r["problem"], r["case"], escape(impl_label(r)),
                          time_pair(t), _f(t.get("host_ms"), ".4g"),
                          f"{_f(t.get('achieved'), '.4g')} {t.get('unit') or ''}",
                          pct_pair(t), clock_pair(t),
                          f"[bold red]{escape(loud(flag(r)))}[/]" if flag(r) else "")
        console.print(table)
    table = Table(title="correctness, compile time, size")
    for col in ("problem", "implementation", "ok", "compile only", "n/a", "wrong", "failed", "skipped",
                "worst rel err", "compile cold s", "LOC"):
        table.add_column(col, justify="left" if col in ("problem", "implementation") else "right")
    skipped = {}
    for (problem, label), s in sorted(per_impl(doc["records"]).items()):
        c = s["counts"]
        if c["unavailable"] and not any(c[k] for k in ("ok", "compile_only", "wrong", "failed", "skipped",
                                                        "not_applicable")):
            skipped[label] = s["notes"][0] if s["notes"] else ""
            continue
        bad = "[bold red]{}[/]"
        table.add_row(problem, escape(label), str(c["ok"]), str(c["compile_only"]), str(c["not_applicable"]),
                      *(bad.format(c[k]) if c[k] else "0" for k in ("wrong", "failed", "skipped")),
                      _f(s["worst"], ".1e"), _f(s["compile"].get("cold_s"), ".3g"), _f(s["loc"].get("total"), "d"))
    console.print(table)
    for label, reason in skipped.items():
        console.print(escape(f"skipped {label}: {reason}"), soft_wrap=True)      # a reason is never cut
    for r in doc["records"]:
        if flag(r) and r["status"] not in ("unavailable", "not_applicable", "compile_only"):
            console.print(f"[red]{escape(flag(r))}[/] " + escape(f"{impl_label(r)} {r['problem']} {r['case']}: "
                                                         f"{flag_note(r).partition(': ')[2]}"), soft_wrap=True)


def print_phases(console, run: dict) -> None:
    """Where the run's wall time went, by phase (run.phases)."""
    phases = run.get("phases")
    if not phases:
        return
    wall = run.get("duration_s") or sum(phases.values())
    table = Table(title=f"where the time went: {wall:.1f} s")
    for col in ("phase", "s", "%"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for name, seconds in phases.items():
        table.add_row(name, f"{seconds:.2f}", f"{100 * seconds / wall:.0f}" if wall else "")
    console.print(table)
    if (run.get("jobs") or 1) > 1 and run.get("worker_phases"):     # overlapping workers: their own sums
        inner = Table(title=f"inside the workers, {run['jobs']} at a time (process seconds, overlapping)")
        inner.add_column("phase")
        inner.add_column("s", justify="right")
        for name, seconds in run["worker_phases"].items():
            inner.add_row(name, f"{seconds:.2f}")
        console.print(inner)


def profile_lines(doc: dict) -> list[str]:
    """Where a run's time went besides its phases: how busy the cores were, what the timers waited
    behind (--jobs: lock_holds.py), and what the GPU timing cost, from the records."""
    from harness.measure import timing
    from harness.schedule import cpu_load, lock_holds
    run, spent = doc["run"], timing.cost(doc["records"])
    cut = next_cut(run.get("worker_phases") or {})
    return ([cpu_load.line(run["cpu_load"])] if run.get("cpu_load") else []) \
        + (lock_holds.lines(run["gpu_lock"]) if run.get("gpu_lock") else []) \
        + ([cost_line(spent)] if spent else []) + ([cut] if cut else [])


def next_cut(worker_phases: dict[str, float]) -> str | None:
    """The workers' largest phase of their own work (waiting for another's hold of the GPU is not
    one: it shrinks as the others do), where a run's next saving is to be looked for."""
    from harness.schedule.gpu_lock import WAIT_PHASE
    own = {k: v for k, v in worker_phases.items() if k != WAIT_PHASE}
    if not own:
        return None
    name, seconds = max(own.items(), key=lambda kv: kv[1])
    return f"next cut: {name}, {seconds:.0f} s of the workers' {sum(own.values()):.0f} s of their own work"


def cost_line(c: dict) -> str:
    total = c["cold_s"] + c["sustained_s"] + c["warm_up_s"] + c["host_s"]
    line = (f"GPU timing, from the records: {total:.0f} s over {c['rows']} timed rows (cold {c['cold_s']:.0f}, "
            f"sustained {c['sustained_s']:.0f}, warm-up {c['warm_up_s']:.0f}, host {c['host_s']:.0f})")
    if c["no_cold_sample"]:
        line += f"; {c['no_cold_sample']} row(s) sampled {c['no_cold_sample_s']:.0f} s cold and kept no sample"
    return line


def print_cases(names: list[str] | None = None) -> None:
    """`ways list --cases`: each problem's built-in cases, what each is for, and which --quick takes."""
    import problems
    from backends.gpus import gpus
    console = Console()
    for name in names or problems.names():
        p = problems.get(name)
        quick = set(p.quick_case_names) | set(p.quick_cases(on_gpu=False))
        table = Table(title=f"{name} ({', '.join(p.dims)})")
        for col in ("case", "kind", "dtype", "quick"):
            table.add_column(col)
        on_gpu = p.cases()
        for c in p.all_cases():
            kind = c.kind if c.kind == "test" else "bench, " + ("a GPU's" if c in on_gpu else "without a GPU")
            table.add_row(c.name, kind, c.dtype, "✓" if c.name in quick else "")
        console.print(table)
    where = "this machine has a GPU" if gpus() else "this machine has no GPU: its runs time the cases for one without"
    console.print(f"{where}; `ways run --case NAME` takes any of them", soft_wrap=True)


def print_inventory() -> None:
    """`ways list`: problems x backends, each variant available here or why not."""
    import backends
    import problems
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    console = Console()
    names = problems.names()
    table = Table(title="problems x backends (✓ runs here, ✗ unavailable, · no implementation)")
    table.add_column("backend")
    for p in names:
        table.add_column(p, justify="center")
    reasons = {}
    for b in backends.names():
        have = {p: backends.get(b).variants_of(p) for p in backends.problems_of(b)}
        for v in backends.variants(b):
            backend = backends.get(b, v)
            ok, why = backend.available()
            if not ok:
                reasons[backend.label()] = why
            table.add_row(escape(backend.label()),
                          *[("✓" if ok else "✗") if v in have.get(p, ()) else "·" for p in names])
    console.print(table)
    for label, why in reasons.items():
        console.print(escape(f"  {label}: {why}"), soft_wrap=True)


def print_environment() -> None:
    """`ways env`: Python, commit, GPUs and driver, package versions, each backend variant's availability."""
    import backends
    from harness.measure import env
    info = env.collect()
    print(f"python   {info['python']} ({info['platform']})")
    print(f"commit   {info['git_commit'] or '?'}")
    if info["gpus"]:
        for g in info["gpus"]:
            print(f"gpu      {g['name']} (cc {g['compute_capability']}, {g['memory_mib']} MiB), driver "
                  f"{g['driver']} (CUDA {g['driver_cuda']}), max clocks SM {g['max_sm_clock_mhz']} MHz, "
                  f"memory {g['max_mem_clock_mhz']} MHz")
    else:
        print("gpu      none found (nvidia-smi lists no GPU)")
    for name, version in info["versions"].items():
        print(f"package  {name} {version}")
    for b in backends.names():
        for v in backends.variants(b):
            backend = backends.get(b, v)
            ok, why = backend.available()
            print(f"backend  {backend.label():22s} {'available' if ok else 'unavailable: ' + why}")
