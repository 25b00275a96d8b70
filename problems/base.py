"""What a problem is: cases, seeded inputs, a float64 reference and a dtype-aware check.

Arrays on the host are NumPy arrays in a *storage* dtype: NumPy has no bfloat16, so bfloat16
values travel as their uint16 bit patterns and every backend reinterprets them (a free view); FP8
(e4m3: 4 exponent bits of bias 7, 3 mantissa bits, no infinities, 448 the largest) as its uint8 bits.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Dtype:
    name: str
    storage: type            # NumPy dtype that holds the bits on the host
    unit_roundoff: float     # u = 2**-(mantissa bits + 1)
    smallest_normal: float
    itemsize: int


DTYPES = {
    "float32": Dtype("float32", np.float32, 2.0**-24, 2.0**-126, 4),
    "float16": Dtype("float16", np.float16, 2.0**-11, 2.0**-14, 2),
    "bfloat16": Dtype("bfloat16", np.uint16, 2.0**-8, 2.0**-126, 2),
    "float8_e4m3": Dtype("float8_e4m3", np.uint8, 2.0**-4, 2.0**-6, 1),
}
E4M3_MAX = 448.0
E4M3_NAN = 0x7F                  # S.1111.111; e4m3 ("fn") has no infinities


def _e4m3_values() -> np.ndarray:
    """The value of each of the 256 e4m3 bit patterns (float64; NaN at 0x7F and 0xFF)."""
    bits = np.arange(256)
    sign = np.where(bits & 0x80, -1.0, 1.0)
    exp, man = (bits >> 3) & 0xF, bits & 0x7
    mag = np.where(exp == 0, man / 8.0 * 2.0**-6, (1.0 + man / 8.0) * 2.0 ** (exp - 7.0))
    values = sign * mag
    values[(bits & 0x7F) == E4M3_NAN] = np.nan
    return values


E4M3_VALUES = _e4m3_values()
ALIASES = {"fp32": "float32", "f32": "float32", "single": "float32",
           "fp16": "float16", "f16": "float16", "half": "float16",
           "bf16": "bfloat16", "e4m3": "float8_e4m3", "fp8": "float8_e4m3"}


def dtype_of(name: str) -> Dtype:
    """The Dtype for a name or alias; ValueError lists the valid names."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in DTYPES:
        valid = ", ".join(sorted(DTYPES) + sorted(ALIASES))
        raise ValueError(f"unknown dtype {name!r} (valid: {valid})")
    return DTYPES[key]


def encode_e4m3(values) -> np.ndarray:
    """Round to e4m3 (nearest even), saturating at ±E4M3_MAX as the MMA's inputs are scaled to be;
    NaN stays NaN. Returns the uint8 bit patterns."""
    x = np.asarray(values, dtype=np.float64)
    mag = np.minimum(np.abs(x), E4M3_MAX)
    # the spacing of the values near each magnitude: 2^(exponent - 3), subnormals' 2^-9 below 2^-6
    exp = np.floor(np.log2(np.maximum(mag, 2.0**-6)))
    step = 2.0 ** (exp - 3)
    rounded = np.round(mag / step) * step          # np.round: ties to even
    finite = E4M3_VALUES[:0x7F]                     # the non-negative values, ascending
    bits = np.searchsorted(finite, rounded).astype(np.uint8)
    bits |= np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))
    bits[np.isnan(x)] = E4M3_NAN
    return bits


def encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round float values to `dtype` (nearest even) and return them in storage form."""
    if dtype == "float8_e4m3":
        return encode_e4m3(values)
    if dtype != "bfloat16":
        return np.asarray(values).astype(DTYPES[dtype].storage, copy=False)
    bits = np.array(values, dtype=np.float32).view(np.uint32)      # a copy we may round in place
    odd = bits >> np.uint32(16)
    odd &= np.uint32(1)
    bits += np.uint32(0x7FFF)
    bits += odd
    bits >>= np.uint32(16)
    return bits.astype(np.uint16)


def decode(stored: np.ndarray, dtype: str, to=np.float64) -> np.ndarray:
    """Storage form -> values as `to` (float32 holds every value of the four dtypes exactly)."""
    if dtype == "float8_e4m3":
        return E4M3_VALUES[np.asarray(stored, dtype=np.uint8)].astype(to, copy=False)
    if dtype != "bfloat16":
        return np.asarray(stored).astype(to, copy=False)
    widened = np.asarray(stored, dtype=np.uint16).astype(np.uint32) << np.uint32(16)
    return widened.view(np.float32).astype(to, copy=False)


def poison(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A host array of NaNs in storage form: whatever an implementation leaves unwritten shows."""
    return encode(np.full(shape, np.nan, dtype=np.float32), dtype)


def negate(stored: np.ndarray, dtype: str) -> np.ndarray:
    """-values in storage form, exactly (a sign-bit flip; bfloat16's bits are uint16)."""
    if dtype == "float8_e4m3":
        return stored ^ np.uint8(0x80)
    return stored ^ np.uint16(0x8000) if dtype == "bfloat16" else np.negative(stored)


def uniform(rng: np.random.Generator, shape, dtype: str, low=-1.0, high=1.0) -> np.ndarray:
    """Random values already representable in `dtype`, in storage form (never zeros-only)."""
    values = rng.random(shape, dtype=np.float32)
    values *= np.float32(high - low)
    values += np.float32(low)
    return encode(values, dtype)


def sample_rows(n: int, count: int, seed: int, edge: int = 1 << 16) -> np.ndarray:
    """Indices to check on a huge output: both ends whole (where tails go wrong), random between."""
    rng = np.random.default_rng(seed + 12345)
    picks = [np.arange(min(edge, n)), np.arange(max(0, n - edge), n), rng.integers(0, n, size=min(n, count))]
    rows = np.sort(np.concatenate(picks))
    return rows[np.concatenate(([True], rows[1:] != rows[:-1]))]    # np.unique is far slower here


@dataclass(frozen=True)
class Case:
    """One concrete input configuration of a problem."""
    name: str
    kind: str                     # "test" or "bench"
    dtype: str
    shape: Mapping[str, int]
    seed: int = 0

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "dtype": self.dtype,
                "shape": dict(self.shape), "seed": self.seed}


@dataclass(frozen=True)
class Expected:
    """The float64 answer for one output and how far an implementation may stray from it."""
    value: np.ndarray             # float64 reference, for the rows compared
    bound: np.ndarray             # allowed |out - value|, broadcastable to value
    rows: np.ndarray | None = None   # compare only these rows (huge outputs; NaN check stays full)


@dataclass
class CheckResult:
    ok: bool
    message: str = ""
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0      # max |out - ref| / max |ref|, over the compared elements


class CheckError(AssertionError):
    """Wrong output: the message says where and by how much."""

    def __init__(self, result: CheckResult):
        super().__init__(result.message)
        self.result = result


SWEEP_MAX_DIM = 4096


def parse_shape(text: str) -> dict[str, int]:
    """`KEY=INT[,KEY=INT...]` (as `ways run --shape` takes it); ValueError with a one-line reason."""
    shape = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ValueError(f"malformed --shape {text!r}: expected KEY=INT[,KEY=INT...], e.g. M=4096,N=4096,K=1024")
        try:
            number = int(value, 0)
        except ValueError:
            raise ValueError(f"--shape {key}={value!r} is not an integer") from None
        if number < 0:
            raise ValueError(f"--shape {key}={number} must not be negative")
        shape[key] = number
    return shape


def log_uniform(rng, low: int, high: int) -> int:
    """An integer in [low, high], its logarithm uniform: small and large sizes equally likely."""
    return int(min(high, max(low, round(math.exp(rng.uniform(math.log(low), math.log(high + 1)))))))


class Problem:
    """A problem is a spec: override the marked methods; checking is shared."""
    name: str = ""
    dims: tuple[str, ...] = ()    # the shape's keys, e.g. ("rows", "cols")
    dtypes: tuple[str, ...] = ()
    compile_case_name: str = ""   # the small case on which compile time is measured
    quick_case_names: tuple[str, ...] = ()   # `ways run --quick` on a GPU: a test case and the headline bench case
    roofline = "memory"           # "memory": judged against `ceiling`; "compute": against `vendor`
    # a memory-bound problem's ceiling, measured in the same run: "copy" (bytes read + written, as
    # much of each) or "read" (a read stream: a reduction writes next to nothing)
    ceiling = "copy"
    # a vendor's own kernel of the same access pattern: where its row is faster than the lab's stream of
    # that pattern in the same run, it is the memory-bound ceiling
    ceiling_rows: tuple[str, ...] = ()
    vendor: tuple[str, ...] = ()  # implementations whose speed is the compute-bound reference
    max_elements = 2**34          # bigger shapes are refused as impossible for one GPU
    flags: tuple[str, ...] = ()   # shape keys that are 0 or 1 (a mask on or off), not sizes
    vendor_reference = "first"    # % of peak against the first vendor row timed, or the "fastest" of them
    # vendor implementations, in order of preference, timed right before and after each compute-bound
    # row in its own worker (A, B, A): every % is then against a reference in the row's own GPU state
    adjacent_reference: tuple[str, ...] = ()
    # inputs whose sign flip flips every output (the problem is linear in them): see negated()
    linear_inputs: tuple[str, ...] = ()

    # -- to override ----------------------------------------------------------------------
    def cases(self) -> list[Case]:
        raise NotImplementedError

    def host_cases(self) -> list[Case]:
        """Bench cases sized for a run without a GPU, the first the headline: a host row takes about a
        second a call and the float64 reference fits a small machine. Such a run times these in
        place of the GPU's bench cases."""
        return []

    def make_inputs(self, case: Case, seed: int) -> dict:
        raise NotImplementedError

    def output_spec(self, case: Case) -> dict[str, tuple[tuple[int, ...], str]]:
        raise NotImplementedError

    def reference(self, case: Case, inputs: dict) -> dict[str, Expected]:
        raise NotImplementedError

    def work(self, case: Case) -> tuple[int, int]:
        """(bytes that must move through device memory, flops)."""
        raise NotImplementedError

    def random_shape(self, rng) -> dict[str, int]:
        """A shape `ways sweep` tries: by default each dimension log-uniform in [1, SWEEP_MAX_DIM];
        a problem draws from the classes its implementations get wrong (ragged tiles, long rows)."""
        return {d: log_uniform(rng, 1, SWEEP_MAX_DIM) for d in self.dims}

    # -- shared ---------------------------------------------------------------------------
    def all_cases(self) -> list[Case]:
        """Every built-in case: the test cases, a GPU's bench cases and the host's."""
        return self.cases() + self.host_cases()

    def headline_case(self) -> Case:
        """The case a problem's verdict is read from on a GPU: its first bench case."""
        return next(c for c in self.cases() if c.kind == "bench")

    def case(self, name: str) -> Case:
        for c in self.all_cases():
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no case {name!r}")

    def run_cases(self, on_gpu: bool) -> list[Case]:
        """A run's built-in cases: the test cases, and the bench cases of the device the run has."""
        return self.cases() if on_gpu else [c for c in self.cases() if c.kind == "test"] + self.host_cases()

    def quick_cases(self, on_gpu: bool) -> tuple[str, ...]:
        """`ways run --quick`: a test case and the headline bench case of the device the run has."""
        test, bench = self.quick_case_names
        return (test, bench if on_gpu else self.host_cases()[0].name)

    def footprint(self, case: Case) -> int:
        """Bytes of all inputs and outputs of a case (host and device each hold this much)."""
        item = DTYPES[case.dtype].itemsize
        ins = sum(math.prod(s) for s in self.input_shapes(case).values()) * item
        outs = sum(math.prod(s) * DTYPES[d].itemsize for s, d in self.output_spec(case).values())
        return ins + outs

    def input_shapes(self, case: Case) -> dict[str, tuple[int, ...]]:
        raise NotImplementedError

    def custom_case(self, shape: Mapping[str, int], dtype: str, seed: int = 0, kind: str = "bench") -> Case:
        """A user's own case, validated: ValueError with a one-line reason otherwise."""
        dt = dtype_of(dtype).name
        if dt not in self.dtypes:
            raise ValueError(f"{self.name} takes dtypes {', '.join(self.dtypes)}, not {dt}")
        missing = [d for d in self.dims if d not in shape]
        extra = [k for k in shape if k not in self.dims]
        if missing or extra:
            said = [f"{what}: {','.join(keys)}" for what, keys in (("missing", missing), ("unknown", extra)) if keys]
            raise ValueError(f"{self.name} needs shape keys {','.join(self.dims)} ({'; '.join(said)})")
        for k, v in shape.items():
            if k in self.flags and v not in (0, 1):
                raise ValueError(f"shape {k}={v!r} is a flag: 0 or 1")
            if k not in self.flags and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ValueError(f"shape {k}={v!r} must be a positive integer")
        dims = {d: int(shape[d]) for d in self.dims}
        label = "-".join(f"{k}{v}" for k, v in dims.items())
        case = Case(f"custom-{label}-{dt}", kind, dt, dims, seed)
        shapes = list(self.input_shapes(case).values()) + [s for s, _ in self.output_spec(case).values()]
        if max(math.prod(s) for s in shapes) > self.max_elements:
            raise ValueError(f"shape {label} is too large (over {self.max_elements} elements in one array)")
        return case

    def negated(self, case: Case, inputs: dict, ref: dict[str, Expected]) -> tuple[dict, dict[str, Expected]]:
        """New inputs and their exact reference at the cost of one pass: every linear input
        negated, so every output is too (rounding is symmetric). The harness writes them into the
        arrays an implementation was built on, to see that run() reads its inputs each call."""
        new = {k: negate(v, case.dtype) if k in self.linear_inputs else v for k, v in inputs.items()}
        return new, {k: Expected(-e.value, e.bound, e.rows) for k, e in ref.items()}

    def check(self, out: dict[str, np.ndarray], ref: dict[str, Expected], case: Case) -> CheckResult:
        """Compare host outputs (storage form) with the reference.

        Returns the errors when every output is within bounds; raises CheckError otherwise.
        """
        worst = CheckResult(True)
        for name, (shape, dtype) in self.output_spec(case).items():
            res = _check_one(name, out.get(name), shape, dtype, ref[name])
            if not res.ok:
                raise CheckError(res)
            worst.max_abs_err = max(worst.max_abs_err, res.max_abs_err)
            worst.max_rel_err = max(worst.max_rel_err, res.max_rel_err)
        return worst


def _check_one(name, out, shape, dtype, exp: Expected) -> CheckResult:
    if out is None:
        return CheckResult(False, f"output {name!r} missing")
    out = np.asarray(out)
    if tuple(out.shape) != tuple(shape):
        return CheckResult(False, f"output {name!r} has shape {tuple(out.shape)}, expected {tuple(shape)}")
    want = np.dtype(DTYPES[dtype].storage)
    if out.dtype != want:
        return CheckResult(False, f"output {name!r} has dtype {out.dtype}, expected {dtype} (stored as {want})")
    bad = ~np.isfinite(decode(out, dtype, np.float32))     # float32 holds every value exactly
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        return CheckResult(False, f"output {name!r}: {int(bad.sum())} of {bad.size} elements are NaN/inf"
                                  f" (unwritten?), first at index {first}",
                           max_abs_err=math.inf, max_rel_err=math.inf)
    if exp.rows is not None and exp.value.ndim < out.ndim:      # rows of the flattened leading axes
        out = out.reshape(-1, *exp.value.shape[1:])
    got = decode(out if exp.rows is None else out[exp.rows], dtype)
    err = np.abs(got - exp.value)
    scale = float(np.max(np.abs(exp.value))) if exp.value.size else 0.0
    max_abs = float(err.max()) if err.size else 0.0
    max_rel = max_abs / scale if scale > 0 else max_abs
    over = err > np.broadcast_to(exp.bound, err.shape)
    if over.any():
        idx = tuple(int(i) for i in np.argwhere(over)[0])
        if exp.rows is not None:
            idx = (int(exp.rows[idx[0]]),) + idx[1:]
        local = tuple(int(i) for i in np.argwhere(over)[0])
        return CheckResult(False,
                           f"output {name!r}: {int(over.sum())} of {err.size} compared elements off;"
                           f" first at {idx}: got {got[local]!r}, expected {exp.value[local]!r}"
                           f" (allowed ±{float(np.broadcast_to(exp.bound, err.shape)[local]):.3g});"
                           f" max abs err {max_abs:.3g}, max rel err {max_rel:.3g}",
                           max_abs_err=max_abs, max_rel_err=max_rel)
    return CheckResult(True, "", max_abs, max_rel)


def summation_bound(abs_sum: np.ndarray, n: int, acc_dtype: str = "float32") -> np.ndarray:
    """Allowed error of a sum of n terms in `acc_dtype`, given the sum of |terms|.

    A blocked or tree sum errs by about u*log2(n) of sum|x|; sqrt(n) leaves room for a sequential
    chunk per thread while still catching one missing term of a row of a few thousand.
    """
    return DTYPES[acc_dtype].unit_roundoff * (2.0 * math.sqrt(n) + 16.0) * abs_sum
