"""z = alpha * x + y in Helion: one hl.tile loop over n, float32 arithmetic; Helion masks the tail."""
import helion
import helion.language as hl
import torch

from backends.helion import effort, prepared


def axpy(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, alpha: float) -> None:
    for tile in hl.tile(x.size(0)):
        z[tile] = (alpha * x[tile].to(torch.float32) + y[tile].to(torch.float32)).to(z.dtype)


FIXED = helion.Config(block_sizes=[4096], num_warps=8, num_stages=1)


def build(case, inputs, outputs, stream, variant=""):
    kernel = helion.kernel(axpy, autotune_effort=effort())
    x, y, z, alpha = inputs["x"], inputs["y"], outputs["z"], inputs["alpha"]
    return prepared(kernel, (x, y, z, alpha), (x, y, torch.empty_like(z), alpha), FIXED, variant)
