"""The output tile a GEMM program takes, in grouped order as Triton's matmul tutorial orders them:
GROUP rows of tiles walk N together, so they share B's columns in L2."""
import triton
import triton.language as tl


@triton.jit
def grouped_tile(pid, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP: tl.constexpr):
    """(pid_m, pid_n) of program `pid`."""
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP * tiles_n)
    first_m = group * GROUP
    size_m = min(tiles_m - first_m, GROUP)
    return first_m + (pid % (GROUP * tiles_n)) % size_m, (pid % (GROUP * tiles_n)) // size_m
