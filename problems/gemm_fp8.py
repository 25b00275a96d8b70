"""FP8 GEMM with block scales: C = dequant(A) @ dequant(B)^T in bfloat16, as Hopper trains and serves
its large GEMMs (DeepSeek-V3's recipe: 1x128 activation tiles, 128x128 weight blocks).

Inputs (e4m3 as its uint8 bits on the host, problems/base.py):
- a (M, K) e4m3 and a_scale (M, K / BLOCK) float32: one scale per 1 x BLOCK tile of each row;
- b (N, K) e4m3, K-major (the layout the MMA takes B in), and b_scale (ceil(N / BLOCK), K / BLOCK)
  float32: one scale per BLOCK x BLOCK block;
- a tensorwise case (shape key blockwise=0) has one scale each, a_scale and b_scale of shape (1, 1).
dequant(A)[m, k] = a[m, k] * a_scale[m, k // BLOCK]; dequant(B)[n, k] = b[n, k] * b_scale[n // BLOCK,
k // BLOCK]; K is a multiple of BLOCK, M and N need not be.

What a correct kernel may do, and what the bound allows for it:
1. Its tensor cores add FP8 products into an accumulator that keeps about MMA_ACCUMULATOR_BITS of
   mantissa (Hopper's FP8 wgmma, as DeepSeek-V3 measured it), truncating once per MMA_K of K.
2. It adds that partial sum, scaled, into a float32 accumulator at least every PROMOTE_K of K (the
   "2x accumulator" of CUTLASS's and DeepGEMM's Hopper kernels): the partial sum then errs by at
   most PROMOTE_K / MMA_K truncations of its own size.
3. The float32 sums of the promoted blocks err as GEMM's fp32 accumulation does; the result rounds
   once to bfloat16.
A kernel that never promotes (the whole of K in the tensor cores' precision) is off by about K / MMA_K
truncations of a growing sum: the inputs' mean is not zero, so on the long-K case nearly every
element is off by more than the bound (tests/test_gemm_fp8.py keeps that, a dropped scale and a
tensorwise scale applied to a blockwise case as wrong solutions, and the promoting kernel as a right one).
"""
import math

import numpy as np

from problems.base import (DTYPES, E4M3_MAX, E4M3_VALUES, Case, Expected, Problem, encode_e4m3, log_uniform,
                           sample_rows)

BLOCK = 128                    # the scales' tiles: 1 x BLOCK of A, BLOCK x BLOCK of B
MMA_K = 32                     # K of one FP8 wgmma: its products join the accumulator once per MMA_K
MMA_ACCUMULATOR_BITS = 14      # mantissa bits (with the leading one) the FP8 MMA's accumulator keeps
PROMOTE_K = 128                # the most of K a kernel may add in the tensor cores before float32
CHECKED_FLOPS = 2**33          # bigger products are checked on sampled rows (NaN check stays full)
# inputs: uniform in [LOW, HIGH) (a mean above zero, so a sum that is never promoted drifts), each
# tile's magnitude 2^TILE_OCTAVES at most either way, so a scale applied to the wrong tile shows
LOW, HIGH, TILE_OCTAVES = -0.5, 1.0, 3.0
SWEEP_SIDE = 2048


def _case(kind, m, n, k, blockwise=1):
    scaling = "blockwise" if blockwise else "tensorwise"
    return Case(f"{m}x{n}x{k}-e4m3-{scaling}", kind, "float8_e4m3", {"M": m, "N": n, "K": k, "blockwise": blockwise})


def _tiles(n: int) -> int:
    return -(-n // BLOCK)


def _scaled(rng, rows: int, k: int, row_block: int, blockwise: bool):
    """e4m3 values of shape (rows, k) and their float32 scales: per row_block x BLOCK tile, or one."""
    real = rng.uniform(LOW, HIGH, (rows, k))
    if not blockwise:
        scale = np.array([[np.abs(real).max() / E4M3_MAX]], dtype=np.float32)
        return encode_e4m3(real / scale[0, 0]), scale
    row_tiles = _tiles(rows) if row_block > 1 else rows
    magnitude = np.exp2(rng.uniform(-TILE_OCTAVES, TILE_OCTAVES, (row_tiles, k // BLOCK)))
    real *= expand(magnitude, rows, row_block)
    tiles = np.abs(real).reshape(rows, k // BLOCK, BLOCK).max(axis=2)          # (rows, k / BLOCK)
    if row_block > 1:
        padded = np.zeros((row_tiles * row_block, k // BLOCK))
        padded[:rows] = tiles
        tiles = padded.reshape(row_tiles, row_block, k // BLOCK).max(axis=1)
    scale = (tiles / E4M3_MAX).astype(np.float32)
    scale[scale == 0] = 1.0
    return encode_e4m3(real / expand(scale, rows, row_block)), scale


def expand(scale: np.ndarray, rows: int, row_block: int) -> np.ndarray:
    """A scale per tile -> a scale per element of a (rows, K) operand (a (1, 1) scale broadcasts)."""
    if scale.shape == (1, 1):
        return scale.astype(np.float64)
    per_row = np.repeat(scale, row_block, axis=0)[:rows] if row_block > 1 else scale
    return np.repeat(per_row.astype(np.float64), BLOCK, axis=1)


def dequantized(inputs: dict, case: Case) -> tuple[np.ndarray, np.ndarray]:
    """dequant(A) (M, K) and dequant(B) (N, K) in float64, exactly."""
    m, n = case.shape["M"], case.shape["N"]
    a = E4M3_VALUES[inputs["a"]] * expand(inputs["a_scale"], m, 1)
    b = E4M3_VALUES[inputs["b"]] * expand(inputs["b_scale"], n, BLOCK)
    return a, b


class GemmFp8(Problem):
    name = "gemm_fp8"
    dims = ("M", "N", "K", "blockwise")
    flags = ("blockwise",)
    dtypes = ("float8_e4m3",)
    compile_case_name = "129x257x256-e4m3-blockwise"
    quick_case_names = ("129x257x256-e4m3-blockwise", "8192x8192x8192-e4m3-blockwise")
    roofline = "compute"
    linear_inputs = ("a",)
    # the vendor's FP8 GEMM with the same scaling: cuBLASLt through torch._scaled_mm
    vendor = ("torch_scaled_mm",)
    vendor_reference = "fastest"
    adjacent_reference = ("torch_scaled_mm",)

    def cases(self):
        # M and N ragged against BLOCK (N once not a multiple of 8), one row, and a long K: a kernel
        # that never promotes to float32 fails there
        test = [(1, 1, 128, 1), (129, 257, 256, 1), (200, 264, 384, 1), (72, 1048, 512, 1), (1, 264, 128, 1),
                (64, 72, 16384, 1), (200, 264, 384, 0), (64, 72, 16384, 0)]
        bench = [(8192, 8192, 8192, 1), (128, 7168, 16384, 1), (4096, 7168, 2048, 1), (8192, 8192, 8192, 0)]
        return [_case("test", *t) for t in test] + [_case("bench", *b) for b in bench]

    def host_cases(self):
        return [_case("bench", 1024, 1024, 1024, 1)]

    def random_shape(self, rng):
        """M and N anything in [1, 2048], K a multiple of BLOCK up to 2048, blockwise or not."""
        return {"M": log_uniform(rng, 1, SWEEP_SIDE), "N": log_uniform(rng, 1, SWEEP_SIDE),
                "K": BLOCK * log_uniform(rng, 1, SWEEP_SIDE // BLOCK), "blockwise": int(rng.random() < 0.75)}

    def custom_case(self, shape, dtype, seed=0, kind="bench"):
        if shape.get("K", BLOCK) % BLOCK:
            raise ValueError(f"gemm_fp8 needs K a multiple of {BLOCK} (its scales' tiles), not {shape['K']}")
        return super().custom_case(shape, dtype, seed, kind)

    def input_shapes(self, case):
        m, n, k, blockwise = (case.shape[d] for d in self.dims)
        scales = ((m, k // BLOCK), (_tiles(n), k // BLOCK)) if blockwise else ((1, 1), (1, 1))
        return {"a": (m, k), "a_scale": scales[0], "b": (n, k), "b_scale": scales[1]}

    def make_inputs(self, case, seed):
        rng = np.random.default_rng(seed)
        m, n, k, blockwise = (case.shape[d] for d in self.dims)
        a, a_scale = _scaled(rng, m, k, 1, blockwise)
        b, b_scale = _scaled(rng, n, k, BLOCK, blockwise)
        return {"a": a, "a_scale": a_scale, "b": b, "b_scale": b_scale}

    def output_spec(self, case):
        return {"c": ((case.shape["M"], case.shape["N"]), "bfloat16")}

    def reference(self, case, inputs):
        m, n, k = (case.shape[d] for d in ("M", "N", "K"))
        a, b = dequantized(inputs, case)
        rows = None
        if 2 * m * n * k > CHECKED_FLOPS:
            rows = sample_rows(m, max(2, CHECKED_FLOPS // (2 * n * k)), case.seed, edge=1)
            a = a[rows]
        value = a @ b.T
        abs_product = np.abs(a) @ np.abs(b).T
        return {"c": Expected(value, self.bound(k, value, abs_product), rows)}

    @staticmethod
    def bound(k: int, value: np.ndarray, abs_product: np.ndarray) -> np.ndarray:
        """Allowed |C - reference| (the module's docstring: steps 1-3)."""
        mma = (PROMOTE_K // MMA_K) * 2.0 ** -(MMA_ACCUMULATOR_BITS - 1)
        fp32 = DTYPES["float32"].unit_roundoff * (2 * math.sqrt(k / PROMOTE_K) + 16)
        out = DTYPES["bfloat16"]
        return (mma + fp32) * abs_product + out.unit_roundoff * np.abs(value) + out.smallest_normal

    def footprint(self, case):
        shapes = self.input_shapes(case)
        m, n = case.shape["M"], case.shape["N"]
        scales = math.prod(shapes["a_scale"]) + math.prod(shapes["b_scale"])
        return math.prod(shapes["a"]) + math.prod(shapes["b"]) + 4 * scales + 2 * m * n

    def work(self, case):
        m, n, k = (case.shape[d] for d in ("M", "N", "K"))
        return self.footprint(case), 2 * m * n * k


PROBLEM = GemmFp8()
