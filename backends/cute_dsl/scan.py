"""Inclusive prefix sum in CuTe DSL, in one pass: each CTA scans a tile in registers, shuffles and
shared memory, and the CTAs pass their carries by decoupled look-back (the single-pass scan of
Merrill and Garland, as CUB's ScanTileState does it for a 4-byte sum: one 64-bit status word a
tile). The DSL has no device-wide scan, so the look-back is written with cute.arch's atomic and its
scoped loads and stores.

A tile is `threads` threads x `vectors_per_thread` 128-bit vectors of input (by default 128 x 8:
4096 float32 or 8192 16-bit elements), tiled as the elementwise example tiles it (zipped_divide and a
thread-value layout), so that thread t's k-th vector is the tile's vector k * threads + t and each
warp's copies are coalesced. A CTA:

1. takes its tile from a ticket (an atomic add on a global counter), so every tile it waits on
   belongs to a CTA already running (the hardware starts blocks in no promised order);
2. copies its vectors into registers (128-bit copy atoms; the ragged last tile, if any, element by
   element under a coordinate predicate, zeros elsewhere) and widens 16-bit inputs to float32;
3. scans each vector in its thread, each vector's sums across the warp (shfl.up), and the warp
   totals ("chunks": vector k of warp w is chunk k * warps + w, in tile order) in warp 0 through
   shared memory, which gives the tile's aggregate;
4. warp 0 publishes the aggregate (tile 0: its inclusive prefix) and looks back at a window of 32
   predecessors, a lane each: it waits until no word of the window is empty, then adds the nearest
   inclusive prefix and the aggregates after it, or all 32 aggregates and slides the window back;
   then it publishes the tile's inclusive prefix;
5. each thread adds the tile's carry, its chunk's prefix and its warp prefix to its scanned vectors
   and stores them as float32 (128-bit copies; element by element in the ragged tile).

A tile's word packs (status << 32) | float32 bits in one int64 (status 0: nothing yet, 1: aggregate,
2: inclusive prefix), written and read whole with relaxed gpu-scope st/ld: an aligned 64-bit access is
single-copy atomic and the word is all a reader needs, so no fence (CUB's default memory order for
this case too). The ticket and the words are one int64 tensor (ticket, then a word a tile) that a
zeroing kernel clears before every scan, on the same stream, from the same compiled function.

Constraints: n + tile < 2**31 (Int32 offsets); x's base 16-byte aligned (as_cute assumes it); n is
compiled in (static shapes), so each n compiles its own kernels; the chunks (warps x vectors per
thread) at most 32 or a multiple of 32."""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass import Boolean, Float32, Int32, Int64
from cutlass._mlir.dialects import nvvm

from backends.cute_dsl import as_cute, compile_once, launcher

THREADS, VECTORS_PER_THREAD = 128, 8     # a tile: 128 threads x 8 vectors of 128 bits of input (the H100
                                         # sweep's best, by 2 points over 256 x 4: same elements;
                                         # reports/evidence/scan/h100/look-back-sweeps)
RETRY_SLEEP_NS = 100                     # nanosleep between polls of a window that still has an empty word
VECTOR_BITS = 128
WARP = 32                                # lanes; also the look-back window, a predecessor a lane
EMPTY, AGGREGATE, PREFIX = 0, 1, 2       # a tile's status: nothing yet, its sum, its inclusive prefix
LOW_32 = 0xFFFFFFFF                      # a word's float32 bits
ZERO_THREADS = 256                       # the zeroing kernel's block


def vector_elements(dtype_width: int) -> int:
    return VECTOR_BITS // dtype_width


def tile_elements(dtype_width: int, threads: int = THREADS, vectors_per_thread: int = VECTORS_PER_THREAD) -> int:
    return threads * vectors_per_thread * vector_elements(dtype_width)


@cute.jit
def warp_inclusive_scan(value: Float32, lane: Int32) -> Float32:
    """Kogge-Stone inclusive sum across the 32 lanes: shfl.up by 1, 2, ... 16, added where a lane exists below."""
    for level in cutlass.range_constexpr(5):
        below = cute.arch.shuffle_sync_up(value, 1 << level)
        if lane >= (1 << level):
            value = value + below
    return value


@cute.jit
def warp_exclusive(inclusive: Float32, lane: Int32) -> Float32:
    """The lane below's inclusive sum (0 in lane 0): exact, unlike inclusive minus the lane's own value."""
    below = cute.arch.shuffle_sync_up(inclusive, 1)
    if lane == 0:
        below = Float32(0.0)
    return below


@cute.jit
def publish(words: cute.Tensor, tile: Int32, status: cutlass.Constexpr, value: Float32):
    """One relaxed 64-bit store at gpu scope: a reader sees the status and its value together or not at all."""
    word = (Int64(status) << 32) | (Int64(value.bitcast(Int32)) & Int64(LOW_32))
    cute.arch.store(words.iterator + tile, word, sem="relaxed", scope="gpu")


@cute.jit
def read_word(words: cute.Tensor, tile: Int32) -> Int64:
    """A predecessor's word (a relaxed gpu-scope load: never an L1 copy); tiles before the first read as an
    inclusive prefix of 0."""
    word = Int64(PREFIX) << 32
    if tile >= 0:
        word = cute.arch.load(words.iterator + tile, Int64, sem="relaxed", scope="gpu")
    return word


@cute.jit
def look_back(words: cute.Tensor, tile: Int32, lane: Int32, sleep_ns: cutlass.Constexpr) -> Float32:
    """Warp-wide: the sum of every tile before `tile` (its exclusive prefix), from its predecessors'
    words, WARP at a time. Lane i reads tile newest - (WARP - 1 - i): lane 31 the nearest predecessor."""
    exclusive = Float32(0.0)
    newest = tile - 1
    searching = Boolean(True)
    while searching:
        predecessor = newest - (WARP - 1 - lane)
        word = read_word(words, predecessor)
        while cute.arch.vote_any_sync((word >> 32) == Int64(EMPTY)):
            if cutlass.const_expr(sleep_ns > 0):
                nvvm.nanosleep(Int32(sleep_ns).ir_value())
            if (word >> 32) == Int64(EMPTY):
                word = read_word(words, predecessor)
        status = Int32(word >> 32)
        value = Int32(word & Int64(LOW_32)).bitcast(Float32)
        prefixes = cute.arch.vote_ballot_sync(status == PREFIX)
        if prefixes != 0:                    # the nearest inclusive prefix ends the search
            nearest = Int32(WARP - 1) - Int32(cute.arch.clz(prefixes))
            if lane < nearest:
                value = Float32(0.0)
            searching = Boolean(False)
        exclusive = exclusive + cute.arch.warp_reduction_sum(value)
        newest = newest - WARP
    return exclusive


@cute.jit
def scan_chunks(s_chunks: cute.Tensor, lane: Int32, chunks: cutlass.Constexpr) -> Float32:
    """Warp 0: each chunk total in shared memory replaced by its exclusive prefix within the tile; returns
    the tile's aggregate. A lane takes chunks_per_lane consecutive chunks (1 while there are <= 32)."""
    per_lane = max(1, chunks // WARP)
    running = cute.make_rmem_tensor((per_lane,), Float32)       # the lane's own inclusive sums
    total = Float32(0.0)
    for c in cutlass.range_constexpr(per_lane):
        if lane * per_lane + c < chunks:
            total = total + s_chunks[lane * per_lane + c]
        running[c] = total
    inclusive = warp_inclusive_scan(total, lane)
    lane_prefix = warp_exclusive(inclusive, lane)
    for c in cutlass.range_constexpr(per_lane):
        if lane * per_lane + c < chunks:
            if cutlass.const_expr(c == 0):
                s_chunks[lane * per_lane] = lane_prefix
            else:
                s_chunks[lane * per_lane + c] = lane_prefix + running[c - 1]
    return cute.arch.shuffle_sync(inclusive, WARP - 1)


@cute.kernel
def zero_kernel(mState: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * ZERO_THREADS + tidx
    if i < cute.size(mState):
        mState[i] = Int64(0)


@cute.kernel
def scan_kernel(gX: cute.Tensor, gY: cute.Tensor, cY: cute.Tensor, mState: cute.Tensor,
                thr_layout: cute.Layout, val_layout: cute.Layout, n: cutlass.Constexpr,
                vectors_per_thread: cutlass.Constexpr, sleep_ns: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()
    vector, warps = cute.size(val_layout), cute.size(thr_layout) // WARP
    chunks = warps * vectors_per_thread
    tile_size = cute.size(gY, mode=[0])
    words = cute.make_tensor(mState.iterator + 1, cute.make_layout((cute.size(gY, mode=[1]),)))

    smem = cutlass.utils.SmemAllocator()
    s_ticket = smem.allocate_tensor(Int32, cute.make_layout((1,)), byte_alignment=16)
    s_chunks = smem.allocate_tensor(Float32, cute.make_layout((chunks,)), byte_alignment=16)
    s_carry = smem.allocate_tensor(Float32, cute.make_layout((1,)), byte_alignment=16)

    # 1. the ticket: this CTA's tile
    if tidx == 0:
        s_ticket[0] = Int32(cute.arch.atomic_add(mState.iterator.llvm_ptr, Int64(1), sem="relaxed", scope="gpu"))
    cute.arch.sync_threads()
    tile = s_ticket[0]

    # 2. the tile's vectors in registers, as float32 (flat index k * vector + j: vector k, element j)
    x_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gX.element_type, num_bits_per_copy=VECTOR_BITS)
    y_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Float32, num_bits_per_copy=VECTOR_BITS)
    y_thr = cute.make_tiled_copy_tv(y_atom, thr_layout, val_layout).get_slice(tidx)
    tX = cute.make_tiled_copy_tv(x_atom, thr_layout, val_layout).get_slice(tidx).partition_S(gX[((None,), tile)])
    tY, tC = y_thr.partition_D(gY[((None,), tile)]), y_thr.partition_D(cY[((None,), tile)])
    rX = cute.make_fragment_like(tX)
    ragged = cutlass.const_expr(n % tile_size != 0)          # a last tile that n ends inside
    full = (tile + 1) * tile_size <= n
    if cutlass.const_expr(not ragged):
        cute.copy(x_atom, tX, rX)
    else:
        if full:
            cute.copy(x_atom, tX, rX)
        else:
            rX.fill(0)
            for i in cutlass.range_constexpr(cute.size(rX)):
                if cute.elem_less(tC[i], (n,)):
                    rX[i] = tX[i]
    rY = cute.make_rmem_tensor(tY.shape, Float32)
    rY.store(rX.load().to(Float32))

    # 3. scans: in the thread, across the warp; the chunk totals through shared memory
    warp_prefix = cute.make_rmem_tensor((vectors_per_thread,), Float32)
    for k in cutlass.range_constexpr(vectors_per_thread):
        for j in cutlass.range_constexpr(1, vector):
            rY[k * vector + j] = rY[k * vector + j] + rY[k * vector + j - 1]
        inclusive = warp_inclusive_scan(rY[k * vector + vector - 1], lane)
        warp_prefix[k] = warp_exclusive(inclusive, lane)
        if lane == WARP - 1:
            s_chunks[k * warps + warp] = inclusive
    cute.arch.sync_threads()

    # 4. warp 0: the chunks' prefixes and the tile's aggregate, then the look-back
    if warp == 0:
        aggregate = scan_chunks(s_chunks, lane, chunks)
        carry = Float32(0.0)
        if tile == 0:
            if lane == 0:
                publish(words, tile, PREFIX, aggregate)
        else:
            if lane == 0:
                publish(words, tile, AGGREGATE, aggregate)
            carry = look_back(words, tile, lane, sleep_ns)
            if lane == 0:
                publish(words, tile, PREFIX, carry + aggregate)
        if lane == 0:
            s_carry[0] = carry
    cute.arch.sync_threads()

    # 5. carry + chunk prefix + warp prefix + the thread's own scan, stored
    carry = s_carry[0]
    for k in cutlass.range_constexpr(vectors_per_thread):
        offset = carry + s_chunks[k * warps + warp] + warp_prefix[k]
        for j in cutlass.range_constexpr(vector):
            rY[k * vector + j] = rY[k * vector + j] + offset
    if cutlass.const_expr(not ragged):
        cute.copy(y_atom, rY, tY)
    else:
        if full:
            cute.copy(y_atom, rY, tY)
        else:
            for i in cutlass.range_constexpr(cute.size(rY)):
                if cute.elem_less(tC[i], (n,)):
                    tY[i] = rY[i]


@cute.jit
def scan(mX: cute.Tensor, mY: cute.Tensor, mState: cute.Tensor, stream: cuda.CUstream,
         threads: cutlass.Constexpr, vectors_per_thread: cutlass.Constexpr, sleep_ns: cutlass.Constexpr):
    thr_layout = cute.make_layout((threads,))
    val_layout = cute.make_layout((vector_elements(mX.element_type.width),))
    tiler = (tile_elements(mX.element_type.width, threads, vectors_per_thread),)
    gX, gY = cute.zipped_divide(mX, tiler), cute.zipped_divide(mY, tiler)
    cY = cute.zipped_divide(cute.make_identity_tensor(mY.shape), tiler)
    zero_kernel(mState).launch(grid=[cute.ceil_div(cute.size(mState), ZERO_THREADS), 1, 1],
                               block=[ZERO_THREADS, 1, 1], stream=stream)
    scan_kernel(gX, gY, cY, mState, thr_layout, val_layout, mY.shape[0], vectors_per_thread, sleep_ns).launch(
        grid=[cute.size(gY, mode=[1]), 1, 1], block=[threads, 1, 1], stream=stream)


def knobs_of(threads=THREADS, vectors_per_thread=VECTORS_PER_THREAD, sleep_ns=RETRY_SLEEP_NS):
    chunks = threads // WARP * vectors_per_thread
    if threads % WARP or not (chunks <= WARP or chunks % WARP == 0):
        raise ValueError(f"{threads} threads x {vectors_per_thread} vectors: whole warps, and at most 32 "
                         f"chunks or a multiple of 32")
    return {"threads": threads, "vectors_per_thread": vectors_per_thread, "sleep_ns": sleep_ns}


def tile_state(x, knobs):
    """The ticket, then one status word per tile: zeroed by the compiled function before each scan."""
    import torch
    tile = tile_elements(8 * x.element_size(), knobs["threads"], knobs["vectors_per_thread"])
    return torch.zeros(1 + -(-x.numel() // tile), dtype=torch.int64, device=x.device)


def compile_case(case, inputs, outputs, variant, options="", **knobs):
    """`knobs`: threads, vectors_per_thread, sleep_ns (knobs_of's defaults). Returns the compiled function
    and its arguments, as CuTe tensors and as torch tensors (x, y, the tile state)."""
    knobs = knobs_of(**knobs)
    torch_args = (inputs["x"], outputs["y"], tile_state(inputs["x"], knobs))
    tensors = [as_cute(t, variant) for t in torch_args]
    return compile_once(scan, tensors, variant, options, **knobs), (tensors, torch_args)


def build(case, inputs, outputs, stream, variant="", **knobs):
    compiled, (tensors, torch_args) = compile_case(case, inputs, outputs, variant, **knobs)
    return launcher(compiled, tensors, torch_args, stream, variant)
