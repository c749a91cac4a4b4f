"""The exchange as a differentiable PyTorch operation.

    from switchgnn import Daemon
    from switchgnn.torch import NeighbourSum
    s = NeighbourSum.apply(x, daemon, layer, agree_max)   # sum over each vertex's neighbours

Forward sends `x` through the daemon; backward sends the incoming gradient the same way (the
neighbour-sum operator of an undirected graph is symmetric). Before each exchange the values
are scaled by a power of two agreed across workers (`agree_max`: a function taking this
worker's largest magnitude and returning the largest over all workers, e.g. through
torch.distributed.all_reduce with ReduceOp.MAX; the identity with one worker), so gradients of
1e-6 keep their precision (docs/training.md, "Precision"). Columns beyond the plan's
``max_dim`` go in several exchanges of at most ``max_dim`` columns each.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from .client import Daemon, exchange_scale

AgreeMax = Callable[[float], float]


def _identity(m: float) -> float:
    return m


def exchange(daemon: Daemon, layer: int, x: torch.Tensor, backward: bool,
             agree_max: AgreeMax = _identity, max_degree: int = 1 << 16) -> torch.Tensor:
    """One neighbour sum of `x` ([rows, dim]) through `daemon`, without autograd.

    Every worker must call it with the same `layer`, `backward` and number of columns, in the
    same order: `agree_max` is a collective.
    """
    m = float(x.detach().abs().max()) if x.numel() else 0.0
    m = agree_max(m)
    s = exchange_scale(m, daemon.clamp(max_degree))
    if daemon.transport == "shared-memory" and x.device.type == "cpu" and x.dim() == 2:
        # Scale straight into the shared buffer and out of it: the only two passes over the
        # values on this side of the daemon.
        xd = x.detach()
        if xd.shape[1] == 0:
            return torch.zeros_like(x)
        sums_of: list[torch.Tensor] = []
        for i in range(0, xd.shape[1], daemon.max_dim):
            chunk = xd[:, i:i + daemon.max_dim]
            buf = torch.from_numpy(daemon.shared_buffer(chunk.shape[1]))
            torch.mul(chunk.to(torch.float32), 2.0**s, out=buf)
            sums = torch.from_numpy(daemon.propagate_shared(layer, chunk.shape[1], backward))
            sums_of.append(torch.mul(sums, 2.0**-s).to(x.dtype))
        return sums_of[0] if len(sums_of) == 1 else torch.cat(sums_of, dim=1)
    scaled = (x.detach().to(torch.float32) * 2.0**s).cpu().numpy()
    dim = scaled.shape[1]
    if dim <= daemon.max_dim:
        out = daemon.propagate(layer, scaled, backward=backward)
    else:
        parts = [daemon.propagate(layer, scaled[:, i:i + daemon.max_dim], backward=backward)
                 for i in range(0, dim, daemon.max_dim)]
        out = np.concatenate(parts, axis=1)
    return torch.from_numpy(out).to(x.device, x.dtype) * 2.0**-s


class NeighbourSum(torch.autograd.Function):
    """y[v] = sum of x[u] over the neighbours u of v, through the switch."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, daemon: Daemon, layer: int,
                agree_max: AgreeMax = _identity, max_degree: int = 1 << 16) -> torch.Tensor:
        ctx.daemon, ctx.layer = daemon, layer
        ctx.agree_max, ctx.max_degree = agree_max, max_degree
        return exchange(daemon, layer, x, False, agree_max, max_degree)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        g = exchange(ctx.daemon, ctx.layer, grad, True, ctx.agree_max, ctx.max_degree)
        return g, None, None, None, None
