"""Shared by the numba_simt kernels: loads and stores that widen every dtype to float32 (bfloat16
arrives as its uint16 bits), compiling ahead of the first launch, and packed access.

Packed access: numba-cuda indexes arrays one element at a time (a 2-byte load per half), so the
memory-bound kernels view their arrays on the host as uint64 words (DeviceNDArray.view: no copy) and
unpack each word into 2 (float32) or 4 (float16, bfloat16) float32 values. On the GPU the bit
reinterpretations are LLVM bitcasts through numba's @intrinsic (no C++ shims, no libdevice call):
half bits <-> float32 is cvt.f32.f16 / cvt.rn.f16.f32, int <-> float32 is free, and load2 / store2
move two words as one <2 x i64> (ld/st.global.v2.u64, 16 bytes); load4 / store4 / store1 index
float32 arrays (shared memory) with no negative-index wraparound, load4 / store4 four floats as one
<4 x float> (ld/st.shared.v4.f32). The CUDA simulator has no @intrinsic: there these few are NumPy
views or plain indexing and all the rest is the same code. allow_dynamic_shared lets a kernel take
more than 48 KiB of dynamic shared memory."""
import numba
import numpy as np
from numba import cuda

from backends.base import compiling, cuda_simulator


def compile_for(kernel, *args):
    """Compile `kernel` for these arguments now, so build() pays for it and the first launch does
    not (the CUDA simulator interprets Python: nothing to compile)."""
    if not cuda_simulator():
        with compiling():      # numba's compile runs on the CPU: another worker may time meanwhile
            kernel.compile(tuple(numba.typeof(a) for a in args))


DEFAULT_SHARED_BYTES = 48 * 1024      # shared memory a block may take without opting in


def allow_dynamic_shared(kernel, args, nbytes):
    """Let `kernel` (compiled for these arguments) launch with `nbytes` of dynamic shared memory: past
    48 KiB a kernel must opt in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). numba-cuda 0.30 has no
    public call for it (NVIDIA/numba-cuda#94): this sets the attribute on the loaded kernel as numba's
    own shared_memory_carveout option does (driver.cuKernelSetAttribute on its handle and device)."""
    if cuda_simulator() or nbytes <= DEFAULT_SHARED_BYTES:
        return
    from numba.cuda.cudadrv.driver import binding, driver
    cufunc = kernel.overloads[tuple(numba.typeof(a) for a in args)]._codelibrary.get_cufunc()
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)


@cuda.jit(device=True, inline=True)
def widen(v):
    return numba.float32(v)


@cuda.jit(device=True, inline=True)
def widen_bf16(bits):
    return cuda.libdevice.int_as_float(numba.int32(bits) << 16)


@cuda.jit(device=True, inline=True)
def narrow_bf16(f):
    bits = numba.uint32(cuda.libdevice.float_as_int(f))
    bits += numba.uint32(0x7FFF) + ((bits >> 16) & numba.uint32(1))      # round to nearest even
    return numba.uint16(bits >> 16)


@cuda.jit(device=True, inline=True)
def narrow(f):
    return f


LOAD = {"float32": widen, "float16": widen, "bfloat16": widen_bf16}
STORE = {"float32": narrow, "float16": narrow, "bfloat16": narrow_bf16}


# -- packed access ------------------------------------------------------------------------------

u16, u32, u64 = numba.uint16, numba.uint32, numba.uint64

if cuda_simulator():     # no @intrinsic there: the reinterpretations as NumPy views
    def f32_from_bits(b):
        return np.uint32(b).view(np.float32)

    def bits_from_f32(f):
        return np.float32(f).view(np.uint32)

    def f32_from_half_bits(b):
        return np.float32(np.uint16(np.uint64(b) & np.uint64(0xFFFF)).view(np.float16))

    def half_bits_from_f32(f):
        return np.float16(np.float32(f)).view(np.uint16)      # NumPy rounds to nearest even

    def load2(words, j):
        """words[j], words[j + 1] (j even): one 128-bit load on the GPU."""
        return words[j], words[j + 1]

    def store2(words, j, lo, hi):
        words[j] = lo
        words[j + 1] = hi

    def load4(a, i):
        """a[i .. i + 3] (i a multiple of 4) of a float32 array: one 16-byte load on the GPU."""
        return a[i], a[i + 1], a[i + 2], a[i + 3]

    def store4(a, i, x0, x1, x2, x3):
        a[i], a[i + 1], a[i + 2], a[i + 3] = x0, x1, x2, x3

    def store1(a, i, x):
        """a[i] = x, i >= 0: no negative-index wraparound on the GPU."""
        a[i] = x
else:
    from llvmlite import ir
    from numba.core import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def f32_from_bits(typingctx, b):
        if not isinstance(b, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            v = args[0]
            v = builder.trunc(v, ir.IntType(32)) if v.type.width > 32 else builder.zext(v, ir.IntType(32)) \
                if v.type.width < 32 else v
            return builder.bitcast(v, ir.FloatType())
        return types.float32(b), codegen

    @intrinsic
    def bits_from_f32(typingctx, f):
        if f != types.float32:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(32))
        return types.uint32(f), codegen

    @intrinsic
    def f32_from_half_bits(typingctx, b):
        if not isinstance(b, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            v = args[0]
            if v.type.width != 16:
                v = builder.trunc(v, ir.IntType(16))
            return builder.fpext(builder.bitcast(v, ir.HalfType()), ir.FloatType())
        return types.float32(b), codegen

    @intrinsic
    def half_bits_from_f32(typingctx, f):
        if f != types.float32:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
        return types.uint16(f), codegen

    def _word_ptr(context, builder, arrty, arr, j):
        """Address of words[j] as a <2 x i64>* (the caller guarantees 16-byte alignment)."""
        ary = context.make_array(arrty)(context, builder, arr)
        ptr = builder.gep(ary.data, [j])
        return builder.bitcast(ptr, ir.PointerType(ir.VectorType(ir.IntType(64), 2)))

    @intrinsic
    def load2(typingctx, words, j):
        if not (isinstance(words, types.Array) and words.dtype == types.uint64 and words.layout == "C"
                and isinstance(j, types.Integer)):
            return None
        pair = types.UniTuple(types.uint64, 2)

        def codegen(context, builder, sig, args):
            vec = builder.load(_word_ptr(context, builder, sig.args[0], args[0], args[1]), align=16)
            lo = builder.extract_element(vec, ir.Constant(ir.IntType(32), 0))
            hi = builder.extract_element(vec, ir.Constant(ir.IntType(32), 1))
            return context.make_tuple(builder, pair, (lo, hi))
        return pair(words, j), codegen

    @intrinsic
    def store2(typingctx, words, j, lo, hi):
        if not (isinstance(words, types.Array) and words.dtype == types.uint64 and words.layout == "C"
                and words.mutable and isinstance(j, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            _, _, lo_v, hi_v = args
            lo_v = context.cast(builder, lo_v, sig.args[2], types.uint64)
            hi_v = context.cast(builder, hi_v, sig.args[3], types.uint64)
            vec = ir.Constant(ir.VectorType(ir.IntType(64), 2), ir.Undefined)
            vec = builder.insert_element(vec, lo_v, ir.Constant(ir.IntType(32), 0))
            vec = builder.insert_element(vec, hi_v, ir.Constant(ir.IntType(32), 1))
            builder.store(vec, _word_ptr(context, builder, sig.args[0], args[0], args[1]), align=16)
            return context.get_dummy_value()
        return types.void(words, j, lo, hi), codegen

    # float32 arrays (shared memory above all) indexed with no wraparound: numba indexes with a signed
    # integer as a[i + len(a)] when i < 0, selects NVVM cannot drop (for a dynamic shared array they
    # cost more instructions than the loads), and loads 4 floats one by one; these take i >= 0 (and i
    # a multiple of 4, the array 16-byte aligned, for the vectors: ld/st.shared.v4.f32)
    def _f32_array(a):
        return isinstance(a, types.Array) and a.dtype == types.float32 and a.layout == "C"

    def _f32_ptr(context, builder, arrty, arr, i, lanes):
        ary = context.make_array(arrty)(context, builder, arr)
        ptr = builder.gep(ary.data, [i])
        return builder.bitcast(ptr, ir.PointerType(ir.VectorType(ir.FloatType(), lanes))) if lanes else ptr

    @intrinsic
    def load4(typingctx, a, i):
        if not (_f32_array(a) and isinstance(i, types.Integer)):
            return None
        quad = types.UniTuple(types.float32, 4)

        def codegen(context, builder, sig, args):
            vec = builder.load(_f32_ptr(context, builder, sig.args[0], args[0], args[1], 4), align=16)
            return context.make_tuple(builder, quad, [builder.extract_element(vec, ir.Constant(ir.IntType(32), k))
                                                      for k in range(4)])
        return quad(a, i), codegen

    @intrinsic
    def store4(typingctx, a, i, x0, x1, x2, x3):
        if not (_f32_array(a) and a.mutable and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            vec = ir.Constant(ir.VectorType(ir.FloatType(), 4), ir.Undefined)
            for k in range(4):
                x = context.cast(builder, args[2 + k], sig.args[2 + k], types.float32)
                vec = builder.insert_element(vec, x, ir.Constant(ir.IntType(32), k))
            builder.store(vec, _f32_ptr(context, builder, sig.args[0], args[0], args[1], 4), align=16)
            return context.get_dummy_value()
        return types.void(a, i, x0, x1, x2, x3), codegen

    @intrinsic
    def store1(typingctx, a, i, x):
        if not (_f32_array(a) and a.mutable and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            v = context.cast(builder, args[2], sig.args[2], types.float32)
            builder.store(v, _f32_ptr(context, builder, sig.args[0], args[0], args[1], 0), align=4)
            return context.get_dummy_value()
        return types.void(a, i, x), codegen


# -- one float32 from / to its storage bits (the low bits of a word) -----------------------------

@cuda.jit(device=True, inline=True)
def unpack_f32(bits):
    return f32_from_bits(u32(bits & u64(0xFFFFFFFF)))


@cuda.jit(device=True, inline=True)
def pack_f32(f):
    return u64(bits_from_f32(f))


@cuda.jit(device=True, inline=True)
def unpack_f16(bits):
    return f32_from_half_bits(u16(bits & u64(0xFFFF)))


@cuda.jit(device=True, inline=True)
def pack_f16(f):
    return u64(half_bits_from_f32(f))


@cuda.jit(device=True, inline=True)
def unpack_bf16(bits):
    return f32_from_bits(u32(bits & u64(0xFFFF)) << u32(16))


@cuda.jit(device=True, inline=True)
def pack_bf16(f):
    """float32 -> bfloat16 bits, round to nearest even (as narrow_bf16)."""
    bits = bits_from_f32(f)
    bits += u32(0x7FFF) + ((bits >> u32(16)) & u32(1))
    return u64(bits >> u32(16))


# per dtype: (elements per uint64 word, bits per element, unpack(bits) -> f32, pack(f32) -> bits)
PACK = {"float32": (2, 32, unpack_f32, pack_f32),
        "float16": (4, 16, unpack_f16, pack_f16),
        "bfloat16": (4, 16, unpack_bf16, pack_bf16)}


def words_of(flat, per_word):
    """The uint64 view of the whole words at the start of a contiguous 1-D device array (no copy);
    None when there is not a single word. A DeviceNDArray (or the simulator's FakeCUDAArray)."""
    nw = flat.shape[0] // per_word
    return flat[: nw * per_word].view(np.uint64) if nw else None
