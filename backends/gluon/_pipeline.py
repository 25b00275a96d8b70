"""The pieces gluon's GEMMs share: the output tile a program takes, in grouped order (GROUP rows of
tiles walk N together, sharing B's columns in L2), and one stage's TMA loads of A and B on its mbarrier."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma


@gluon.jit
def grouped_tile(tile, M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP: gl.constexpr):
    """(off_m, off_n) of C's tile number `tile`."""
    tiles_m, tiles_n = gl.cdiv(M, BM), gl.cdiv(N, BN)
    first_m = tile // (GROUP * tiles_n) * GROUP
    size_m = min(tiles_m - first_m, GROUP)
    return (first_m + tile % (GROUP * tiles_n) % size_m) * BM, tile % (GROUP * tiles_n) // size_m * BN


@gluon.jit
def load_stage(a_desc, a_at, b_desc, b_at, ready, a_buf, b_buf, pred=True):
    """A's tile at `a_at` and B's at `b_at` into one stage, its barrier expecting both."""
    mbarrier.expect(ready, a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(a_desc, a_at, ready, a_buf, pred=pred)
    tma.async_copy_global_to_shared(b_desc, b_at, ready, b_buf, pred=pred)
