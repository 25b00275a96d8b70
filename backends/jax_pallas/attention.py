"""Attention forward in Pallas (Triton lowering), as Pallas's GPU attention op is written: a program per
(block of queries, batch x head), a fori_loop over blocks of keys with an online softmax (running
maximum and sum in float32), P cast to V's dtype for the second jnp.dot; a causal program stops after
its diagonal block. Partial blocks are masked on load and store. (No Mosaic GPU kernel yet.)"""
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from backends.jax_pallas import compiled_call, interpret_param, interpreted


def config(head_dim):
    """(BM, BN, num_warps, num_stages)."""
    if interpreted():
        return 16, 16, 4, 1
    return (128, 64, 8, 3) if head_dim >= 128 else (128, 64, 4, 3)


def attention_triton(q_ref, k_ref, v_ref, o_ref, *, bm, bn, causal):
    from jax.experimental.pallas import triton as plgpu
    seq, head_dim = q_ref.shape[1], q_ref.shape[2]
    head, start = pl.program_id(1), pl.program_id(0) * bm
    rows = start + jnp.arange(bm)
    q = plgpu.load(q_ref.at[head, pl.ds(start, bm), :], mask=(rows < seq)[:, None], other=0.0)
    scale = 1.0 / math.sqrt(head_dim)

    def step(j, carry):
        m_i, l_i, acc = carry
        keys = j * bn + jnp.arange(bn)
        k = plgpu.load(k_ref.at[head, pl.ds(j * bn, bn), :], mask=(keys < seq)[:, None], other=0.0)
        v = plgpu.load(v_ref.at[head, pl.ds(j * bn, bn), :], mask=(keys < seq)[:, None], other=0.0)
        s = jnp.dot(q, k.T, preferred_element_type=jnp.float32) * scale
        keep = (keys < seq)[None, :]
        if causal:
            keep = keep & (keys[None, :] <= rows[:, None])
        s = jnp.where(keep, s, -jnp.inf)
        m_new = jnp.maximum(m_i, s.max(axis=1))
        alpha = jnp.exp(m_i - m_new)
        p = jnp.exp(s - m_new[:, None])
        acc = acc * alpha[:, None] + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
        return m_new, l_i * alpha + p.sum(axis=1), acc

    blocks = pl.cdiv(jnp.minimum(seq, start + bm), bn) if causal else pl.cdiv(seq, bn)
    init = (jnp.full((bm,), -jnp.inf, jnp.float32), jnp.zeros((bm,), jnp.float32),
            jnp.zeros((bm, head_dim), jnp.float32))
    _, l_i, acc = lax.fori_loop(0, blocks, step, init)
    plgpu.store(o_ref.at[head, pl.ds(start, bm), :], (acc / l_i[:, None]).astype(o_ref.dtype),
                mask=(rows < seq)[:, None])


def attention(q, k, v, *, causal, variant):
    from jax.experimental.pallas import triton as plgpu
    b, h, seq, head_dim = q.shape
    bm, bn, warps, stages = config(head_dim)
    q3, k3, v3 = (x.reshape(b * h, seq, head_dim) for x in (q, k, v))
    o = pl.pallas_call(
        functools.partial(attention_triton, bm=bm, bn=bn, causal=causal),
        out_shape=jax.ShapeDtypeStruct(q3.shape, q3.dtype), grid=(pl.cdiv(seq, bm), b * h),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=stages),
        interpret=interpret_param(variant))(q3, k3, v3)
    return o.reshape(q.shape)


def specs(case):
    from backends.jax_pallas import jax_dtype
    shape = tuple(case.shape[d] for d in ("B", "H", "S", "D"))
    fn = functools.partial(attention, causal=bool(case.shape["causal"]))
    return fn, [jax.ShapeDtypeStruct(shape, jax_dtype(case.dtype))] * 3


def build(case, inputs, outputs, stream, variant=""):
    fn = functools.partial(attention, causal=bool(case.shape["causal"]), variant=variant)
    return compiled_call(fn, "o", inputs["q"], inputs["k"], inputs["v"])
