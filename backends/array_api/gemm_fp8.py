"""C = dequant(A) @ dequant(B)^T in the Array API standard, no FP8 arithmetic: the e4m3 bits decoded
with integer operations, each tile multiplied by its scale, one float32 product (the vendor BLAS),
rounded to bfloat16: what a user of a library without float8 writes. NumPy, Dask over NumPy and CuPy
have no bfloat16 for C."""
from array_api_compat import array_namespace, device

from backends.array_api import library_call

BLOCK = 128                       # the scales' tiles: 1 x BLOCK of A, BLOCK x BLOCK of B
E4M3_BIAS, E4M3_MANTISSA = 7, 8   # e4m3: 4 exponent bits of bias 7, 3 mantissa bits (8 steps)


def supports(case, variant=""):
    if variant in ("numpy", "dask"):
        return "NumPy has no bfloat16 for C"
    return "CuPy's array-API namespace has no bfloat16 for C" if variant == "cupy" else None


def decode_e4m3(bits, xp):
    """e4m3 bit patterns -> float32 values (no NaN in the inputs)."""
    b = xp.astype(bits, xp.int32)
    sign = 1.0 - 2.0 * xp.astype(b >> 7, xp.float32)
    exponent = (b >> 3) & 0xF
    fraction = xp.astype(b & 0x7, xp.float32) / E4M3_MANTISSA
    normal = (1.0 + fraction) * 2.0 ** xp.astype(exponent - E4M3_BIAS, xp.float32)
    return sign * xp.where(exponent == 0, fraction * 2.0 ** (1 - E4M3_BIAS), normal)


def scaled(q, scale, rows_per_scale, xp):
    """dequant(X) for X (rows, K) in e4m3 and one scale per rows_per_scale x BLOCK tile (or one)."""
    rows, k = q.shape
    index = xp.minimum(xp.arange(rows, device=device(q)) // rows_per_scale, scale.shape[0] - 1)
    per_row = xp.take(scale, index, axis=0)                                  # (rows, K / BLOCK) or (rows, 1)
    tiles = xp.reshape(decode_e4m3(q, xp), (rows, k // BLOCK, BLOCK)) * per_row[:, :, None]
    return xp.reshape(tiles, (rows, k))


def gemm_fp8(a, a_scale, b, b_scale):
    xp = array_namespace(a)
    c = xp.matmul(scaled(a, a_scale, 1, xp), xp.matrix_transpose(scaled(b, b_scale, BLOCK, xp)))
    return {"c": xp.astype(c, xp.bfloat16)}


def build(case, inputs, outputs, stream, variant=""):
    return library_call(gemm_fp8, inputs, variant)
