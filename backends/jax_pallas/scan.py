"""Inclusive prefix sum in Pallas (Triton lowering), two ways; `one_pass` picks.

Reduce-then-scan (the default): two kernels with the tiles' carries between them: each program sums
its BLOCK tile; jnp.cumsum over those few sums (XLA, tiles of the array apart) gives each tile's carry;
each program then scans its tile (jnp.cumsum inside the kernel) and adds its carry. x is read twice,
y written once: for float32 a ceiling of 2/3 of the copy.

One pass (`one_pass=True`): the decoupled look-back of Merrill and Garland (CUB's single-pass scan),
written with the Triton lowering's atomics (plgpu.atomic_*: acquire-release, GPU scope). A program
takes its tile from a ticket (plgpu.atomic_add on a counter: every tile it waits on belongs to a
program already running), sums its tile and publishes that aggregate (the value stored, then the
tile's status raised by an atomic max, which releases the store: a status only grows, 0, 1, 2; the
interpreter has no atomic exchange); it then reads its predecessors' statuses WINDOW at a time (an
atomic add of zeros to a slice: the acquiring read) and their values (volatile loads), until the
nearest inclusive prefix, waiting where a tile after it has published nothing yet; it publishes its
own inclusive prefix and stores its scanned tile plus the carry. The
statuses and the two kinds of values (aggregates, prefixes: each written once, so a reader never sees
one change) are arrays of their own, since JAX without 64-bit types has no word to pack a status and
a float32 into; WINDOW entries before tile 0 hold a prefix 0, so a window never reads before the
arrays. The ticket and the statuses are set afresh by XLA before every scan.

16-bit inputs widened to float32 on load; partial last tiles masked."""
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from backends.jax_pallas import compiled_call, interpret_param

BLOCK, WARPS = 4096, 8                       # reduce-then-scan
ONE_PASS_BLOCK, ONE_PASS_WARPS = 8192, 4     # the one-pass tile: the Triton scan's, from its sweeps
WINDOW = 32                                  # predecessors read at once by a look-back step, as CUB's warp does
EMPTY, AGGREGATE, PREFIX = 0, 1, 2           # a tile's published status


def tile_sum(x_ref, s_ref, *, block):
    from jax.experimental.pallas import triton as plgpu
    i = pl.program_id(0)
    offsets = i * block + jnp.arange(block)
    x = plgpu.load(x_ref.at[pl.ds(i * block, block)], mask=offsets < x_ref.shape[0], other=0.0)
    s_ref[i] = x.astype(jnp.float32).sum()


def tile_scan(x_ref, carry_ref, y_ref, *, block):
    from jax.experimental.pallas import triton as plgpu
    i = pl.program_id(0)
    inside = i * block + jnp.arange(block) < x_ref.shape[0]
    x = plgpu.load(x_ref.at[pl.ds(i * block, block)], mask=inside, other=0.0)
    plgpu.store(y_ref.at[pl.ds(i * block, block)], jnp.cumsum(x.astype(jnp.float32)) + carry_ref[i], mask=inside)


def look_back_scan(x_ref, _ticket, _status, _aggregate, _prefix, y_ref, ticket_ref, status_ref, aggregate_ref,
                   prefix_ref, *, block):
    from jax.experimental.pallas import triton as plgpu
    tile = plgpu.atomic_add(ticket_ref, jnp.int32(0), jnp.int32(1))     # tiles taken in launch order
    offsets = tile * block + jnp.arange(block)
    inside = offsets < x_ref.shape[0]
    x = plgpu.load(x_ref.at[pl.ds(tile * block, block)], mask=inside, other=0.0).astype(jnp.float32)
    total = x.sum()
    own = tile + WINDOW                                    # the tile's entries, after the padding
    aggregate_ref[own] = total
    plgpu.atomic_max(status_ref, own, jnp.int32(AGGREGATE))
    lanes = jnp.arange(WINDOW)                             # entries [start, start + WINDOW): tiles before `start`

    def step(state):
        start, carry, _ = state
        status = plgpu.atomic_add(status_ref, pl.ds(start, WINDOW), jnp.zeros(WINDOW, jnp.int32))
        nearest = jnp.max(jnp.where(status == PREFIX, lanes, -1))
        waiting = jnp.sum(jnp.where((status == EMPTY) & (lanes > nearest), 1, 0))
        aggregates = plgpu.load(aggregate_ref.at[pl.ds(start, WINDOW)], volatile=True)
        prefixes = plgpu.load(prefix_ref.at[pl.ds(start, WINDOW)], volatile=True)
        found = jnp.sum(jnp.where(lanes > nearest, aggregates, 0.0) + jnp.where(lanes == nearest, prefixes, 0.0))
        ready = waiting == 0
        back = ready & (nearest < 0)                       # all aggregates: the window before this one
        return jnp.where(back, start - WINDOW, start), jnp.where(ready, carry + found, carry), ready & ~back

    _, carry, _ = lax.while_loop(lambda state: ~state[2], step, (tile, jnp.float32(0), False))
    prefix_ref[own] = carry + total
    plgpu.atomic_max(status_ref, own, jnp.int32(PREFIX))
    plgpu.store(y_ref.at[pl.ds(tile * block, block)], jnp.cumsum(x) + carry, mask=inside)


def scan(x, *, variant, one_pass=False, block=None, warps=None):
    from jax.experimental.pallas import triton as plgpu
    n = x.shape[0]
    block = min(block or (ONE_PASS_BLOCK if one_pass else BLOCK), pl.next_power_of_2(n))
    warps = warps or (ONE_PASS_WARPS if one_pass else WARPS)
    tiles = pl.cdiv(n, block)
    params = dict(grid=(tiles,), compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1),
                  interpret=interpret_param(variant))
    if one_pass:         # the ticket, the statuses, the aggregates, the prefixes: updated in place
        state = (jnp.zeros(1, jnp.int32), jnp.zeros(WINDOW + tiles, jnp.int32).at[:WINDOW].set(PREFIX),
                 jnp.zeros(WINDOW + tiles, jnp.float32), jnp.zeros(WINDOW + tiles, jnp.float32))
        shapes = (jax.ShapeDtypeStruct((n,), jnp.float32), *(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in state))
        return pl.pallas_call(functools.partial(look_back_scan, block=block), out_shape=shapes,
                              input_output_aliases={i: i for i in range(1, 1 + len(state))}, **params)(x, *state)[0]
    sums = pl.pallas_call(functools.partial(tile_sum, block=block),
                          out_shape=jax.ShapeDtypeStruct((tiles,), jnp.float32), **params)(x)
    carries = jnp.cumsum(sums) - sums                    # each tile's exclusive prefix
    return pl.pallas_call(functools.partial(tile_scan, block=block),
                          out_shape=jax.ShapeDtypeStruct((n,), jnp.float32), **params)(x, carries)


def specs(case):
    from backends.jax_pallas import jax_dtype
    return scan, [jax.ShapeDtypeStruct((case.shape["n"],), jax_dtype(case.dtype))]


def build(case, inputs, outputs, stream, variant="", one_pass=False, block=None, warps=None):
    """`one_pass`: the look-back scan instead of reduce-then-scan; `block`, `warps`: its tile and warps."""
    fn = functools.partial(scan, variant=variant, one_pass=one_pass, block=block, warps=warps)
    return compiled_call(fn, "y", inputs["x"])
