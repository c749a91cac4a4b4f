"""SwitchGNN from Python: the neighbour-sum exchange of a running `sgnn-hostd --serve` daemon.

* :class:`Daemon` (numpy only) speaks the daemon's Unix-socket protocol (docs/host.md).
* ``switchgnn.torch.NeighbourSum`` (PyTorch) makes the exchange a differentiable operation.
* ``switchgnn.pyg.GCNConv`` / ``SAGEConv`` (PyG) are PyG's layers summing through the switch.
* ``switchgnn launch --graph G --workers N -- python train.py`` plans, starts the switch and
  the daemons, and runs the script under torch.distributed (docs/pytorch.md).

With PyTorch installed, :func:`init`, :func:`current`, :func:`load_data` and
:func:`all_reduce_gradients` (or DDP and :func:`world_size`) are the few calls a training
script needs.
"""

from __future__ import annotations

from typing import Any, Iterable

from .client import Daemon, DaemonError, exchange_scale

__version__ = "0.2.0"


def init(socket: str | None = None) -> Any:
    """Connects to this worker's daemon and torch.distributed (see switchgnn.runtime.init)."""
    from . import runtime
    return runtime.init(socket)


def current() -> Any:
    """This process's cluster under a launch (connected on first use), else None."""
    from . import runtime
    return runtime.current()


def load_data(path: Any = None, normalize_features: bool = False) -> Any:
    """This worker's shard under a launch, or the whole graph (see switchgnn.data.load_data)."""
    from .data import load_data as _load
    return _load(path, normalize_features)


def all_reduce_gradients(params: Iterable[Any]) -> None:
    """Sums the gradients over the workers under a launch; nothing in a single process."""
    from . import runtime
    c = runtime.current()
    if c is not None:
        c.all_reduce_gradients(params)


def global_sum(value: Any) -> float:
    """The sum of `value` over the workers under a launch; `value` in a single process."""
    from . import runtime
    c = runtime.current()
    return float(value) if c is None else c.global_sum(value)


def rank() -> int:
    """This worker's rank under a launch; 0 in a single process."""
    from . import runtime
    c = runtime.current()
    return 0 if c is None else c.rank


def world_size() -> int:
    """How many workers the launch has; 1 in a single process. With DDP, which averages the
    gradients over the workers, multiply each worker's loss by it (docs/pytorch.md)."""
    from . import runtime
    c = runtime.current()
    return 1 if c is None else c.world_size


__all__ = ["Daemon", "DaemonError", "exchange_scale", "init", "current", "load_data",
           "all_reduce_gradients", "global_sum", "rank", "world_size"]
