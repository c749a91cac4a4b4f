"""One worker's place in a launched cluster: its daemon, torch.distributed, and the graph's
degrees.

Under ``switchgnn launch`` every process of the user's script finds its daemon's socket in
``SWITCHGNN_SOCKET`` and torch.distributed's rendezvous in ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT``. :func:`current` connects both on first use (the
``switchgnn.pyg`` layers call it), so a script needs no set-up code; :func:`init` does it
explicitly. Outside a launch :func:`current` is None and the layers are plain PyG.

Weights stay in PyTorch. Gradients are summed with ``torch.distributed.all_reduce``
(:meth:`Cluster.all_reduce_gradients`), the loss being each worker's share of the global
mean (:meth:`Cluster.global_count`): after the sum every worker holds the single-process
gradient, and the optimizer steps identically everywhere.
"""

from __future__ import annotations

import atexit
import os
from typing import Iterable

import numpy as np
import torch
import torch.distributed as dist

from .client import ENV_SOCKET, Daemon, DaemonError
from .torch import NeighbourSum, exchange
DEGREE_LAYER = 0xFFFF


class Cluster:
    """This worker's daemon session plus what every layer needs: its vertices (global ids,
    ascending: the row order of its shard), their degrees in the whole graph, and the
    agreement on each exchange's scale over a gloo group of its own."""

    def __init__(self, daemon: Daemon, group: dist.ProcessGroup | None) -> None:
        self.daemon = daemon
        self.group = group
        self.rank = daemon.worker
        self.world_size = daemon.workers
        self.vertices = torch.from_numpy(daemon.vertices.astype(np.int64))
        ones = torch.ones(daemon.rows, 1)
        self.degree: torch.Tensor = exchange(daemon, DEGREE_LAYER, ones, False,
                                             self.agree_max)[:, 0].round()
        self.max_degree = int(self.all_max(float(self.degree.max()) if daemon.rows else 0.0))
        self.exchanges = 0

    def all_max(self, value: float) -> float:
        """The largest `value` over all workers (a collective: every worker calls it)."""
        if self.group is None:
            return value
        t = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return float(t)

    def agree_max(self, value: float) -> float:
        """The agreed largest magnitude of one exchange (docs/training.md, "Precision")."""
        return self.all_max(value)

    def neighbour_sum(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """``y[v] = sum of x[u] over v's neighbours in the whole graph``, differentiable;
        `x` holds this worker's rows. Every worker calls it in the same order."""
        self.exchanges += 1
        y: torch.Tensor = NeighbourSum.apply(x, self.daemon, layer, self.agree_max,
                                             max(1, self.max_degree))
        return y

    def global_sum(self, value: float | torch.Tensor) -> float:
        """The sum of `value` over all workers (float64)."""
        t = torch.tensor([float(value)], dtype=torch.float64)
        if self.group is not None:
            dist.all_reduce(t, group=self.group)
        return float(t)

    def global_count(self, mask: torch.Tensor) -> int:
        """How many rows `mask` selects over all workers: the divisor of a global mean."""
        return int(round(self.global_sum(int(mask.sum()))))

    def all_reduce_gradients(self, params: Iterable[torch.nn.Parameter]) -> None:
        """Sums every parameter's gradient over the workers, in one flat all_reduce (a
        parameter without a gradient counts as zeros, so every worker sends the same size)."""
        grads = []
        for p in params:
            if p.requires_grad:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                grads.append(p.grad)
        if not grads or self.group is None:
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, group=self.group)
        i = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[i:i + n].view_as(g))
            i += n

    def close(self) -> None:
        """Ends the daemon session (CLOSE: the daemons' final barrier, then they exit)."""
        self.daemon.close()


_current: Cluster | None = None


def launched() -> bool:
    """Whether this process runs under ``switchgnn launch`` (or has a daemon socket set)."""
    return ENV_SOCKET in os.environ


def init(socket: str | None = None, backend: str = "gloo") -> Cluster:
    """Connects this process to its daemon and torch.distributed (gloo on CPU; env://
    rendezvous as torchrun's), checks that both agree on who this worker is, and returns the
    :class:`Cluster` the layers use. Idempotent."""
    global _current
    if _current is not None:
        return _current
    path = socket or os.environ.get(ENV_SOCKET)
    if path is None:
        raise RuntimeError(
            f"no daemon: run the script under `switchgnn launch` (which sets {ENV_SOCKET}) "
            "or pass the socket of `sgnn serve`")
    daemon = Daemon(path)
    if not dist.is_initialized():
        if "RANK" not in os.environ:
            os.environ.setdefault("RANK", str(daemon.worker))
            os.environ.setdefault("WORLD_SIZE", str(daemon.workers))
        dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if (rank, world) != (daemon.worker, daemon.workers):
        raise DaemonError(
            f"torch.distributed rank {rank} of {world}, but the daemon of {path} serves worker "
            f"{daemon.worker} of {daemon.workers}: give each rank the socket of its own worker")
    group: dist.ProcessGroup | None = None
    if world > 1:
        # Every rank is a member, so this is a group (new_group's other answer, the
        # NON_GROUP_MEMBER sentinel, is for ranks left out of `ranks`).
        g = dist.new_group(backend="gloo")
        if not isinstance(g, dist.ProcessGroup):
            raise RuntimeError(f"torch.distributed.new_group gave {g!r}, not a group")
        group = g
    _current = Cluster(daemon, group)
    atexit.register(shutdown)
    return _current


def current() -> Cluster | None:
    """The cluster of this process: connected on first use under a launch, None otherwise."""
    if _current is None and launched():
        return init()
    return _current


def shutdown() -> None:
    """Closes the daemon session if open (runs at exit; safe to call twice)."""
    global _current
    c, _current = _current, None
    if c is not None and not c.daemon.closed:
        try:
            c.close()
        except (DaemonError, OSError) as e:
            print(f"switchgnn: closing the daemon session: {e}", flush=True)
