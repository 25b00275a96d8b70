"""Inclusive prefix sum in CUDA C++ (NVRTC), in one pass: CUB's block-level parts (cub::BlockLoad,
cub::BlockScan, cub::BlockStore) around a decoupled look-back written as BlockScan's prefix callback, as
cuda_coop's scan writes it.

A block takes its tile id from a ticket counter (one atomicAdd), so every tile it waits on belongs to a
block that started before it: the look-back cannot wait on a block not yet scheduled, whatever order the
GPU dispatches blocks in. It scans one tile of THREADS x ITEMS elements: BlockLoad (warp-transposed: each
warp reads its stretch of the tile coalesced, then BlockExchange hands every thread ITEMS consecutive
elements, widened to float32 on load), BlockScan's InclusiveSum with the look-back as its prefix callback,
BlockStore (warp-transposed). The look-back (warp 0): lane 0 publishes the tile's aggregate as one 64-bit
{status, float} word (atomicExch), then the warp reads its 32 predecessors' words at once (atomicOr(0)),
polling with no back-off until none is empty, adds those up to the nearest inclusive prefix, steps 32
tiles back if there is none, and lane 0 publishes the tile's inclusive prefix. The counter and the words
are zeroed by a kernel before each scan. The last tile is partial: it loads `valid` elements (0.0 beyond
them) and stores `valid`. Accumulation is float32 for every input type.

Why not CUB's own look-back (cub::TilePrefixCallbackOp with its sm90 delays, tile ids from blockIdx.x):
in the same kernel it reaches 85.2% of the copy on the H100 at 2^28 float32 where this one reaches 97.0
(reports/evidence/scan/h100/look-back-sweeps). build() takes the tile (threads, items) as keywords
(tools/knob_sweep.py nvrtc scan).

Constraints: n >= 1; the words take 8 bytes a tile."""
import numpy as np
from cuda.core import LaunchConfig, launch

from backends.gpus import tuned
from backends.nvrtc import CXX_TYPE, compile_cubin, device_arch

SOURCE = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// words[0] counts tickets, words[1 + t] is tile t's {status (high 32), float (low 32)}
constexpr unsigned long long AGGREGATE = 1, PREFIX = 2;
constexpr unsigned FULL_MASK = 0xffffffffu;

__global__ void zero_words(unsigned long long* words, long long count) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) words[i] = 0;
}

struct LookBack {                                // BlockScan calls it from warp 0, every lane
    unsigned long long* words;
    long long tile;
    __device__ void publish(long long t, unsigned long long status, float value) {
        atomicExch(words + 1 + t, (status << 32) | __float_as_uint(value));
    }
    __device__ unsigned long long word(long long t) {    // before tile 0: an inclusive prefix of 0.0
        return t < 0 ? PREFIX << 32 : atomicOr(words + 1 + t, 0ull);
    }
    __device__ float operator()(float aggregate) {
        const int lane = threadIdx.x % 32;
        if (lane == 0) publish(tile, AGGREGATE, aggregate);
        float exclusive = 0.0f;
        for (long long end = tile; end > 0;) {   // the predecessors before `end` are not added yet
            unsigned long long w = word(end - 1 - lane);
            while (__any_sync(FULL_MASK, (w >> 32) == 0))
                if ((w >> 32) == 0) w = word(end - 1 - lane);
            const unsigned prefixes = __ballot_sync(FULL_MASK, (w >> 32) == PREFIX);
            float v = (prefixes & ((1u << lane) - 1)) ? 0.0f : __uint_as_float(static_cast<unsigned>(w));
            for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(FULL_MASK, v, d);
            exclusive += v;
            end = prefixes ? 0 : end - 32;
        }
        if (lane == 0) publish(tile, PREFIX, exclusive + aggregate);
        return exclusive;
    }
};

template <typename T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) inclusive_scan(const T* __restrict__ x, float* __restrict__ y,
                                                          long long n, unsigned long long* words) {
    constexpr int TILE = THREADS * ITEMS;
    using Load = cub::BlockLoad<float, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Store = cub::BlockStore<float, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<float, THREADS, cub::BLOCK_SCAN_WARP_SCANS>;
    __shared__ union {
        typename Load::TempStorage load;
        typename Scan::TempStorage scan;
        typename Store::TempStorage store;
    } smem;
    __shared__ long long ticket;

    if (threadIdx.x == 0) ticket = static_cast<long long>(atomicAdd(words, 1ull));
    __syncthreads();
    const long long tile = ticket, offset = tile * TILE;
    const int valid = static_cast<int>(min(static_cast<long long>(TILE), n - offset));
    float items[ITEMS];
    if (valid == TILE) Load(smem.load).Load(x + offset, items);
    else Load(smem.load).Load(x + offset, items, valid, 0.0f);
    __syncthreads();
    LookBack prefix{words, tile};
    Scan(smem.scan).InclusiveSum(items, items, prefix);
    __syncthreads();
    if (valid == TILE) Store(smem.store).Store(y + offset, items);
    else Store(smem.store).Store(y + offset, items, valid);
}
"""

# cub/device/dispatch/tuning/tuning_scan.cuh (CCCL 3.0), sm90_tuning<float, plus>: 128 threads x 24 items,
# warp-transposed load and store; AgentScan's accumulator is float32 for 16-bit inputs too, so the same tile.
THREADS, ITEMS = 128, 24
# per GPU kind where its sweep differs: on the H200, 128 x 32 reaches 88.6% of the copy at 2^28 float32,
# CUB's 128 x 24 82.1 (reports/evidence/h200-tuning/sweeps/nvrtc-scan.json): fewer look-backs a byte
BY_GPU = {"H200": (128, 32)}
ZERO_THREADS = 128


def kernel_name(case, threads=THREADS, items=ITEMS):
    return ("zero_words", f"inclusive_scan<{CXX_TYPE[case.dtype]}, {threads}, {items}>")


def build(case, inputs, outputs, stream, variant="", threads=None, items=None):
    import cupy                   # here, not at the top: an export (no GPU) imports this file without CuPy
    x, y = inputs["x"], outputs["y"]
    tile = tuned(BY_GPU, (THREADS, ITEMS))
    threads, items = threads or tile[0], items or tile[1]
    n = x.shape[0]
    tiles = -(-n // (threads * items))
    zero_name, scan_name = kernel_name(case, threads, items)
    code = compile_cubin(SOURCE, (zero_name, scan_name), device_arch())
    zero, scan = code.get_kernel(zero_name), code.get_kernel(scan_name)
    words = cupy.empty(1 + tiles, dtype=cupy.uint64)          # the ticket counter, then a word a tile
    zero_config = LaunchConfig(grid=-(-(1 + tiles) // ZERO_THREADS), block=ZERO_THREADS)
    scan_config = LaunchConfig(grid=tiles, block=threads)
    zero_args = (words.data.ptr, np.int64(1 + tiles))
    scan_args = (x.data.ptr, y.data.ptr, np.int64(n), words.data.ptr)

    def run():
        launch(stream, zero_config, zero, *zero_args)
        launch(stream, scan_config, scan, *scan_args)

    return run
