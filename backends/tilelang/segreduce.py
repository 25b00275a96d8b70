"""Per-row sum in TileLang: each program takes ROWS rows and walks their columns in COLS-wide tiles
(T.Pipelined: the next tile's loads in flight), widening to float32 and summing each tile with
T.reduce_sum into a running float32 total; T.copy zero-fills past the matrix's edges."""
import tilelang.language as T

from backends.tilelang import compile_program

DTYPE = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}


def plan(cols: int) -> tuple[int, int, int]:
    """(rows per program, tile columns, threads): long rows one per program, short rows several."""
    if cols >= 4096:
        return 1, 4096, 256
    tile = max(32, 1 << (cols - 1).bit_length()) if cols <= 1024 else 1024
    return max(1, 2048 // tile), tile, 128


def program(case):
    rows, cols, dtype = case.shape["rows"], case.shape["cols"], DTYPE[case.dtype]
    br, bc, threads = plan(cols)

    @T.prim_func
    def row_sum(x: T.Tensor((rows, cols), dtype), y: T.Tensor((rows,), "float32")):
        with T.Kernel(T.ceildiv(rows, br), threads=threads) as bx:
            tile = T.alloc_fragment((br, bc), dtype)
            wide = T.alloc_fragment((br, bc), "float32")
            part = T.alloc_fragment((br,), "float32")
            total = T.alloc_fragment((br,), "float32")
            T.clear(total)
            for c in T.Pipelined(T.ceildiv(cols, bc), num_stages=2):
                T.copy(x[bx * br, c * bc], tile)
                for i, j in T.Parallel(br, bc):
                    wide[i, j] = tile[i, j].astype("float32")
                T.reduce_sum(wide, part, dim=1)
                for i in T.Parallel(br):
                    total[i] += part[i]
            T.copy(total, y[bx * br])

    return row_sum


def build(case, inputs, outputs, stream, variant=""):
    kernel = compile_program(program(case))
    x, y = inputs["x"], outputs["y"]

    def run():
        kernel(x, y)

    return run
