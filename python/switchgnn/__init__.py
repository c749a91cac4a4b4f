"""SwitchGNN from Python: the neighbour-sum exchange of a running `sgnn-hostd --serve` daemon.

`Daemon` (numpy only) speaks the daemon's Unix-socket protocol (docs/host.md). With PyTorch
installed, `switchgnn.torch.NeighbourSum` makes the exchange a differentiable operation:
forward sends the features, backward sends the gradients (the adjacency is symmetric).
"""

from .client import Daemon, DaemonError, exchange_scale

__all__ = ["Daemon", "DaemonError", "exchange_scale"]
