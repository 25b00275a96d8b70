"""Inclusive prefix sum in TileLang, in one pass: T.cumsum scans a tile in shared memory, and the
programs pass their carries by decoupled look-back (the single-pass scan of Merrill and Garland, as
CUB does it), written with TileLang's scalar atomics (T.atomic_add with return_prev, T.atomic_load /
T.atomic_store with memory orders) and a while loop in thread 0, since the language has no
device-wide scan.

A tile is ROWS x COLS float32 in shared memory. T.cumsum(dim=1) lowers to one warp a row (32-wide
shuffle segments, a carry between them; a 1-D T.cumsum would be one warp for the whole tile), and a
second T.cumsum over the row totals (one warp) gives each row its offset and the tile's sum. Each
program takes its tile from a ticket counter (so every tile it waits on belongs to a program already
running), publishes its tile's sum, then walks back over its predecessors' words, adding sums until it
meets an inclusive prefix, and publishes its own. A word packs a status (0: nothing yet, 1: sum,
2: inclusive prefix) over the float32's bits in one uint64 (TileLang 0.1.15's atomic_add-with-return
and atomic_store templates do not compile for int64), so one atomic store publishes both. The ticket
and the words are zeroed before every launch. 16-bit inputs are widened to float32 on load. Full
tiles load and store unmasked vectors; the partial last tile masks by element (the masks are
explicit, so TileLang's own bounds guards, which would mask every tile, are off). n is a
compile-time constant: each case is its own kernel. build() takes the tile's rows, columns and threads
as keywords (tools/knob_sweep.py tilelang scan)."""
import torch
import tilelang.language as T

from backends.tilelang import compile_program

DTYPE = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}
ROWS, COLS, THREADS = 8, 2048, 256     # a tile of 16384 elements; one warp scans each row
AGGREGATE, PREFIX = 1, 2               # a tile's published status
PASS_CONFIGS = {"tl.disable_safe_memory_legalize": True}   # tilelang.PassConfigKey.TL_DISABLE_SAFE_MEMORY_ACCESS


def program(case, tile_rows=ROWS, tile_cols=COLS, threads=THREADS):
    n, dtype = case.shape["n"], DTYPE[case.dtype]
    tile_size = tile_rows * tile_cols
    tiles = -(-n // tile_size)

    def word(status, value):
        """The status in the high 32 bits, the float32's bits in the low 32."""
        bits = T.cast(T.reinterpret(value, "uint32"), "uint64")
        return (T.cast(status, "uint64") << 32) | bits

    @T.prim_func
    def scan(x: T.Tensor((n,), dtype), y: T.Tensor((n,), "float32"), state: T.Tensor((tiles + 1,), "uint64")):
        with T.Kernel(tiles, threads=threads):
            tx = T.get_thread_binding()
            shared = T.alloc_shared((tile_rows, tile_cols), "float32")
            rows = T.alloc_shared((tile_rows + 1,), "float32")     # 0 and the row totals; scanned: row offsets
            ticket = T.alloc_shared((1,), "int32")
            carry = T.alloc_shared((1,), "float32")
            if tx == 0:
                ticket[0] = T.cast(T.atomic_add(state[0], T.uint64(1), return_prev=True), "int32")
            tile = ticket[0]
            base = tile * tile_size
            if base + tile_size <= n:                               # a full tile: vector loads, no masks
                for i, j in T.Parallel(tile_rows, tile_cols):
                    shared[i, j] = T.cast(x[base + i * tile_cols + j], "float32")
            else:
                for i, j in T.Parallel(tile_rows, tile_cols):
                    k = base + i * tile_cols + j
                    shared[i, j] = T.if_then_else(k < n, T.cast(x[k], "float32"), T.float32(0))
            T.cumsum(shared, dim=1)
            for i in T.Parallel(tile_rows + 1):
                rows[i] = T.if_then_else(i == 0, T.float32(0), shared[i - 1, tile_cols - 1])
            T.cumsum(rows, dim=0)
            if tx == 0:
                local = rows[tile_rows]
                T.atomic_store(state[1 + tile], word(T.if_then_else(tile == 0, PREFIX, AGGREGATE), local),
                               memory_order="release")
                exclusive = T.alloc_var("float32", init=0)
                back = T.alloc_var("int32", init=tile - 1)
                while back >= 0:                                # look back until an inclusive prefix
                    w = T.atomic_load(state[1 + back], memory_order="acquire")
                    status = T.cast(w >> 32, "int32")
                    if status != 0:
                        exclusive += T.reinterpret(T.cast(w & 0xFFFFFFFF, "uint32"), "float32")
                        back = T.if_then_else(status == PREFIX, -1, back - 1)
                if tile > 0:
                    T.atomic_store(state[1 + tile], word(PREFIX, exclusive + local), memory_order="release")
                carry[0] = exclusive
            if base + tile_size <= n:
                for i, j in T.Parallel(tile_rows, tile_cols):
                    y[base + i * tile_cols + j] = shared[i, j] + rows[i] + carry[0]
            else:
                for i, j in T.Parallel(tile_rows, tile_cols):
                    k = base + i * tile_cols + j
                    if k < n:
                        y[k] = shared[i, j] + rows[i] + carry[0]

    return scan


def build(case, inputs, outputs, stream, variant="", tile_rows=ROWS, tile_cols=COLS, threads=THREADS):
    kernel = compile_program(program(case, tile_rows, tile_cols, threads), pass_configs=PASS_CONFIGS)
    x, y = inputs["x"], outputs["y"]
    tiles = -(-x.numel() // (tile_rows * tile_cols))
    state = torch.zeros(tiles + 1, dtype=torch.int64, device=x.device)   # the ticket, then a word a tile
    words = state.view(torch.uint64)                  # the kernel's 64-bit atomics take uint64 (above)

    def run():
        state.zero_()
        kernel(x, y, words)

    return run
