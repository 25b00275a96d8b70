"""A GPU session's steps on a node without a package index, one step a call of the node (a call has a
time limit, so each step runs under one and writes what it measured before it). Run from the
checkout's root on the node; what a call brings back goes under $OUT:

    python tools/gpu_node.py unpack                       the bundle parts (and .whl/ wheels) carried in this call
    python tools/gpu_node.py demo                         `make demo`'s run, with its page
    python tools/gpu_node.py full [-- ARGS]               the full default run (`ways run --jobs 8`)
    python tools/gpu_node.py lanes [-- ARGS]              the same on every GPU of the node, a lane each
    python tools/gpu_node.py update RESULTS               `ways run --update RESULTS`
    python tools/gpu_node.py timer-check [-- ARGS]        `ways timer-check` of every headline case
    python tools/gpu_node.py sweep TOOL:PROBLEM [-- ARGS] a knob sweep (tools/knob_sweep.py)
    python tools/gpu_node.py examples NAME                a tool's own published example (upstream)
    python tools/gpu_node.py wait STEP                    a step started with --detach, once it ends

`--name NAME` names a step's folder and pack (STEP by default), for a second run of one step;
`--after NAME` starts it once NAME's pack is made, so steps started with --detach run one at a time.

Works as follows:
1. Every step runs with the sites of SITES on its path (the lab's bundle first; cuTile's and
   TileLang's for their workers only, through WAYS_CUTILE_SITE and WAYS_TILELANG_SITE).
2. It records the GPU's clocks, power and state before and after (nvidia-smi; nothing is changed),
   and stops its command with SIGINT at --limit seconds (a run then writes what it measured).
3. Its folder is packed as $OUT/STEP.tgz, results and logs, its commands' output in output.log (a call
   brings back few files).
4. With --detach the step runs on in a process of its own (setsid) after the call returns, and a
   later call's `wait STEP` brings its pack back: one run longer than one call, at one commit.

`--dry-run` prints the commands and the environment instead of running them (no GPU needed).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.measure import second_timer  # noqa: E402  (the checkout's, before any installed copy)

SITES = {"lab": "/tmp/gpu-site", "mini": "/tmp/gpu-site", "cutile": "/tmp/cutile-site",
         "tilelang": "/tmp/tilelang-site", "ray": "/tmp/ray-site"}
BUNDLES = ("lab", "cutile", "tilelang")     # a step runs only once each is whole (its site's env.sh written)
WORK = Path(os.environ.get("WAYS_NODE_WORK", "/tmp/ways-node"))
LIMIT_S = 540          # of a call's 600 s: the rest stops the run, packs and brings it back
STOP_GRACE_S = 90      # a run of eight workers took over 45 s to stop after SIGINT
WAIT_POLL_S = 10
WHEELS = ".whl"        # single wheels carried beside the bundles
OUTPUT_LOG = "output.log"   # each command's output, in the step's folder
GPU_QUERY = "name,clocks.sm,clocks.max.sm,power.draw,power.limit,pstate,temperature.gpu"
ATTENTION_EXAMPLES = ("triton", "cutile", "helion", "tilelang", "cute_dsl", "pallas-triton", "pallas-mosaic")
OTHER_EXAMPLES = ("cutile-matmul", "cccl", "numba", "gluon-matmul", "triton-fp8")
WAYS = [sys.executable, "-m", "harness"]


def environment() -> dict[str, str]:
    """The lab's site ahead of the node's packages; cuTile's and TileLang's named for their workers."""
    env = dict(os.environ)
    lab = SITES["lab"]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [lab, env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([f"{lab}/nvidia/cu13/bin", env.get("PATH", "")])
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [f"{lab}/nvidia/cu13/lib", env.get("LD_LIBRARY_PATH")]))
    env["WAYS_CUTILE_SITE"], env["WAYS_TILELANG_SITE"] = SITES["cutile"], SITES["tilelang"]
    return env


def incomplete_bundles() -> list[str]:
    """The BUNDLES whose site has no env.sh: a part of theirs missed its call (unpack.sh writes env.sh
    once the last part is there), so their tools would run from the node's own packages or not at all."""
    return [name for name in BUNDLES if not (Path(SITES[name]) / "env.sh").is_file()]


def with_site(tool: str, env: dict[str, str]) -> dict[str, str]:
    """`env` with a tool's own site (cuTile's, TileLang's) first, for a command of that tool alone."""
    site = SITES.get(tool)
    if not site or tool in ("lab", "mini"):
        return env
    return {**env, "PYTHONPATH": os.pathsep.join([site, env["PYTHONPATH"]]),
            "PATH": os.pathsep.join([f"{site}/nvidia/cu13/bin", env["PATH"]])}


class Step:
    """One step's folder, its commands under the time limit, the GPU's state around them, its pack."""

    def __init__(self, name: str, args):
        self.name, self.args, self.folder = name, args, WORK / name
        self.commands: list[tuple[list[str], dict[str, str]]] = []

    def run(self, command: list[str], env: dict[str, str] | None = None) -> int:
        env = env or environment()
        if self.args.dry_run:
            changed = {k: v for k, v in env.items() if os.environ.get(k) != v}
            print(" ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(changed.items())), shlex.join(command))
            return 0
        left = self.args.limit - (time.monotonic() - self.args.started)
        proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        copy = threading.Thread(target=tee, args=(proc.stdout, self.folder / OUTPUT_LOG))
        copy.start()
        try:
            return proc.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            proc.send_signal(2)               # SIGINT: the run writes what it measured
            try:
                return proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                return proc.wait()
        finally:
            copy.join(timeout=STOP_GRACE_S)

    def __enter__(self):
        if not self.args.dry_run:
            self.folder.mkdir(parents=True, exist_ok=True)
            gpu_state(self.folder)
        return self

    def __exit__(self, *exc):
        if not self.args.dry_run:
            gpu_state(self.folder)
            pack(self.folder, Path(self.args.out) / f"{self.name}.tgz")
        return False


def tee(stream, path: Path) -> None:
    """A command's output to this process's and to `path` (packed with the step's folder: a call whose
    output is cut or filtered still brings all of it back)."""
    with open(path, "ab") as log:
        for line in iter(stream.readline, b""):
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
            log.write(line)


def gpu_state(folder: Path) -> None:
    """The GPU's clocks, power and state now, a line of folder/gpu-state.csv (nothing without nvidia-smi)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        out = subprocess.run([smi, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader"], capture_output=True, text=True)
        with open(folder / "gpu-state.csv", "a") as f:
            f.write(out.stdout)


def pack(folder: Path, dest: Path) -> None:
    """`folder` as dest (a .tgz), without the outputs a run keeps for its cross-check (too large to bring back)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(folder, arcname=folder.name, filter=lambda t: None if ".crosscheck-outputs" in t.name else t)


def unpack(step: Step) -> None:
    """Every bundle part carried in this call (.gpu-bundle-NAME/K), into NAME's site; a bundle unpacks
    once its last part is there (../shared/gpu-bundle/unpack.sh). Single wheels carried in .whl/ (a
    package newer than the packed bundle) go into the lab's site, without their dependencies."""
    for part in sorted(ROOT.glob(".gpu-bundle-*/[0-9]*/unpack.sh")):
        bundle = part.parent.parent.name.removeprefix(".gpu-bundle-")
        step.run(["bash", str(part)], {**os.environ, "GPU_SITE": SITES[bundle]})
    wheels = sorted(str(w) for w in ROOT.glob(f"{WHEELS}/*.whl"))
    if wheels:
        step.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--upgrade", "--target",
                  SITES["lab"], *wheels], dict(os.environ))


def demo(step: Step) -> None:
    """`make demo`'s run on the GPU: each problem's quick cases, every backend, six at a time, its page."""
    step.run([*WAYS, "run", "--quick", "--jobs", "6", "--html", "--out", str(step.folder / "run")])


def full(step: Step) -> None:
    """The full default run, eight implementations at a time, its headline rows timed by the second
    timer too (`ways timer-check --from` compares them); ARGS: more `ways run` options, e.g. --resume
    to go on with the run an earlier call left while the node stayed warm."""
    step.run([*WAYS, "run", "--jobs", "8", "--out", str(step.folder / "run"), *step.args.rest],
             {**environment(), second_timer.ENABLED_VAR: second_timer.HEADLINE})


def lanes(step: Step) -> None:
    """The full default run on every GPU of a node of several, a lane each, eight at a time in each."""
    step.run([*WAYS, "run", "--gpus", "all", "--jobs", "8", "--out", str(step.folder / "run"), *step.args.rest])


def update(step: Step) -> None:
    """`ways run --update RESULTS`: the rows a changed tool, implementation or timing code touches."""
    step.run([*WAYS, "run", "--update", step.args.target, "--jobs", "8", *step.args.rest])


def timer_check(step: Step) -> None:
    """`ways timer-check`: every problem's headline case, every default backend, a second timer beside."""
    step.run([*WAYS, "timer-check", "--jobs", "6", "--out", str(step.folder / "run"), *step.args.rest])


def sweep(step: Step) -> None:
    """A knob sweep of one tool's implementation of one problem (TARGET: TOOL:PROBLEM), in its site."""
    tool, _, problem = step.args.target.partition(":")
    step.run([sys.executable, "-m", "tools.knob_sweep", tool, problem, "--out", str(step.folder / "sweep"),
              *step.args.rest], with_site(tool, environment()))


def examples(step: Step) -> None:
    """A tool's own published example for the lab's operation (TARGET: an attention example's tool,
    or cutile-matmul, cccl, numba, gluon-matmul, triton-fp8), from the checkouts carried in .upstream/."""
    name = step.args.target
    if name in ATTENTION_EXAMPLES:
        step.run([sys.executable, "tools/upstream_attention.py", name, "--out", str(step.folder / f"{name}.json"),
                  *step.args.rest], with_site(name, environment()))
    else:
        step.run(["bash", "tools/upstream_examples.sh", str(step.folder), name.removesuffix("-matmul")])


STEPS = {"unpack": unpack, "demo": demo, "full": full, "lanes": lanes, "update": update, "timer-check": timer_check,
         "sweep": sweep, "examples": examples}
TARGETS = {"update": "RESULTS", "sweep": "TOOL:PROBLEM", "examples": "NAME", "wait": "STEP"}


def wait(args) -> int:
    """A step started with --detach: wait (within --limit) for its pack, bring it back under $OUT."""
    pack_path = WORK / "packs" / f"{args.target}.tgz"
    while not pack_path.exists() and time.monotonic() - args.started < args.limit:
        time.sleep(WAIT_POLL_S)
    log = WORK / f"{args.target}.log"
    if log.exists():
        print(log.read_text()[-6000:])
    if not pack_path.exists():
        print(f"gpu_node: {args.target} is still running; `wait {args.target}` again in the next call")
        return 1
    shutil.copy(pack_path, Path(args.out) / pack_path.name)
    return 0


def detach(argv: list[str], name: str) -> int:
    """The same command in a process of its own that outlives the call, its pack kept under WORK/packs."""
    WORK.mkdir(parents=True, exist_ok=True)
    rest = [a for a in argv if a != "--detach"]
    cut = rest.index("--") if "--" in rest else len(rest)      # --out before the step's own arguments
    command = [sys.executable, __file__, *rest[:cut], "--out", str(WORK / "packs"), *rest[cut:]]
    with open(WORK / f"{name}.log", "w") as log:
        subprocess.Popen(command, env={**os.environ, "OUT": str(WORK / "packs")}, cwd=ROOT, stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    print(f"gpu_node: {name} runs on (log {WORK / f'{name}.log'}); `python tools/gpu_node.py wait {name}` "
          "brings it back")
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tools/gpu_node.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=[*STEPS, "wait"])
    ap.add_argument("target", nargs="?", help="RESULTS (update), TOOL:PROBLEM (sweep), NAME (examples), STEP (wait)")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"), help="where the packs go (default $OUT)")
    ap.add_argument("--limit", type=float, default=LIMIT_S, help=f"seconds before SIGINT (default {LIMIT_S})")
    ap.add_argument("--name", help="the step's folder and pack (default: the step's name), e.g. a second full run")
    ap.add_argument("--detach", action="store_true", help="run on after the call; `wait STEP` brings it back")
    ap.add_argument("--after", metavar="NAME",
                    help="start once step NAME (started with --detach) has made its pack: one GPU run at a time")
    ap.add_argument("--dry-run", action="store_true", help="print the commands and environment, run nothing")
    ap.add_argument("--partial-sites", action="store_true",
                    help="run although a bundle is not wholly unpacked (its tools then fail or use the node's packages)")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)      # after --: the step's command's own arguments
    args = parser().parse_args(argv[:cut])
    args.started, args.rest = time.monotonic(), argv[cut + 1:]
    if args.step in TARGETS and not args.target:
        parser().error(f"{args.step} needs its {TARGETS[args.step]}")
    if args.step == "wait":
        return wait(args)
    missing = [] if args.step == "unpack" or args.dry_run or args.partial_sites else incomplete_bundles()
    if missing:
        print(f"gpu_node: not wholly unpacked: {', '.join(f'{b} ({SITES[b]})' for b in missing)}; carry their "
              "missing parts in an `unpack` call, or pass --partial-sites to run with what is there", file=sys.stderr)
        return 2
    if args.detach and not args.dry_run:
        return detach(argv, args.name or args.step)
    if args.after and not args.dry_run:
        while not (WORK / "packs" / f"{args.after}.tgz").exists():
            time.sleep(WAIT_POLL_S)
        args.started = time.monotonic()          # its limit counts from its own start
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with Step(args.name or args.step, args) as step:
        STEPS[args.step](step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
