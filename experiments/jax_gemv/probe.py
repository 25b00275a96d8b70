"""JAX's bf16 products with one row (M = 1): what arithmetic does XLA do there, and which way of asking
keeps the lab's fp32 accumulation?

For each shape, the lab's GEMM problem makes the inputs and the float64 reference with its bound; the
product is computed by `jnp.matmul` (jitted, matmul precision `highest`), by `jnp.matmul(...,
preferred_element_type=float32)` rounded once to bf16, by `jax.lax.dot_general` with
`precision=HIGHEST`, and by `jnp.matmul` under JAX's dot algorithm `BF16_BF16_F32`
(`jax.default_matmul_precision`). Each result is compared with the reference (elements beyond the
bound) and, element for element, with host models of candidate arithmetic: fp32 accumulation rounded
once to bf16 (what the problem asks), each product rounded to bf16 before an fp32 sum, and a bf16
running sum. The optimised HLO of each form is saved beside the results, so what XLA
made of the dot (a GEMM call, a Triton fusion, a multiply and reduce) can be read.

    python -m experiments.jax_gemv.probe [--shape M,N,K ...] [--out DIR]
"""
import argparse
import json
import re
from pathlib import Path

import numpy as np

from problems.base import decode, encode
from problems.gemm import PROBLEM

SHAPES = ((1, 264, 104), (2, 264, 104), (1, 4096, 4096), (8, 4096, 4096), (64, 4096, 4096))
SEED = 0


def models(a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """Candidate arithmetic, on the host, as bf16 storage (uint16)."""
    prod = a[:, :, None].astype(np.float32) * b[None, :, :].astype(np.float32)       # exact in fp32
    rounded = decode(encode(prod, "bfloat16"), "bfloat16", np.float32)
    running = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):                                       # a bf16 running sum, in order
        running = decode(encode(running + prod[:, k], "bfloat16"), "bfloat16", np.float32)
    return {"fp32 sum, one rounding": encode(prod.sum(axis=1, dtype=np.float64).astype(np.float32), "bfloat16"),
            "bf16 products, fp32 sum": encode(rounded.sum(axis=1, dtype=np.float32), "bfloat16"),
            "bf16 running sum": encode(running, "bfloat16")}


def forms():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_default_matmul_precision", "highest")      # as the lab's array_api[jax] row
    highest = jax.lax.Precision.HIGHEST
    return {"jnp.matmul, precision highest": jnp.matmul,
            "preferred_element_type=float32": lambda a, b: jnp.matmul(
                a, b, preferred_element_type=jnp.float32).astype(jnp.bfloat16),
            "lax.dot_general precision=HIGHEST": lambda a, b: jax.lax.dot_general(
                a, b, (((1,), (0,)), ((), ())), precision=(highest, highest)),
            "default_matmul_precision BF16_BF16_F32": with_algorithm}


def with_algorithm(a, b):
    """jnp.matmul traced under JAX's dot algorithm for bf16 inputs and fp32 accumulation."""
    import jax
    import jax.numpy as jnp
    with jax.default_matmul_precision("BF16_BF16_F32"):
        return jnp.matmul(a, b)


def probe(shape, out_dir: Path) -> list[dict]:
    import jax
    import jax.numpy as jnp
    m, n, k = shape
    case = PROBLEM.custom_case({"M": m, "N": n, "K": k}, "bfloat16", seed=SEED, kind="test")
    inputs = PROBLEM.make_inputs(case, SEED)
    ref = PROBLEM.reference(case, inputs)["c"]
    a, b = (decode(inputs[x], "bfloat16", np.float32) for x in ("a", "b"))
    host = models(a, b) if m * n * k <= 1 << 22 else {}
    ja, jb = (jnp.asarray(x, dtype=jnp.bfloat16) for x in (a, b))
    rows = []
    for name, fn in forms().items():
        compiled = jax.jit(fn).lower(ja, jb).compile()
        got = encode(np.asarray(compiled(ja, jb).astype(jnp.float32)), "bfloat16")
        err = np.abs(decode(got, "bfloat16") - ref.value)
        hlo = compiled.as_text()
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        (out_dir / f"{m}x{n}x{k}-{slug}.hlo.txt").write_text(hlo)
        rows.append({"shape": f"{m}x{n}x{k}", "form": name, "device": str(jax.devices()[0]),
                     "beyond_bound": int((err > ref.bound).sum()), "elements": int(err.size),
                     "max_abs_err": float(err.max()),
                     "equal_to_model": {mod: float(np.mean(got == want)) for mod, want in host.items()},
                     "hlo_ops": sorted(set(re.findall(r"custom_call_target=\"([^\"]+)\"", hlo))
                                       | ({"dot"} if " dot(" in hlo else set())
                                       | ({"reduce"} if " reduce(" in hlo else set()))})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", help=f"M,N,K (repeatable; default: {list(SHAPES)})")
    ap.add_argument("--out", type=Path, default=Path("jax-gemv"))
    args = ap.parse_args(argv)
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape] if args.shape else SHAPES
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [row for shape in shapes for row in probe(shape, args.out)]
    (args.out / "probe.json").write_text(json.dumps(rows, indent=1) + "\n")
    for r in rows:
        print(f"{r['shape']:>16} {r['form']:36} beyond bound {r['beyond_bound']:5d}/{r['elements']:<8d} "
              f"{' '.join(f'{k}={v:.2f}' for k, v in r['equal_to_model'].items())}  {','.join(r['hlo_ops'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
