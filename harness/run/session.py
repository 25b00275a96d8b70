"""One backend variant loaded in a worker process (Session), and the check of one case on it:
fresh inputs, poisoned outputs, build, a call with the whole device synchronized around it, the
float64 reference, then the same arrays given new values (check_case, checked, follows_new_inputs)."""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import backends
import backends.base
import problems
from harness.measure.device import open_device
from harness.schedule.gpu_lock import LOCK, WAIT_PHASE
from harness.measure.phases import PHASES
from harness.results import records
from harness.run.case_store import case_data
from problems.base import Case, CheckError, decode, poison

N_SEEDS = 3


class Session:
    """A backend variant loaded in this process, with its device and stream."""
    searches_alone = True           # an autotuner's build holds the GPU alone (searches_share_the_gpu)

    def __init__(self, backend_name: str, variant: str, device=None):
        """`device`: another Session's, whose stream this one then launches on too."""
        self.backend = backends.get(backend_name, variant)
        self.variant = variant
        self.backend.load()              # imports the tool; raises Unavailable with the reason
        kind = self.backend.device()
        with gpu_hold(kind):             # a CUDA context and a stream: GPU work
            self.device = device or open_device(kind)
            self.stream = self.backend.stream(self.device.handle)

    # how the checks share the GPU with other workers (harness/schedule/): the only three ways they do
    def gpu_work(self, alone: bool = False):
        """This variant's hold of the GPU for one step (gpu_hold)."""
        return gpu_hold(self.device.kind, alone)

    def cpu_work(self):
        """A CPU-only step inside a GPU step: a waiting timer may have the GPU meanwhile."""
        return LOCK.released()

    def step_done(self) -> None:
        """Between GPU steps: where a timer waits, finish this process's GPU work and let it in."""
        LOCK.let_timers_in(self.device.sync)

    def why_not(self, problem: str, case: Case) -> str | None:
        return self.backend.why_not(problem, case)

    def prepare(self, problem, case: Case, seed: int, cache: Path | None = None, **options) -> Built:
        """Fresh inputs, the reference, poisoned outputs, and the implementation built on them
        (`options` go to its build(): a tuning sweep tries configurations that way)."""
        host_inputs, inputs, outputs, ref = self.arrays(problem, case, seed, cache)
        # an autotuner times kernels in build(): it needs the GPU alone, as timing does
        lock = self.gpu_work(alone=self.searches_alone and self.backend.build_times_kernels(problem.name))
        with PHASES("builds"), lock, self.backend.stream_context(self.stream):
            t0, waited, cpu0 = time.perf_counter(), PHASES.seconds.get(WAIT_PHASE, 0.0), cpu_seconds()
            steps0 = {name: step.seconds for name, step in BUILD_STEPS.items()}
            run = self.backend.build(problem.name, case, inputs, outputs, self.stream, **options)
            self.device.sync()
            # time spent waiting for another worker's timing (compiling() released the GPU) is not build time
            build_s = time.perf_counter() - t0 - (PHASES.seconds.get(WAIT_PHASE, 0.0) - waited)
        self.step_done()
        # the tool's compile (compiling()) and an autotuner's timing (timing_kernels()), apart
        parts = {name: step.seconds - steps0[name] for name, step in BUILD_STEPS.items()
                 if step.seconds > steps0[name]}
        return Built(run, host_inputs, inputs, outputs, ref, build_s, cpu_seconds() - cpu0, parts)

    def arrays(self, problem, case: Case, seed: int, cache: Path | None = None):
        """Fresh inputs (host and device), poisoned outputs and the reference, nothing built."""
        with PHASES("inputs and float64 references"), self.cpu_work():     # CPU only: others may time meanwhile
            host_inputs, ref = case_data(problem, case, seed, cache)
            # made here, not in the upload's hold: a 2^28-element case's NaNs take seconds of CPU
            poisoned = {name: (poison(shape, dt), dt) for name, (shape, dt) in problem.output_spec(case).items()}
        with PHASES("uploads"), self.gpu_work():
            inputs = {k: self._upload(v, case.dtype) if isinstance(v, np.ndarray) else v
                      for k, v in host_inputs.items()}
            outputs = {name: self._upload(host, dt) for name, (host, dt) in poisoned.items()}
            self.device.sync()           # all uploaded before the GPU is let go
        return host_inputs, inputs, outputs, ref

    def _upload(self, host: np.ndarray, dtype: str):
        """One array to the device; a waiting timer may have the GPU before the next (let_timers_in
        synchronizes first, so only then)."""
        array = self.backend.to_device(host, dtype)
        self.step_done()
        return array

    def call(self, run, outputs: dict) -> tuple[dict, float]:
        """One call, the whole device synchronized before and after; the outputs it wrote (or
        returned) and its wall time."""
        with PHASES("checked calls"), self.gpu_work(), self.backend.stream_context(self.stream):
            self.device.sync()
            t0 = time.perf_counter()
            returned = run()
            self.device.sync()
            elapsed = time.perf_counter() - t0
        self.step_done()
        return (returned if returned is not None else outputs), elapsed

    def negate_inputs(self, problem, case: Case, b: Built) -> dict:
        """Write the negated inputs into the arrays `b.run` was built on; their reference."""
        with self.cpu_work():
            host, ref = problem.negated(case, b.host_inputs, b.ref)
        with PHASES("uploads"):
            self.device.sync()
            for name in problem.linear_inputs:
                self.backend.overwrite(b.inputs[name], host[name], case.dtype)
            self.device.sync()
        self.step_done()
        b.host_inputs, b.ref = host, ref
        return ref

    @PHASES.timed("checks")
    def changed_inputs(self, b: Built) -> str | None:
        """None, or which input arrays a call modified (an implementation must leave them be)."""
        now = {name: self._download(dev) for name, dev in b.inputs.items()
               if isinstance(b.host_inputs[name], np.ndarray)}
        with self.cpu_work():
            changed = [f"{name!r} ({int(np.sum(a != b.host_inputs[name]))} elements)" for name, a in now.items()
                       if not np.array_equal(a, b.host_inputs[name])]
        return f"run() modified its input {', '.join(changed)}" if changed else None

    def fetch(self, arrays: dict) -> dict:
        return {k: self._download(v) for k, v in arrays.items()}

    def _download(self, array):
        """One array to the host; a waiting timer may have the GPU before the next (a 2^28-element
        case's downloads take seconds)."""
        host = self.backend.to_host(array)
        self.step_done()
        return host


class BuildStep:
    """Seconds inside a kind of block that backends enter in build() (the outermost of nested ones),
    each entered with the GPU lock's `hold`: compiling() is the tool's own compile, apart from what
    else a build does (the lab's inputs, an occupancy query, a load), with the GPU released so that
    another worker may time; timing_kernels() is an autotuner timing its candidates, the GPU alone."""

    def __init__(self, hold):
        self.hold, self.seconds, self._depth = hold, 0.0, 0

    @contextmanager
    def __call__(self):
        with self.hold():
            self._depth += 1
            t0 = time.perf_counter()
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.seconds += time.perf_counter() - t0


TOOL_COMPILE, TOOL_SEARCH = BuildStep(LOCK.released), BuildStep(LOCK.exclusive)
BUILD_STEPS = {"tool_compile_s": TOOL_COMPILE, "autotune_s": TOOL_SEARCH}     # a build's parts, by record key
backends.base.on_build_steps(TOOL_COMPILE, TOOL_SEARCH)


def searches_share_the_gpu() -> None:
    """In a compile-time process: an autotuner's search (timing_kernels(), Backend.build_times_kernels)
    shares the GPU with other workers' GPU work, never with a timer. Its pick is never timed, only how
    long the build took; held alone, a search that cannot be told apart from its tool's compile (the
    first call of torch.compile) kept every other worker from the GPU for the compile's CPU seconds."""
    TOOL_SEARCH.hold = LOCK.shared
    Session.searches_alone = False


def gpu_hold(kind: str, alone: bool = False):
    """The GPU lock for a step of a variant on device `kind`: shared with other workers, or held
    alone (`alone`: timing, an autotuner's build); a CPU variant's steps (a 2^28-element NumPy call,
    its host copies, its timing) hold no GPU, so a waiting timer need not wait for them."""
    if kind != "cuda":
        return LOCK.released()
    return LOCK.exclusive() if alone else LOCK.shared()


@dataclass
class Built:
    """An implementation built on one set of inputs: its run(), the inputs (host and device),
    the poisoned outputs, the reference and the build time."""
    run: object
    host_inputs: dict
    inputs: dict
    outputs: dict
    ref: dict
    build_s: float
    build_cpu_s: float | None = None     # CPU seconds of this process and the compilers it waited for
    parts: dict = field(default_factory=dict)    # seconds of named parts of build_s (tool_compile_s, ...)


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its children it has waited for (nvcc, ...):
    unlike wall time, not stretched by other processes competing for the cores."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@PHASES.timed("checks")
def checked(s: Session, problem, case: Case, rec: dict, got: dict, ref: dict, when: str) -> dict | None:
    """Compare outputs with the reference: on a mismatch mark `rec` wrong (saying when) and return
    None; else keep the worst errors, mark it ok and return the outputs on the host."""
    host = s.fetch(got)
    try:
        with s.cpu_work():             # the comparison is CPU work: another worker may time meanwhile
            res = problem.check(host, ref, case)
    except CheckError as bad:
        rec.update(status="wrong", error=f"{when}: {bad}",
                   max_abs_err=records.finite(bad.result.max_abs_err),
                   max_rel_err=records.finite(bad.result.max_rel_err))
        cause = s.backend.known_cause(problem.name, case)
        if cause:
            rec["cause"] = cause
        return None
    rec.update(status="ok", max_abs_err=max(rec["max_abs_err"] or 0.0, res.max_abs_err),
               max_rel_err=max(rec["max_rel_err"] or 0.0, res.max_rel_err))
    return host


def follows_new_inputs(s: Session, problem, case: Case, rec: dict, b: Built, when: str) -> bool:
    """Negate the inputs in place under the built implementation and check one more call: a
    result computed once and replayed (or a stale cache) comes out wrong here."""
    ref = s.negate_inputs(problem, case, b)
    got, _ = s.call(b.run, b.outputs)
    return checked(s, problem, case, rec, got, ref, f"{when}, on new values written into the same input arrays") \
        is not None


def check_case(s: Session, problem, case: Case, rec: dict, scratch: Path | None) -> None:
    """Every seed: fresh inputs, poisoned outputs, build, one call, compare; on the first seed also
    that the call left its inputs alone and that a second call follows new input values."""
    seeds = [case.seed + i for i in range(N_SEEDS if case.kind == "test" else 1)]
    for i, seed in enumerate(seeds):
        b = s.prepare(problem, case, seed, scratch)
        got, first_call = s.call(b.run, b.outputs)
        if i == 0:
            rec["build_s"], rec["first_call_s"] = b.build_s, first_call
        rec["seeds"].append(seed)
        host = checked(s, problem, case, rec, got, b.ref, f"seed {seed}")
        if host is None:
            return
        if i == 0:
            if scratch is not None:
                save_for_crosscheck(scratch, problem, case, s, host)
            changed = s.changed_inputs(b)
            if changed:
                rec.update(status="wrong", error=f"seed {seed}: {changed}")
                return
            if not follows_new_inputs(s, problem, case, rec, b, f"seed {seed}"):
                return


@PHASES.timed("outputs kept for the cross-check")
def save_for_crosscheck(scratch: Path, problem, case: Case, s: Session, host: dict) -> None:
    folder = scratch / "outputs" / problem.name / case.name
    folder.mkdir(parents=True, exist_ok=True)
    label = s.backend.label()
    for name, (_, dt) in problem.output_spec(case).items():
        if name in host and np.asarray(host[name]).dtype == np.dtype(problems.base.DTYPES[dt].storage):
            np.save(folder / f"{label}.{name}.npy", decode(host[name], dt, np.float32))


