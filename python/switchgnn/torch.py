"""The exchange as a differentiable PyTorch operation.

    from switchgnn import Daemon
    from switchgnn.torch import NeighbourSum
    s = NeighbourSum.apply(x, daemon, layer, agree_max)   # sum over each vertex's neighbours

Forward sends `x` through the daemon; backward sends the incoming gradient the same way (the
neighbour-sum operator of an undirected graph is symmetric). Before each exchange the values
are scaled by a power of two agreed across workers (`agree_max`: a function taking this
worker's largest magnitude and returning the largest over all workers, e.g. through
torch.distributed.all_reduce with ReduceOp.MAX; the identity with one worker), so gradients of
1e-6 keep their precision (docs/training.md, "Precision").
"""

import torch

from .client import exchange_scale


def _exchange(daemon, layer, x, backward, agree_max, max_degree):
    m = float(x.detach().abs().max()) if x.numel() else 0.0
    m = agree_max(m)
    s = exchange_scale(m, daemon.clamp(max_degree))
    scaled = (x.detach().to(torch.float32) * 2.0**s).cpu().numpy()
    out = daemon.propagate(layer, scaled, backward=backward)
    return torch.from_numpy(out).to(x.device, x.dtype) * 2.0**-s


class NeighbourSum(torch.autograd.Function):
    """y[v] = sum of x[u] over the neighbours u of v, through the switch."""

    @staticmethod
    def forward(ctx, x, daemon, layer, agree_max=lambda m: m, max_degree=1 << 16):
        ctx.daemon, ctx.layer = daemon, layer
        ctx.agree_max, ctx.max_degree = agree_max, max_degree
        return _exchange(daemon, layer, x, False, agree_max, max_degree)

    @staticmethod
    def backward(ctx, grad):
        g = _exchange(ctx.daemon, ctx.layer, grad, True, ctx.agree_max, ctx.max_degree)
        return g, None, None, None, None
