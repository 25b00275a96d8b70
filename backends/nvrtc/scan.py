"""Inclusive prefix sum in CUDA C++ (NVRTC), in one pass: CUB's decoupled look-back scan written from its
block-level parts the way its AgentScan (cub/agent/agent_scan.cuh) puts them together.

A block scans one tile of THREADS x ITEMS elements: cub::BlockLoad (warp-transposed: each warp reads its
stretch of the tile coalesced, then BlockExchange hands every thread ITEMS consecutive elements, widened to
float32 on load), cub::BlockScan's InclusiveSum with cub::TilePrefixCallbackOp as the prefix callback (thread 0
publishes the tile's aggregate in a cub::ScanTileState<float>; the first warp then looks back over the
predecessors' {status, value} words, 32 tiles a step, until it meets an inclusive prefix, and thread 0
publishes the tile's own), and cub::BlockStore (warp-transposed). Tile 0 has no predecessor: it scans without the
callback and publishes its inclusive prefix directly. The last tile is partial: it loads `valid` elements
(0.0 beyond them) and stores `valid`. Accumulation is float32 for every input type.

Tile ids are blockIdx.x, as CUB's DeviceScanKernel takes them: a tile waits only on lower ids, and blocks
are dispatched in increasing blockIdx.x, so each tile it waits on is already resident or finished (the
"thread blocks processing all of the predecessor tiles were scheduled" precondition of
TilePrefixCallbackOp). CUDA does not promise that order, CUB relies on it; a ticket counter would make it
formal at one more atomic per tile. The tile states are reset by a second kernel (ScanTileState::
InitializeStatus, CUB's DeviceScanInitKernel) launched before the scan on every run().

build() takes the tile (threads, items) and the look-back's delay constructor (a CUB type) as keywords
(tools/knob_sweep.py nvrtc scan), and `look_back="ticket"`: the look-back cuda_coop's scan writes (95% of
the copy on the H100 where this kernel's is at 85) as BlockScan's prefix callback in C++: tiles taken
from a ticket counter, one 64-bit {status, float} word a tile published with atomicExch and read with
atomicOr(0), a warp reading 32 predecessors at once with no back-off; the counter and words zeroed by
a kernel before each scan.

Constraints: one launch covers at most 2^31 - 1 tiles (n < 6.5e12 at the default tile); n >= 1."""
import numpy as np
from cuda.core import LaunchConfig, launch

from backends.nvrtc import CXX_TYPE, compile_cubin, device_arch

SOURCE = r"""
#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cuda/std/functional>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

using TileState = cub::ScanTileState<float>;     // per tile one 8-byte {status, float} word, after a warp of padding
using Sum = ::cuda::std::plus<>;

__global__ void init_tile_state(void* words, int tiles) {
    TileState state;
    state.Init(tiles, words, 0);
    state.InitializeStatus(tiles);               // every tile "not yet", the padding "out of bounds"
}

template <typename T, int THREADS, int ITEMS, typename LookBackDelay>
__global__ void __launch_bounds__(THREADS) inclusive_scan(const T* __restrict__ x, float* __restrict__ y,
                                                          long long n, void* words) {
    constexpr int TILE = THREADS * ITEMS;
    using Load = cub::BlockLoad<float, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Store = cub::BlockStore<float, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<float, THREADS, cub::BLOCK_SCAN_WARP_SCANS>;
    using LookBack = cub::TilePrefixCallbackOp<float, Sum, TileState, LookBackDelay>;
    __shared__ union {                           // the three phases reuse one buffer, a barrier between them
        typename Load::TempStorage load;
        struct { typename LookBack::TempStorage look_back; typename Scan::TempStorage scan; } scan;
        typename Store::TempStorage store;
    } smem;

    const int tile = blockIdx.x;
    const long long offset = static_cast<long long>(tile) * TILE;
    const int valid = static_cast<int>(min(static_cast<long long>(TILE), n - offset));
    TileState state;
    state.Init(gridDim.x, words, 0);

    float items[ITEMS];
    if (valid == TILE) Load(smem.load).Load(x + offset, items);
    else Load(smem.load).Load(x + offset, items, valid, 0.0f);
    __syncthreads();
    if (tile == 0) {
        float aggregate;
        Scan(smem.scan.scan).InclusiveSum(items, items, aggregate);
        if (threadIdx.x == 0 && gridDim.x > 1) state.SetInclusive(0, aggregate);
    } else {
        LookBack prefix(state, smem.scan.look_back, Sum{}, tile);
        Scan(smem.scan.scan).InclusiveSum(items, items, prefix);
    }
    __syncthreads();
    if (valid == TILE) Store(smem.store).Store(y + offset, items);
    else Store(smem.store).Store(y + offset, items, valid);
}

// the ticket look-back: words[0] counts tickets, words[1 + t] is tile t's {status (high 32), float (low 32)}
constexpr unsigned long long AGGREGATE = 1, PREFIX = 2;
constexpr unsigned FULL_MASK = 0xffffffffu;

__global__ void zero_words(unsigned long long* words, long long count) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) words[i] = 0;
}

struct TicketLookBack {                          // BlockScan calls it from warp 0, every lane
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
__global__ void __launch_bounds__(THREADS) inclusive_scan_ticket(const T* __restrict__ x, float* __restrict__ y,
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
    TicketLookBack prefix{words, tile};
    Scan(smem.scan).InclusiveSum(items, items, prefix);
    __syncthreads();
    if (valid == TILE) Store(smem.store).Store(y + offset, items);
    else Store(smem.store).Store(y + offset, items, valid);
}
"""

# cub/device/dispatch/tuning/tuning_scan.cuh (CCCL 3.0), sm90_tuning<float, plus>: 128 threads x 24 items,
# warp-transposed load and store, and how long a look-back waits before its first poll and between polls
# (1140 and 688 ns, where the grid has 500 tiles or more); AgentScan's accumulator is float32 for 16-bit
# inputs too, so the same tile.
THREADS, ITEMS = 128, 24
LOOK_BACK_DELAY = "cub::detail::fixed_delay_constructor_t<688, 1140>"
INIT_THREADS = 128            # dispatch_scan.cuh: INIT_KERNEL_THREADS
STATE_PADDING = 32            # ScanTileState::TILE_STATUS_PADDING: words before tile 0 a first look-back window reads
STATE_WORD_BYTES = 8          # ScanTileState<float>::TxnWord (uint2: status, value)


def kernel_name(case, threads=THREADS, items=ITEMS, look_back_delay=LOOK_BACK_DELAY, look_back="cub"):
    if look_back == "ticket":
        return ("zero_words", f"inclusive_scan_ticket<{CXX_TYPE[case.dtype]}, {threads}, {items}>")
    return ("init_tile_state", f"inclusive_scan<{CXX_TYPE[case.dtype]}, {threads}, {items}, {look_back_delay}>")


def build(case, inputs, outputs, stream, variant="", threads=THREADS, items=ITEMS, look_back_delay=LOOK_BACK_DELAY,
          look_back="cub"):
    import cupy                   # here, not at the top: an export (no GPU) imports this file without CuPy
    x, y = inputs["x"], outputs["y"]
    n = x.shape[0]
    tiles = -(-n // (threads * items))
    init_name, scan_name = kernel_name(case, threads, items, look_back_delay, look_back)
    code = compile_cubin(SOURCE, (init_name, scan_name), device_arch())
    init, scan = code.get_kernel(init_name), code.get_kernel(scan_name)
    if look_back == "ticket":     # the ticket counter, then a word a tile
        words = cupy.empty(1 + tiles, dtype=cupy.uint64)
        init_args, init_threads = (words.data.ptr, np.int64(1 + tiles)), 1 + tiles
    else:
        words = cupy.empty((STATE_PADDING + tiles) * STATE_WORD_BYTES, dtype=cupy.uint8)
        init_args, init_threads = (words.data.ptr, np.int32(tiles)), tiles
    init_config = LaunchConfig(grid=-(-init_threads // INIT_THREADS), block=INIT_THREADS)
    scan_config = LaunchConfig(grid=tiles, block=threads)
    scan_args = (x.data.ptr, y.data.ptr, np.int64(n), words.data.ptr)

    def run():
        launch(stream, init_config, init, *init_args)
        launch(stream, scan_config, scan, *scan_args)

    return run
