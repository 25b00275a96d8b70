"""Attention forward in TileLang, the way its FlashAttention example (example_mha_fwd_bhsd.py) writes
it: a program per (block of BLOCK_M queries, head, batch); Q's tile copied once into shared memory; K
and V tiles streamed through shared memory by a T.Pipelined loop of NUM_STAGES (on Hopper, TMA loads
issued by a producer warpgroup that TileLang adds, the rest in the consumer warpgroups); scores
S = Q K^T by T.gemm into a float32 fragment (warpgroup MMA), an online softmax (T.reduce_max over the
tile and the running maximum, T.exp2 with scale * log2(e) folded in, T.reduce_sum into the running
sum), P cast to the input dtype for the second T.gemm into the float32 accumulator, which is divided by
the sum once at the end and staged through shared memory to O.

Masks are the scores' initial values: each key tile's fragment starts at 0 where the key counts and
at -inf where it does not (key >= S; under the causal mask key > query, which covers key >= S for
every stored row), and the first T.gemm adds onto it. A causal program stops after the key tile
holding its last query's diagonal. Any S: the copies of a partial last tile read zeros past S (those
keys masked as above) and its rows >= S are not stored. bf16 and fp16, head dims 64 and 128; one
config for every case, the one the example's autotuner lists and its Hopper benchmark runs (128 x 128
tiles, 2 stages, 256 threads; program() and build() take others, as the example's function does:
tools/knob_sweep.py tilelang attention), and, as the example does, nvcc's fast math (exp2f as the bare
ex2.approx, approximate division, fp32 denormals flushed: far below what the lab's check tolerates)."""
import math

import tilelang.language as T

from backends.tilelang import compile_program

DTYPE = {"float16": "float16", "bfloat16": "bfloat16"}
ACCUM = "float32"
LOG2E = 1.4426950408889634
HEAD_DIMS = (64, 128)   # the lab's; D = 256 would overflow shared memory with these tiles
BLOCK_M = 128           # queries per program
BLOCK_N = 128           # keys per step of the loop
NUM_STAGES = 2          # K, V tiles in flight
THREADS = 256           # two warpgroups of 64 query rows (on Hopper TileLang adds a TMA producer warpgroup)
PASS_CONFIGS = {"tl.enable_fast_math": True}       # tilelang.PassConfigKey.TL_ENABLE_FAST_MATH


def supports(case, variant=""):
    if case.shape["D"] not in HEAD_DIMS:
        return f"head dim {case.shape['D']}: this kernel is written for {' and '.join(map(str, HEAD_DIMS))}"
    return None


def program(case, block_m=BLOCK_M, block_n=BLOCK_N, stages=NUM_STAGES, threads=THREADS):
    b, h, s, d, causal = (case.shape[k] for k in ("B", "H", "S", "D", "causal"))
    dtype = DTYPE[case.dtype]
    shape = (b, h, s, d)
    scale = LOG2E / math.sqrt(d)            # exp(x / sqrt(d)) == exp2(x * scale)

    @T.prim_func
    def attention(q: T.Tensor(shape, dtype), k: T.Tensor(shape, dtype), v: T.Tensor(shape, dtype),
                  o: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(s, block_m), h, b, threads=threads) as (bx, by, bz):
            q_s = T.alloc_shared((block_m, d), dtype)
            k_s = T.alloc_shared((block_n, d), dtype)
            v_s = T.alloc_shared((block_n, d), dtype)
            o_s = T.alloc_shared((block_m, d), dtype)
            scores = T.alloc_fragment((block_m, block_n), ACCUM)
            p = T.alloc_fragment((block_m, block_n), dtype)
            acc = T.alloc_fragment((block_m, d), ACCUM)
            row_max = T.alloc_fragment((block_m,), ACCUM)
            prev_max = T.alloc_fragment((block_m,), ACCUM)
            rescale = T.alloc_fragment((block_m,), ACCUM)
            tile_sum = T.alloc_fragment((block_m,), ACCUM)
            row_sum = T.alloc_fragment((block_m,), ACCUM)

            T.copy(q[bz, by, bx * block_m:(bx + 1) * block_m, :], q_s)
            T.clear(acc)
            T.clear(row_sum)
            T.fill(row_max, -T.infinity(ACCUM))
            key_tiles = T.ceildiv(s, block_n)
            if causal:      # keys up to this program's last query
                key_tiles = T.min(key_tiles, T.ceildiv((bx + 1) * block_m, block_n))

            for kt in T.Pipelined(key_tiles, num_stages=stages):
                T.copy(k[bz, by, kt * block_n:(kt + 1) * block_n, :], k_s)
                for i, j in T.Parallel(block_m, block_n):
                    if causal:      # key <= query (and so < S for every stored row)
                        scores[i, j] = T.if_then_else(bx * block_m + i >= kt * block_n + j, 0, -T.infinity(ACCUM))
                    else:
                        scores[i, j] = T.if_then_else(kt * block_n + j < s, 0, -T.infinity(ACCUM))
                T.gemm(q_s, k_s, scores, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                T.copy(row_max, prev_max)
                T.reduce_max(scores, row_max, dim=1, clear=False)      # max of the tile and the running max
                for i in T.Parallel(block_m):
                    rescale[i] = T.exp2(prev_max[i] * scale - row_max[i] * scale)
                for i, j in T.Parallel(block_m, block_n):
                    scores[i, j] = T.exp2(scores[i, j] * scale - row_max[i] * scale)
                T.reduce_sum(scores, tile_sum, dim=1)
                for i in T.Parallel(block_m):
                    row_sum[i] = row_sum[i] * rescale[i] + tile_sum[i]
                T.copy(scores, p)
                for i, j in T.Parallel(block_m, d):
                    acc[i, j] *= rescale[i]

                T.copy(v[bz, by, kt * block_n:(kt + 1) * block_n, :], v_s)
                T.gemm(p, v_s, acc, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_m, d):
                acc[i, j] /= row_sum[i]
            T.copy(acc, o_s)
            T.copy(o_s, o[bz, by, bx * block_m:(bx + 1) * block_m, :])

    return attention


def build(case, inputs, outputs, stream, variant="", block_m=BLOCK_M, block_n=BLOCK_N, stages=NUM_STAGES,
          threads=THREADS):
    kernel = compile_program(program(case, block_m, block_n, stages, threads), pass_configs=PASS_CONFIGS)
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]

    def run():
        kernel(q, k, v, o)

    return run
