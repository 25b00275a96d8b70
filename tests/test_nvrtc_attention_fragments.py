"""The nvrtc attention kernel's fragment bookkeeping, checked without a GPU: a NumPy emulation of one
CTA at a time whose warp instructions (ldmatrix, ldmatrix.trans, mma.sync m16n8k16) follow the PTX
ISA's fragment layouts (the same as CuTe's SM80_16x8x16 ALayout / BLayout / CLayout and SM75 LDSM
traits), and whose index arithmetic (each thread's cp.async copies, the swizzle, each ldmatrix address,
the mask's key and row, P's registers as the A operand, the epilogue) is read out of the kernel's own
C++ source and evaluated here. What it cannot see: the cp.async pipeline's synchronisation, the
hardware's own rounding (products here are float64), and bf16 (P and the inputs are float16 here)."""
import ast
import math
import re

import numpy as np
import pytest

from tests.conftest import ROOT

LANE = np.arange(32)
G, T4 = LANE // 4, LANE % 4


def kernel_source() -> str:
    tree = ast.parse((ROOT / "backends/nvrtc/attention.py").read_text())
    return next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == "SOURCE")


SRC = kernel_source()


def find(pattern: str) -> tuple[str, ...]:
    found = re.findall(pattern, SRC, flags=re.M)
    assert len(found) == 1, f"{pattern!r}: {len(found)} matches in the kernel source"
    return found[0] if isinstance(found[0], tuple) else (found[0],)


def args(text: str) -> list[str]:
    """C call arguments split at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()]


def c_expr(text: str, *names: str):
    """A C integer expression (non-negative operands) as a Python function of `names` (and keywords)."""
    py = text.replace("/", "//").replace("&&", " and ").replace("||", " or ")
    code = compile(py, text, "eval")
    return lambda *values, **env: eval(code, {}, {**dict(zip(names, values, strict=False)), **env})   # noqa: S307


# --- the kernel's index arithmetic, from its source -------------------------------------------------------
SWZ = c_expr(find(r"__device__ inline int swz\(int r, int c\) \{ return (.+?); \}")[0], "r", "c")
Q_ADDR = [c_expr(a) for a in args(find(r"ldmatrix_x4\(qf\[kk\], sQ \+ swz<D>\((.*)\)\);$")[0])]
K_ADDR = [c_expr(a) for a in args(find(r"ldmatrix_x4\(kf, ks \+ swz<D>\((.*)\)\);$")[0])]
V_ADDR = [c_expr(a) for a in args(find(r"ldmatrix_x4_trans\(vf, vs \+ swz<D>\((.*)\)\);$")[0])]
MASK_IF = c_expr(find(r"if \((n0 \+ BN > S.*)\) \{$")[0])
KEY, ROW = (c_expr(x) for x in find(r"const int key = (.+?), row = (.+?);"))
PF = [(c_expr(t0), int(e0), c_expr(t1), int(e1))      # P's A registers a0..a3: (tile, element) of each half
      for t0, e0, t1, e1 in re.findall(r"pack2\(s\[([^\]]+)\]\[(\d)\], s\[([^\]]+)\]\[(\d)\], T\(\)\)", SRC)]
STORE = find(r"store2\(so \+ swz<D>\((.*?)\) \+ (.*?), o\[d\]\[(.*?)\] \* inv, o\[d\]\[(.*?)\] \* inv\);")
(STORE_ROW, STORE_CHUNK), STORE_ELEM, STORE_LO, STORE_HI = ([c_expr(a) for a in args(STORE[0])],
                                                          *(c_expr(x) for x in STORE[1:]))
OUT_R, OUT_C, OUT_ROW = (c_expr(x) for x in find(r"const int r = (.+?), c = (.+?), row = (.+?);"))
# load_tile: thread x's row and chunk, the tile rows its i-th copy covers, where it lands and reads
LOAD_STEP = c_expr(find(r"constexpr int CHUNKS = D / 8, STEP = (.+?);")[0])
LOAD_R, LOAD_C = (c_expr(x.replace("threadIdx.x", "x")) for x in find(r"const int r = (threadIdx.x .+?), c = (.+?);"))
LOAD_INSIDE = c_expr(find(r"const bool inside = (.+?);")[0])
LOAD_FROM_ROW = c_expr(find(r"const T\* from = src \+ \(long long\)\((.+?)\) \* D \+ c \* 8;")[0])
LOAD_TO_STEP = c_expr(find(r"\"r\"\(to \+ (.+?) \* \(int\)sizeof\(T\)\)")[0])
LOAD_FROM_STEP = c_expr(find(r"\"l\"\(inside \? from \+ (.+?) : src\)")[0])
# statements taken as written (the emulation below does the same); a change to them fails here first
FIXED = ("mma(s[2 * j], qf[kk], kf, T());", "mma(s[2 * j + 1], qf[kk], kf + 2, T());",
         "mma(o[2 * d], pf, vf, T());", "mma(o[2 * d + 1], pf, vf + 2, T());",
         "const int keys = CAUSAL ? min(S, m0 + BM) : S;", "const int n_blocks = (keys + BN - 1) / BN;",
         "const int row0 = m0 + warp * 16 + g;", "T* so = sQ + warp * 16 * D;",
         "if (key >= S || (CAUSAL && key > row)) s[j][e] = neg_inf();",
         "if (row < S) {\n            const uint4 chunk = *reinterpret_cast<const uint4*>(so + swz<D>(r, c));\n"
         "            *reinterpret_cast<uint4*>(O + (long long)row * D + c * 8) = chunk;",
         "const int m0 = (CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM;")

# --- the hardware, from the PTX ISA (mma.m16n8k16 .f16/.bf16, ldmatrix m8n8 .b16) -----------------------
# A (16x16, row): register r, half e of lane -> row g + 8 (r % 2), column 2 t + e + 8 (r // 2)
R, E = np.meshgrid(np.arange(4), np.arange(2), indexing="ij")
A_ROW = G[:, None, None] + 8 * (R % 2)[None]
A_COL = 2 * T4[:, None, None] + E[None] + 8 * (R // 2)[None]
# B (16x8, col): register r, half e -> k = 2 t + e + 8 r, n = g
RB, EB = np.meshgrid(np.arange(2), np.arange(2), indexing="ij")
B_K = 2 * T4[:, None, None] + EB[None] + 8 * RB[None]
B_N = np.broadcast_to(G[:, None, None], B_K.shape)
# C (16x8, f32): c[v] -> row g + 8 (v // 2), column 2 t + v % 2
V4 = np.arange(4)
C_ROW = G[:, None] + 8 * (V4 // 2)[None]
C_COL = 2 * T4[:, None] + (V4 % 2)[None]


def mma(c, a, b):
    """c (32, 4) float32 += A B, from a (32, 4, 2) and b (32, 2, 2) fragments."""
    am = np.zeros((16, 16))
    am[A_ROW, A_COL] = a
    bm = np.zeros((16, 8))
    bm[B_K, B_N] = b
    return (c + (am @ bm)[C_ROW, C_COL]).astype(np.float32)


def ldmatrix_x4(smem, addr, trans=False):
    """Lanes 8i..8i+7 give the rows of matrix i (8 elements, 16 bytes each); lane l receives, in
    register i, row l // 4 elements 2 (l % 4) + {0, 1} of matrix i (.trans: column l // 4, rows
    2 (l % 4) + {0, 1})."""
    addr = np.asarray(addr)
    assert addr.shape == (32,) and (addr % 8 == 0).all(), "ldmatrix rows are 16-byte aligned"
    mats = smem[addr[:, None] + np.arange(8)].reshape(4, 8, 8)
    i, e = np.arange(4)[None, :, None], np.arange(2)[None, None, :]
    g, t = G[:, None, None], T4[:, None, None]
    return mats[i, 2 * t + e, g] if trans else mats[i, g, 2 * t + e]      # (32, 4, 2)


def test_fragment_layouts_cover_each_element_once():
    for rows, cols, shape in ((A_ROW, A_COL, (16, 16)), (B_K, B_N, (16, 8)),
                              (np.broadcast_to(C_ROW, (32, 4)), C_COL, (16, 8))):
        hits = np.zeros(shape, int)
        np.add.at(hits, (rows, cols), 1)
        assert (hits == 1).all()


def test_swizzle_is_a_permutation_and_ldmatrix_rows_hit_distinct_bank_groups():
    for d in (64, 128):
        offsets = sorted(SWZ(r, c, D=d) for r in range(64) for c in range(d // 8))
        assert offsets == list(range(0, 64 * d, 8))
        for c in range(d // 8):        # 8 consecutive rows, one chunk column: 8 different 16-byte bank groups
            assert len({SWZ(r, c, D=d) % 64 // 8 for r in range(8)}) == 8


def test_the_kernel_source_holds_the_statements_emulated():
    missing = [s for s in FIXED if s not in SRC]
    assert not missing, missing
    assert len(PF) == 4


def emulate(q, k, v, causal, warps, bn):
    """O for one (batch, head) as the kernel computes it, CTA by CTA (q, k, v: (S, D) float16)."""
    s_len, d = q.shape
    bm, chunks = 16 * warps, d // 8
    scale_log2 = np.float32(1.4426950408889634 / math.sqrt(d))
    out = np.full((s_len, d), np.nan, np.float32)
    env = {"D": d, "BN": bn, "BM": bm, "S": s_len, "CAUSAL": causal}

    def load_tile(src, row0, rows):          # each thread's cp.async copies; src-size 0 beyond S: zeros
        tile = np.full(rows * d, np.nan, np.float16)
        threads = 32 * warps
        step = LOAD_STEP(THREADS=threads, CHUNKS=chunks)
        assert threads % chunks == 0 and step % 8 == 0 and rows % step == 0     # the kernel's static_assert
        for x in range(threads):
            r, c = LOAD_R(x=x, CHUNKS=chunks), LOAD_C(x=x, CHUNKS=chunks)
            for i in range(rows // step):
                w = {"r": r, "c": c, "i": i, "STEP": step, "D": d, "row0": row0, "S": s_len}
                to = SWZ(r, c, D=d) + LOAD_TO_STEP(**w)      # elements (the kernel: x sizeof(T) bytes)
                read = (LOAD_FROM_ROW(**w) * d + 8 * c + LOAD_FROM_STEP(**w)) if LOAD_INSIDE(**w) else None
                assert np.isnan(tile[to:to + 8]).all(), "one chunk copied twice"
                assert read is None or read + 8 <= src.size, "a copy reads beyond the matrix"
                tile[to:to + 8] = 0 if read is None else src.reshape(-1)[read:read + 8]
        assert not np.isnan(tile).any(), "a chunk of the tile left uncopied"
        return tile

    n_ctas = -(-s_len // bm)
    for block_idx in range(n_ctas):
        m0 = ((n_ctas - 1 - block_idx) if causal else block_idx) * bm
        keys = min(s_len, m0 + bm) if causal else s_len
        n_blocks = (keys + bn - 1) // bn
        sq = load_tile(q, m0, bm)
        kv = [(load_tile(k, nb * bn, bn), load_tile(v, nb * bn, bn)) for nb in range(n_blocks)]
        so_all = sq.copy()
        for warp in range(warps):
            w = {**env, "warp": warp, "lane": LANE, "g": G, "t": T4, "m0": m0}
            qf = [ldmatrix_x4(sq, SWZ(Q_ADDR[0](**w, kk=kk), Q_ADDR[1](**w, kk=kk), D=d)) for kk in range(d // 16)]
            o = [np.zeros((32, 4), np.float32) for _ in range(d // 8)]
            row_max = np.full((32, 2), -np.inf, np.float32)
            row_sum = np.zeros((32, 2), np.float32)
            row0 = m0 + warp * 16 + G
            for nb in range(n_blocks):
                n0 = nb * bn
                ks, vs = kv[nb]
                s = [np.zeros((32, 4), np.float32) for _ in range(bn // 8)]
                for kk in range(d // 16):
                    for j in range(bn // 16):
                        kf = ldmatrix_x4(ks, SWZ(K_ADDR[0](**w, kk=kk, j=j), K_ADDR[1](**w, kk=kk, j=j), D=d))
                        s[2 * j] = mma(s[2 * j], qf[kk], kf[:, 0:2])
                        s[2 * j + 1] = mma(s[2 * j + 1], qf[kk], kf[:, 2:4])
                if MASK_IF(**w, n0=n0):
                    for j in range(bn // 8):
                        for e in range(4):
                            key, row = KEY(**w, n0=n0, j=j, e=e, row0=row0), ROW(**w, n0=n0, j=j, e=e, row0=row0)
                            s[j][:, e] = np.where((key >= s_len) | (causal & (key > row)), -np.inf, s[j][:, e])
                elif causal or n0 + bn > s_len:      # the kernel skipped masking: nothing to mask
                    for j in range(bn // 8):
                        for e in range(4):
                            key, row = KEY(**w, n0=n0, j=j, e=e, row0=row0), ROW(**w, n0=n0, j=j, e=e, row0=row0)
                            assert not ((key >= s_len) | (causal & (key > row))).any()
                sm = np.stack(s, 1)                  # (32, BN/8, 4)
                mx = np.maximum(row_max, np.stack([sm[:, :, 0:2].max((1, 2)), sm[:, :, 2:4].max((1, 2))], 1))
                for x in (1, 2):                     # __shfl_xor_sync across the quad
                    mx = np.maximum(mx, mx[LANE ^ x])
                shift = np.where(mx == -np.inf, 0, mx * scale_log2).astype(np.float32)
                with np.errstate(invalid="ignore"):
                    alpha = np.exp2(row_max * scale_log2 - shift).astype(np.float32)
                assert not np.isnan(alpha).any()
                row_max = mx
                row_sum = row_sum * alpha
                o = [x * np.repeat(alpha, 2, axis=1) for x in o]
                p = np.exp2(sm * scale_log2 - np.repeat(shift, 2, axis=1)[:, None, :]).astype(np.float32)
                row_sum = row_sum + np.stack([p[:, :, 0:2].sum((1, 2)), p[:, :, 2:4].sum((1, 2))], 1)
                for kk in range(bn // 16):
                    regs = [np.stack([p[:, t0(kk=kk), e0], p[:, t1(kk=kk), e1]], 1) for t0, e0, t1, e1 in PF]
                    pf = np.stack(regs, 1).astype(np.float16)          # (32, 4, 2), rounded like pack2
                    for dd in range(d // 16):
                        vf = ldmatrix_x4(vs, SWZ(V_ADDR[0](**w, kk=kk, d=dd), V_ADDR[1](**w, kk=kk, d=dd), D=d),
                                         trans=True)
                        o[2 * dd] = mma(o[2 * dd], pf, vf[:, 0:2])
                        o[2 * dd + 1] = mma(o[2 * dd + 1], pf, vf[:, 2:4])
            for x in (1, 2):
                row_sum = row_sum + row_sum[LANE ^ x]
            so = so_all[warp * 16 * d:(warp + 1) * 16 * d]
            so[:] = np.nan
            for h in range(2):
                inv = (1 / row_sum[:, h]).astype(np.float32)
                for dd in range(d // 8):
                    at = SWZ(STORE_ROW(g=G, h=h), STORE_CHUNK(d=dd), D=d) + STORE_ELEM(t=T4)
                    so[at] = o[dd][:, STORE_LO(h=h)] * inv
                    so[at + 1] = o[dd][:, STORE_HI(h=h)] * inv
            for i in range(16 * chunks):
                w_i = {"i": i, "CHUNKS": chunks, "m0": m0, "warp": warp}
                r, c, row = OUT_R(**w_i), OUT_C(**w_i), OUT_ROW(**w_i, r=OUT_R(**w_i))
                if row < s_len:
                    at = SWZ(r, c, D=d)
                    out[row, 8 * c:8 * c + 8] = so[at:at + 8]
    return out


def reference(q, k, v, causal):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        s = np.where(np.arange(len(k))[None, :] > np.arange(len(q))[:, None], -np.inf, s)
    p = np.exp(s - s.max(1, keepdims=True))
    return p @ v / p.sum(1, keepdims=True)


@pytest.mark.parametrize("s_len,d,causal,warps,bn", [
    (1, 64, 0, 4, 64), (17, 64, 1, 4, 64), (127, 128, 0, 4, 64), (127, 64, 1, 4, 64), (200, 64, 1, 4, 64),
    (130, 128, 1, 4, 64),
    (150, 64, 1, 8, 32), (150, 64, 1, 4, 128), (70, 64, 0, 2, 16)])       # the knobs: BM != BN
def test_the_emulated_kernel_computes_attention(s_len, d, causal, warps, bn):
    rng = np.random.default_rng(s_len * d + causal)
    q, k, v = (rng.uniform(-1, 1, (s_len, d)).astype(np.float16) for _ in range(3))
    q = (q * 4).astype(np.float16)              # peaked rows: the running maximum matters
    got = emulate(q, k, v, bool(causal), warps, bn)
    assert not np.isnan(got).any(), "rows left unwritten"
    want = reference(q, k, v, bool(causal))
    np.testing.assert_allclose(got, want, atol=3e-3, rtol=1e-2)     # P rounded to float16: ~1e-3
