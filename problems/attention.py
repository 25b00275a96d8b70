"""Fused attention forward: O = softmax(Q K^T * scale + mask) V for every (batch, head).

Q, K, V and O are contiguous (B, H, S, D) arrays of bf16 or fp16; scale = 1/sqrt(D); `causal` (0 or 1,
part of the case) masks the upper triangle (key j > query i). Products accumulate in fp32.

The check: a float64 reference on every query row of a small case, on sampled (batch, head, row)
triples of a big one (both ends of the flattened rows whole), with a bound per element derived from
the steps every correct kernel takes:
- S = Q K^T * scale in fp32 from exact 16-bit products: |dS_ij| <= e_i = u32 (2 sqrt(D) + 16) scale
  max_j sum_k |q_ik k_jk| + 4 u32 max_j |S_ij| (the scale, a log2(e) folded into it, rounded);
- P = exp(S - m) / l in fp32, rounded to the input dtype before the second product (as tensor-core
  kernels feed it): relative error at most 2 u_in + 2 e_i + 16 u32 per p_ij;
- O = P V in fp32 over S terms: u32 (2 sqrt(S) + 16) of sum_j p_ij |v_jd|, the running maximum's
  rescaling a few u32 per block of keys (S / 8 u32 covers blocks of 16), then O rounded once;
- in fp16, a p_ij under the smallest normal is a subnormal: S u_in min_normal max|v| in all.
So |O_id - ref| <= (2 u_in + 2 e_i + u32 (2 sqrt(S) + 32 + S / 8)) sum_j p_ij |v_jd| + u_out |ref|
+ S u_in min_normal max|v| + min_normal.

Inputs make every usual mistake visible: each query row has its own magnitude, log-uniform over
ROW_SCALE (K, V in [-1, 1]), so some rows' scores pass 88 (exp overflows in fp32 unless the row's
maximum is subtracted) and others spread their weight over every key (a dropped mask, scale or last
partial tile of keys moves them far beyond the bound); the last query row of every head, which alone
sees the last keys under a causal mask, puts most of its weight on the last key, so a kernel that drops
the last partial tile of keys fails there too; poisoned outputs catch unwritten query tiles.
"""
import math

import numpy as np

from problems.base import DTYPES, Case, Expected, Problem, decode, encode, sample_rows, uniform

ROW_SCALE = (0.25, 256.0)      # per query row: |q| up to this, scores beyond fp32 exp's 88 in some rows
CHECKED_FLOPS = 2**31          # float64 work the check may take; bigger cases are checked on sampled rows
EDGE_ROWS = 128                # ... and on this many flattened rows at each end, whole
LAST_KEY_MARGIN = 2.0          # the last query row's score on the last key above log(S): ~3/4 of its weight
DIMS = ("B", "H", "S", "D", "causal")


def _case(kind, b, h, s, d, causal, dtype):
    mask = "causal" if causal else "full"
    return Case(f"{b}x{h}x{s}x{d}-{mask}-{dtype}", kind, dtype, {"B": b, "H": h, "S": s, "D": d, "causal": causal})


def attention_rows(q: np.ndarray, k: np.ndarray, v: np.ndarray, rows: np.ndarray, causal: bool):
    """float64 softmax(q k^T scale) v for the given query rows of one (batch, head): the output rows,
    and the terms of the bound (sum_j p |v|, max_j sum_k |q k|, max_j |s|) per row."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = (q[rows] @ k.T) * scale
    absqk = np.abs(q[rows]) @ np.abs(k).T
    if causal:
        masked = np.arange(k.shape[0])[None, :] > rows[:, None]
        s = np.where(masked, -np.inf, s)
        absqk = np.where(masked, 0.0, absqk)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p @ v, p @ np.abs(v), absqk.max(axis=1), np.abs(np.where(np.isfinite(s), s, 0.0)).max(axis=1)


class Attention(Problem):
    name = "attention"
    dims = DIMS
    flags = ("causal",)
    dtypes = ("bfloat16", "float16")
    compile_case_name = "2x1x127x128-full-bfloat16"
    quick_case_names = ("1x2x17x64-causal-bfloat16", "4x32x4096x128-full-bfloat16")
    roofline = "compute"
    # PyTorch's scaled_dot_product_attention, each CUDA backend its own row: the fastest is 100%
    vendor = ("torch_sdpa[flash]", "torch_sdpa[cudnn]", "torch_sdpa[efficient]")
    vendor_reference = "fastest"
    adjacent_reference = ("torch_sdpa[cudnn]", "torch_sdpa[flash]")
    linear_inputs = ("v",)

    def cases(self):
        test = [(b, h, s, d, c, dt) for dt in self.dtypes
                for b, h, s, d, c in ((1, 1, 1, 64, 0), (1, 2, 17, 64, 1), (2, 1, 127, 128, 0),
                                      (2, 2, 127, 64, 1), (1, 2, 1000, 64, 1), (1, 1, 1000, 128, 0))]
        bench = [(4, 32, 4096, 128, 0, "bfloat16"), (4, 32, 4096, 128, 1, "bfloat16"),
                 (16, 16, 1024, 64, 0, "bfloat16"), (1, 16, 16384, 128, 1, "bfloat16"),
                 (4, 32, 4096, 128, 0, "float16")]
        return [_case("test", *t) for t in test] + [_case("bench", *t) for t in bench]

    def host_cases(self):
        return [_case("bench", 1, 8, 1024, 64, causal, "float16") for causal in (0, 1)]   # NumPy has no bfloat16

    def random_shape(self, rng):
        """Odd sequence lengths (no tile divides them), head_dim 64 or 128, either mask."""
        return {"B": int(rng.integers(1, 3)), "H": int(rng.integers(1, 4)), "S": int(rng.integers(1, 1500)),
                "D": int(rng.choice((64, 128))), "causal": int(rng.integers(0, 2))}

    def input_shapes(self, case):
        shape = tuple(case.shape[d] for d in ("B", "H", "S", "D"))
        return {"q": shape, "k": shape, "v": shape}

    def output_spec(self, case):
        return {"o": (self.input_shapes(case)["q"], case.dtype)}

    def make_inputs(self, case, seed):
        rng = np.random.default_rng(seed)
        shape = self.input_shapes(case)["q"]
        low, high = (math.log(x) for x in ROW_SCALE)
        row_scale = np.exp(rng.uniform(low, high, size=shape[:-1] + (1,))).astype(np.float32)
        q = decode(uniform(rng, shape, case.dtype), case.dtype, np.float32) * row_scale
        k = uniform(rng, shape, case.dtype)
        # the last query row leans on the last key: its score stands log(S) + 2 above the others' spread
        # (|k|^2 is about D / 3), so most of that row's weight is on the last partial tile of keys
        gap = math.log(case.shape["S"]) + LAST_KEY_MARGIN
        q[..., -1, :] = decode(k[..., -1, :], case.dtype, np.float32) * (3 * gap / math.sqrt(case.shape["D"]))
        return {"q": encode(q, case.dtype), "k": k, "v": uniform(rng, shape, case.dtype)}

    def reference(self, case, inputs):
        b, h, s, d, causal = (case.shape[k] for k in DIMS)
        q, k, v = (decode(inputs[n], case.dtype).reshape(b * h, s, d) for n in ("q", "k", "v"))
        rows = None
        if b * h * s * 4 * s * d > CHECKED_FLOPS:
            rows = sample_rows(b * h * s, max(2, CHECKED_FLOPS // (4 * s * d)), case.seed, edge=min(s, EDGE_ROWS))
        picked = np.arange(b * h * s) if rows is None else rows
        value = np.empty((picked.size, d))
        weight = np.empty((picked.size, d))
        e_qk = np.empty(picked.size)
        e_s = np.empty(picked.size)
        heads = picked // s
        for head in np.unique(heads):
            at = np.nonzero(heads == head)[0]
            value[at], weight[at], e_qk[at], e_s[at] = attention_rows(q[head], k[head], v[head], picked[at] % s,
                                                                      bool(causal))
        u32, out = DTYPES["float32"].unit_roundoff, DTYPES[case.dtype]
        score_err = u32 * (2 * math.sqrt(d) + 16) * e_qk / math.sqrt(d) + 4 * u32 * e_s
        # + the running maximum's rescaling (a few u32 per key block) and, in fp16, P's subnormals
        relative = 2 * out.unit_roundoff + 2 * score_err + u32 * (2 * math.sqrt(s) + 32 + s / 8)
        subnormal_p = s * out.unit_roundoff * out.smallest_normal * np.abs(v).max()
        bound = relative[:, None] * weight + out.unit_roundoff * np.abs(value) + subnormal_p + out.smallest_normal
        if rows is None:
            value, bound = value.reshape(b, h, s, d), bound.reshape(b, h, s, d)
        return {"o": Expected(value, bound, rows)}

    def work(self, case):
        b, h, s, d, causal = (case.shape[k] for k in DIMS)
        flops = 4 * b * h * s * s * d // (2 if causal else 1)
        return 4 * b * h * s * d * DTYPES[case.dtype].itemsize, flops


PROBLEM = Attention()
