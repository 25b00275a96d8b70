"""z = alpha * x + y in CuTe DSL, as its elementwise_add example teaches: a thread-value layout
tiles the vectors (zipped_divide), each thread copies 128-bit vectors through a tiled copy, math in
float32. Full tiles copy unpredicated; only the one ragged tail tile copies element by element
under a coordinate predicate (a 128-bit copy takes one predicate per vector, not per element)."""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32

from backends.cute_dsl import as_cute, compile_once, launcher

THREADS, VECTORS_PER_THREAD = 256, 4


@cute.kernel
def axpy_kernel(alpha: Float32, gX: cute.Tensor, gY: cute.Tensor, gZ: cute.Tensor, cZ: cute.Tensor, n: Int32,
                thr_layout: cute.Layout, val_layout: cute.Layout):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tile = ((None,), bidx)
    bX, bY, bZ, bC = gX[tile], gY[tile], gZ[tile], cZ[tile]
    if (bidx + 1) * cute.size(bX) <= n:
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gX.element_type, num_bits_per_copy=128)
        thr = cute.make_tiled_copy_tv(atom, thr_layout, val_layout).get_slice(tidx)
        tX, tY, tZ = thr.partition_S(bX), thr.partition_S(bY), thr.partition_D(bZ)
        rX, rY, rZ = cute.make_fragment_like(tX), cute.make_fragment_like(tY), cute.make_fragment_like(tZ)
        cute.copy(atom, tX, rX)
        cute.copy(atom, tY, rY)
        rZ.store((alpha * rX.load().to(Float32) + rY.load().to(Float32)).to(gZ.element_type))
        cute.copy(atom, rZ, tZ)
    else:
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gX.element_type)
        thr = cute.make_tiled_copy_tv(atom, thr_layout, val_layout).get_slice(tidx)
        tX, tY, tZ, tC = thr.partition_S(bX), thr.partition_S(bY), thr.partition_D(bZ), thr.partition_S(bC)
        rX, rY, rZ = cute.make_fragment_like(tX), cute.make_fragment_like(tY), cute.make_fragment_like(tZ)
        inside = cute.make_rmem_tensor(tC.shape, cutlass.Boolean)
        for i in cutlass.range_constexpr(cute.size(inside)):
            inside[i] = cute.elem_less(tC[i], (n,))
        cute.copy(atom, tX, rX, pred=inside)
        cute.copy(atom, tY, rY, pred=inside)
        rZ.store((alpha * rX.load().to(Float32) + rY.load().to(Float32)).to(gZ.element_type))
        cute.copy(atom, rZ, tZ, pred=inside)


@cute.jit
def axpy(alpha: Float32, mX: cute.Tensor, mY: cute.Tensor, mZ: cute.Tensor, stream: cuda.CUstream):
    thr_layout = cute.make_layout((THREADS,))
    val_layout = cute.make_layout((128 // mX.element_type.width,))      # one 128-bit vector
    tiler, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    tiler = (cute.size(tiler) * VECTORS_PER_THREAD,)                    # more loads in flight per thread
    gX, gY, gZ = cute.zipped_divide(mX, tiler), cute.zipped_divide(mY, tiler), cute.zipped_divide(mZ, tiler)
    cZ = cute.zipped_divide(cute.make_identity_tensor(mZ.shape), tiler)
    axpy_kernel(alpha, gX, gY, gZ, cZ, mZ.shape[0], thr_layout, val_layout).launch(
        grid=[cute.size(gZ, mode=[1]), 1, 1], block=[cute.size(tv_layout, mode=[0]), 1, 1], stream=stream)


def compile_case(case, inputs, outputs, variant, options=""):
    tensors = [as_cute(t, variant) for t in (inputs["x"], inputs["y"], outputs["z"])]
    return compile_once(axpy, [Float32(inputs["alpha"]), *tensors], variant, options), tensors


def build(case, inputs, outputs, stream, variant=""):
    compiled, tensors = compile_case(case, inputs, outputs, variant)
    alpha = Float32(inputs["alpha"])
    return launcher(compiled, (alpha, *tensors), (inputs["alpha"], inputs["x"], inputs["y"], outputs["z"]),
                    stream, variant)
