"""`ways`: list, env, run, report, compare, sweep, and the measurements footprint, timer-check and
compile-table (docs/USAGE.md). Errors a user can cause end here in one line and exit 2."""
from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from pathlib import Path

import problems
from harness.measure import env, gpu
from harness.report.pipeline import NeedsExtra
from harness.run import registry, resume
from harness.run.update import NotUpdatable
from harness.run.sweep import DEFAULT_COUNT as SWEEP_COUNT
from problems.base import dtype_of, parse_shape


class UsageError(Exception):
    pass


def custom_cases(args) -> dict:
    """--shape (repeatable, each KEY=INT,...[:DTYPE]; --dtype the default): {problem: its cases}."""
    if not args.shape:
        return {}
    if len(args.problem or []) != 1:
        raise UsageError("--shape needs exactly one -p PROBLEM") from None
    try:
        problem = problems.get(args.problem[0])
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    cases = {}
    for text in args.shape:
        shape, _, dtype = text.partition(":")
        try:
            case = problem.custom_case(parse_shape(shape), dtype or args.dtype or problem.dtypes[0])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        need = problem.footprint(case)
        for what, have in env.memory_limits():
            factor = 4 if what == "host memory" else 1     # the host also holds the float64 reference
            if need * factor > have:
                raise UsageError(f"--shape {text} needs {need * factor / 2**30:.1f} GiB, more than the "
                                 f"{have / 2**30:.1f} GiB of {what}")
        cases.setdefault(case.name, case)
    return {problem.name: tuple(cases.values())}


def writable_dir(path: str) -> Path:
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".ways-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"output directory {path!r} is not writable: {exc.strerror or exc}") from None
    return p


def cmd_list(args) -> int:
    from harness.report import terminal
    terminal.print_cases(args.problem) if args.cases else terminal.print_inventory()
    return 0


def cmd_env(args) -> int:
    from harness.report import terminal
    terminal.print_environment()
    return 0


def cmd_run(args) -> int:
    from harness.report import style
    from harness.report.terminal import print_summary
    from harness.run.progress import RichProgress
    from harness.run.outdir import OutputBusy
    from harness.run.plan import Options
    from harness.run.runner import Run
    try:
        registry.select(args.problem, args.backend)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.dtype and not args.shape:
        try:
            dtype_of(args.dtype)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout {args.timeout:g} must be a positive number of seconds")
    if args.compile_repeats < 1:
        raise UsageError(f"--compile-repeats {args.compile_repeats} must be at least 1")
    if args.compile_jobs < 0:
        raise UsageError(f"--compile-jobs {args.compile_jobs} must be 0 (automatic) or more")
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs} must be at least 1")
    if args.quick and (args.shape or args.case):
        raise UsageError("--quick picks its own cases: leave out --shape and --case")
    if args.resume and args.ray:
        raise UsageError("--resume goes on with a run on this machine's GPUs; --ray runs start afresh")
    if args.update:
        return _update(args)
    custom = custom_cases(args)
    names = tuple(args.case or ())
    if names:
        known = {c.name for p in args.problem or problems.names() for c in problems.get(p).all_cases()}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"no built-in case named {', '.join(unknown)} (`ways list --cases` shows every "
                             f"problem's, e.g. {sorted(known)[0]})")
    kinds = {"test": ("test",), "bench": ("bench",), "all": ("test", "bench")}[args.cases]
    out = writable_dir(args.out)
    opts = Options(problems=args.problem or [], backends=args.backend or [], kinds=kinds, custom=custom,
                   out=out, item_timeout=args.timeout, measure_compile=not (args.no_compile or args.quick or custom),
                   compile_repeats=args.compile_repeats, retry_after_timeout=args.retry_after_timeout,
                   dtype=dtype_of(args.dtype).name if args.dtype and not custom else None,
                   case_names=names, quick=args.quick, compile_jobs=args.compile_jobs, jobs=args.jobs,
                   resume=args.resume)
    if args.resume and not args.gpus:       # a --gpus run's lanes are checked once they are known
        resume.check_here(out, opts, list(gpu.gpus()))
    signal.signal(signal.SIGTERM, _interrupt)     # a killed run ends like Ctrl-C: its results written
    if args.ray or args.gpus:
        return _run_spread(args, opts, out)
    if args.html:
        style.warm_up_in_background()
    run = Run(opts, RichProgress())
    try:
        doc = run.execute()
    except OutputBusy as exc:
        raise UsageError(str(exc)) from None
    print_summary(doc)
    if run.set_aside:
        print(f"the previous results in {out} were moved to {run.set_aside}")
    print(f"results: {out / 'results.json'}, {out / 'summary.csv'}")
    if args.html:
        from harness.report import pipeline
        pipeline.write(doc, out, html=True)
    return 0


def _update(args) -> int:
    """`ways run --update RESULTS` (harness/run/update.py), then its report written again."""
    from harness.report import pipeline
    from harness.run import update
    from harness.run.progress import RichProgress
    doc, out = update.run(Path(args.update), args.jobs, RichProgress())
    pipeline.write(doc, out, html=(out / "index.html").exists())
    return 0


def _run_spread(args, opts, out: Path) -> int:
    """`--gpus` (a lane per local GPU) or `--ray` (a task per GPU of a Ray cluster): several runs, merged."""
    from harness.report.terminal import print_summary
    from harness.run import cluster, lanes
    from harness.run.progress import RichProgress
    from harness.run.outdir import OutputBusy
    if args.ray and args.gpus:
        raise UsageError("--ray and --gpus: pick one (a Ray cluster places its own lanes)")
    try:
        which = lanes.parse(args.gpus) if args.gpus else None
    except lanes.LaneError as exc:
        raise UsageError(str(exc)) from None
    if args.resume:
        resume.check_here(out, opts, list(gpu.gpus()), which)
    progress = RichProgress()
    try:
        doc = cluster.run(opts, args.ray, progress) if args.ray else lanes.run(opts, which, progress)
    except (OutputBusy, cluster.NoGpus) as exc:
        raise UsageError(str(exc)) from None
    finally:
        progress.stop()
    print_summary(doc)
    print(f"results: {out / 'results.json'} (merged from {out / 'lanes'}), {out / 'summary.csv'}")
    if args.html:
        from harness.report import pipeline
        pipeline.write(doc, out, html=True)
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _load_all(paths: list[str]) -> list[dict]:
    from harness.results import merge
    try:
        return [merge.load(p) for p in paths]
    except merge.NotResults as exc:
        raise UsageError(str(exc)) from None


def cmd_report(args) -> int:
    from harness.report import pipeline
    from harness.results import merge
    docs = _load_all(args.results)
    doc = merge.merge(docs, args.results)
    if args.footprint:
        try:
            doc["footprint"] = json.loads(Path(args.footprint).read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"--footprint {args.footprint}: {exc}") from None
    out = writable_dir(args.out) if args.out else Path(args.results[0]).parent
    written = []
    if len(docs) > 1:
        (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
        written.append(out / "results.json")
    if args.readme:
        from harness.report import verdict
        verdict.write_into(Path(args.readme), doc, " + ".join(args.results))
    tools = None
    if args.slide_tools:
        try:
            tools = [registry.parse_backend(t)[0] for t in args.slide_tools.split(",") if t.strip()]
        except ValueError as exc:
            raise UsageError(f"--slide-tools: {exc}") from None
    pipeline.write(doc, out, args.html, args.slides or bool(tools), written, slide_tools=tools)
    return 0


def cmd_compare(args) -> int:
    from harness.results import compare
    if not 0 <= args.threshold < 10:
        raise UsageError(f"--threshold {args.threshold} must be a fraction such as 0.05")
    if args.same_chip and not args.repeat:
        raise UsageError("--same-chip judges B against A's repeat: give --repeat A2")
    doc_a, doc_b = _load_all([args.a, args.b])
    verdicts = compare.compare(doc_a, doc_b, args.threshold)
    print(compare.render(doc_a, doc_b, verdicts, args.threshold))
    if not verdicts:
        print("nothing to compare: no implementation x case was timed in both runs")
    if args.repeat:                 # judged against how A agrees with its own repeat, not per case
        (doc_repeat,) = _load_all([args.repeat])
        same = compare.equivalence(doc_a, doc_repeat, doc_b, args.threshold, args.same_chip)
        print("\n" + compare.render_equivalence(same))
        return 0 if same.holds and same.cases else 1
    return 1 if any(v.regression for v in verdicts) else 0


def cmd_sweep(args) -> int:
    """Random shapes per problem, every selected implementation checked on them (harness/run/sweep.py)."""
    from harness.report.terminal import print_summary
    from harness.run import sweep
    from harness.run.progress import RichProgress
    from harness.run.plan import Options
    from harness.run.runner import Run
    try:
        chosen = registry.select(args.problem, args.backend)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.count < 1 or args.jobs < 1:
        raise UsageError(f"--count {args.count} and --jobs {args.jobs} must be at least 1")
    names = args.problem or sorted({i.problem for i in chosen})
    labels, left_out = (args.backend, {}) if args.backend else sweep.default_backends(names)
    for label, why in left_out.items():
        print(f"left out {label}: {why} (name it with -b to sweep it)")
    out = writable_dir(args.out)
    opts = Options(problems=names, backends=labels, kinds=("test",), out=out,
                   custom=sweep.draw(names, args.count, args.seed), item_timeout=args.timeout,
                   measure_compile=False, jobs=args.jobs, retry_after_timeout=True)
    doc = Run(opts, RichProgress()).execute()
    print_summary(doc)
    (out / "sweep.md").write_text(sweep.markdown(doc))
    found = sweep.findings(doc)
    print(f"{len(found)} finding(s): {out / 'sweep.md'}")
    return 1 if found else 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ways", description="1,001 ways to write a CUDA kernel in Python")
    sub = ap.add_subparsers(dest="command", required=True)
    lst = sub.add_parser("list", help="problems x backends, with availability (--cases: each problem's cases)")
    lst.add_argument("--cases", action="store_true", help="each problem's built-in cases instead (the names --case takes)")
    lst.add_argument("-p", "--problem", action="append", help="with --cases: only this problem's (repeatable)")
    lst.set_defaults(fn=cmd_list)
    sub.add_parser("env", help="GPU, driver, versions, what each backend lacks").set_defaults(fn=cmd_env)
    run = sub.add_parser("run", help="check (and on a GPU, time) implementations",
                         description="Check every selected implementation on fresh random inputs against a float64 "
                                     "reference and the others; time its bench cases (on a GPU against a ceiling "
                                     "measured in the same run, without one on the host); write results.json, "
                                     "summary.csv and logs/ into --out.")
    run.add_argument("-p", "--problem", action="append", help=f"one of {', '.join(problems.names())} (repeatable)")
    run.add_argument("-b", "--backend", action="append",
                     help="backend or backend[variant], e.g. array_api[torch] (repeatable)")
    run.add_argument("--cases", choices=("test", "bench", "all"), default="all",
                     help="the built-in test cases (checked only), bench cases (checked and timed) or both (default)")
    run.add_argument("--shape", action="append",
                     help="your own case, e.g. M=4096,N=4096,K=1024 or rows=3,cols=5:bf16 (with one -p; repeatable)")
    run.add_argument("--dtype", help="float32|float16|bfloat16 (or fp32, fp16, bf16)")
    run.add_argument("--case", action="append", help="only this built-in case, e.g. 129x257x65-float16 (repeatable)")
    run.add_argument("--out", default="reports/latest", help="output directory (default reports/latest)")
    run.add_argument("--timeout", type=float, default=None,
                     help="seconds of its own work one case may take (its waits for the GPU not counted); default: "
                          "60 + 2.5 x the build's known cost + 20 per GiB the case moves")
    run.add_argument("--no-compile", action="store_true", help="skip the cold/warm compile-time processes")
    run.add_argument("--retry-after-timeout", action="store_true",
                     help="after a case times out, still run that implementation's other cases (default: skip them)")
    run.add_argument("--compile-repeats", type=int, default=3, help="processes each for cold and warm (default 3)")
    run.add_argument("--compile-jobs", type=int, default=0,
                     help="implementations whose compile-time processes run at once (default: a quarter of the "
                          "cores; beside --jobs workers all cores but one, over --compile-repeats)")
    run.add_argument("--jobs", type=int, default=1,
                     help="implementations whose workers run at once on one GPU: their CPU work (references, "
                          "compiling) overlaps, the GPU is theirs alone while one times (default 1)")
    run.add_argument("--gpus", help="one worker lane per GPU: all, a count, or indices such as 0,2")
    run.add_argument("--ray", metavar="ADDRESS",
                     help="run on a Ray cluster (ray://host:10001, auto, or local[:N] for one here with N GPUs)")
    run.add_argument("--quick", action="store_true",
                     help="a demo's selection: each problem's quick cases (a test case and the headline bench "
                          "case), first build instead of compile processes; its rows are marked quick")
    run.add_argument("--html", action="store_true",
                     help="then write the report, figures and page into --out, as `ways report --html` would")
    run.add_argument("--update", metavar="RESULTS", help="run again the rows of RESULTS (a results.json) whose "
                     "implementation, tool version, problem or timing code changed; merge them in, report again")
    run.add_argument("--resume", action="store_true",
                     help="go on with the interrupted run in --out (give the same selection, and its --gpus): what "
                          "it has not done yet (failed rows again), appended to its results")
    run.set_defaults(fn=cmd_run)
    swp = sub.add_parser("sweep", help="random shapes per problem, every implementation checked on them")
    swp.add_argument("-p", "--problem", action="append", help="one of the problems (repeatable; default all)")
    swp.add_argument("-b", "--backend", action="append", help="backend or backend[variant] (repeatable)")
    swp.add_argument("--count", type=int, default=SWEEP_COUNT,
                     help=f"random shapes per problem (default {SWEEP_COUNT})")
    swp.add_argument("--seed", type=int, default=0, help="draws the same shapes again (default 0)")
    swp.add_argument("--jobs", type=int, default=1, help="implementations whose workers run at once (as ways run)")
    swp.add_argument("--timeout", type=float, default=None, help="seconds of its own work a case may take")
    swp.add_argument("--out", default="reports/latest-sweep", help="output directory (default reports/latest-sweep)")
    swp.set_defaults(fn=cmd_sweep)
    rep = sub.add_parser("report", help="Markdown summary, figures (and --html a page) of results.json files")
    rep.add_argument("results", nargs="+", help="one results.json, or several to merge (e.g. several GPUs)")
    rep.add_argument("--html", action="store_true", help="also write one self-contained index.html")
    rep.add_argument("--footprint", help="install footprints from `ways footprint` for the scorecard")
    rep.add_argument("--slides", action="store_true",
                     help="also write slides/ (1920x1080 PNG and SVG): each problem's kernels a few tools a slide, "
                          "its verdict, and an overview")
    rep.add_argument("--slide-tools", metavar="B,B,...",
                     help="the tools on the code slides (default: the best of each tool family per problem)")
    rep.add_argument("--out", help="where report.md, figures/ and index.html go (default: beside the first results)")
    rep.add_argument("--readme", metavar="FILE",
                     help="also write the verdict of these results into FILE (e.g. README.md), between its markers")
    rep.set_defaults(fn=cmd_report)
    cmp = sub.add_parser("compare", help="per implementation x case: faster, slower, same or ambiguous (B vs A)")
    cmp.add_argument("a", help="results.json of the baseline run")
    cmp.add_argument("b", help="results.json of the run to judge")
    cmp.add_argument("--repeat", metavar="A2",
                     help="a repeat of the baseline run: judge B by whether it agrees with A as well as A2 does "
                          "(exit status 1 where not)")
    cmp.add_argument("--same-chip", action="store_true",
                     help="with --repeat: judge only the cases B timed on the GPU (UUID) that timed them in A")
    cmp.add_argument("--threshold", type=float, default=0.05,
                     help="relative slowdown that counts as a regression (exit status 1), default 0.05")
    cmp.set_defaults(fn=cmd_compare)
    for name, (module, what) in MEASUREMENTS.items():     # each module declares its arguments and runs itself
        m = importlib.import_module(module)
        parser = sub.add_parser(name, help=what, description=m.__doc__.split("\n\n")[0])
        m.add_arguments(parser)
        parser.set_defaults(fn=m.main)
    return ap


# measurements besides a run, which a contributor repeats: `ways NAME --help`
MEASUREMENTS = {
    "footprint": ("harness.report.footprint", "each backend extra's install footprint, from pip's resolver"),
    "timer-check": ("harness.run.timer_check", "the lab's headline figures against a second timer, every tool"),
    "compile-table": ("harness.run.compile_table", "cold and warm compile of one GEMM per implementation, fresh"),
}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (UsageError, NeedsExtra, resume.NothingToResume, NotUpdatable) as exc:
        print(f"ways: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ways: interrupted; results.json (complete: false) keeps what was measured", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`ways env | head -1`): stop quietly, as a Unix filter does; the
        # interpreter's own flush at exit must not write to the closed pipe either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
