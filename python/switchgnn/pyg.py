"""PyG layers whose neighbour sum over the whole graph goes through the switch.

``switchgnn.pyg.GCNConv`` and ``SAGEConv`` are ``torch_geometric.nn.GCNConv`` and ``SAGEConv``
(subclasses: the same arguments, parameters, initialisation and ``state_dict``), with one
difference under ``switchgnn launch``: ``forward`` takes this worker's rows of ``x`` (the
shard of :func:`switchgnn.load_data`) and sums over each vertex's neighbours in the whole
graph through its daemon and the switch, forward and backward. ``edge_index`` is then not
needed (pass the shard's, which is None, or leave it out). Outside a launch they are exactly
PyG's layers, so the same script runs single-process.

A model written for PyG changes one import::

    from switchgnn.pyg import GCNConv      # was: from torch_geometric.nn import GCNConv

The maths (docs/training.md, "The maths of the exchange"): with S the unweighted neighbour
sum and d the whole-graph degree, GCN is ``c * (S(c * xW) + f * c * xW) + b`` with
``c = (d + f)^-1/2`` (f the self-loop weight PyG's ``gcn_norm`` uses: 1, and also 1 with
``improved`` in PyG 2.8, which weighs loops 2 only when edge weights are given); SAGE-mean is ``S(x W_l) / d + b_l + x W_r`` (mean is linear, so the product comes
first and the exchange carries ``out_channels`` values, not ``in_channels``).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import torch
import torch.nn.functional as F
import torch_geometric.nn as pyg_nn  # type: ignore[import-untyped]
from torch import Tensor

from . import runtime

_ids = itertools.count()


def _generic_propagate(self: Any, edge_index: Any, size: Any = None, **kwargs: Any) -> Tensor:
    """PyG's generic ``MessagePassing.propagate``. PyG compiles a ``propagate`` per class from
    the class's source (its ``propagate_type`` comment), which a subclass does not repeat; a
    ``propagate`` of the subclass's own makes PyG keep this uncompiled one, which computes the
    same (the test compares the outputs bit for bit)."""
    return pyg_nn.MessagePassing.propagate(self, edge_index, size=size, **kwargs)


@functools.lru_cache(maxsize=None)
def _pyg_self_loop_weight(improved: bool) -> float:
    """The self-loop weight PyG's own ``gcn_norm`` uses without edge weights, asked of PyG
    (PyG 2.8 adds weight-1 loops even with ``improved=True`` when no edge weights are given,
    so improved changes nothing there; this follows whatever the installed PyG does). On the
    graph 0 -> 1 the normalised edge is (f (1 + f))^-1/2 for a loop weight f."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm  # type: ignore[import-untyped]
    ei, w = gcn_norm(torch.tensor([[0], [1]]), None, num_nodes=2, improved=improved,
                     add_self_loops=True)
    assert w is not None
    edge = float(w[(ei[0] == 0) & (ei[1] == 1)][0])
    return round((-1.0 + math.sqrt(1.0 + 4.0 / edge**2)) / 2.0, 5)


def _whole_graph_only(name: str, x: Any, edge_weight: Any = None) -> None:
    if isinstance(x, (tuple, list)):
        raise NotImplementedError(
            f"switchgnn.pyg.{name} through the switch takes one feature tensor (the worker's "
            "rows), not a bipartite (source, target) pair")
    if edge_weight is not None:
        raise NotImplementedError(
            f"switchgnn.pyg.{name}: edge weights are not supported through the switch (it sums "
            "unweighted); drop edge_weight, or run without `switchgnn launch`")


class GCNConv(pyg_nn.GCNConv):
    """``torch_geometric.nn.GCNConv`` whose propagation goes through the switch when launched.

    Supported through the switch: ``improved`` (as PyG computes it without edge weights),
    ``add_self_loops``, ``normalize``, ``bias``, ``cached`` (a no-op: the degrees are fetched
    once per process). Not: ``edge_weight``.
    """

    propagate = _generic_propagate

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exchange_layer = next(_ids)

    def forward(self, x: Tensor, edge_index: Any = None,
                edge_weight: Tensor | None = None) -> Tensor:
        c = runtime.current()
        if c is None:
            if edge_index is None:
                raise ValueError(
                    "GCNConv outside `switchgnn launch` is PyG's and needs edge_index")
            return super().forward(x, edge_index, edge_weight)
        _whole_graph_only("GCNConv", x, edge_weight)
        h = self.lin(x)
        if self.normalize:
            loops = self.add_self_loops if self.add_self_loops is not None else True
            fill = _pyg_self_loop_weight(bool(self.improved)) if loops else 0.0
            deg = c.degree.to(h.dtype) + fill
            norm = deg.pow(-0.5)
            norm = norm.masked_fill(norm == float("inf"), 0.0).unsqueeze(1)
            z = norm * h
            s = c.neighbour_sum(z, self.exchange_layer)
            out = norm * (s + fill * z) if fill else norm * s
        else:
            out = c.neighbour_sum(h, self.exchange_layer)
        if self.bias is not None:
            out = out + self.bias
        return out


class SAGEConv(pyg_nn.SAGEConv):
    """``torch_geometric.nn.SAGEConv`` whose aggregation goes through the switch when launched.

    Supported through the switch: ``aggr`` "mean" (the default), "add" or "sum";
    ``normalize``, ``root_weight``, ``project``, ``bias``. Not: other aggregations.
    """

    propagate = _generic_propagate

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exchange_layer = next(_ids)

    def forward(self, x: Tensor, edge_index: Any = None,
                size: Any = None) -> Tensor:
        c = runtime.current()
        if c is None:
            if edge_index is None:
                raise ValueError(
                    "SAGEConv outside `switchgnn launch` is PyG's and needs edge_index")
            return super().forward(x, edge_index, size)
        _whole_graph_only("SAGEConv", x)
        aggr = self.aggr if isinstance(self.aggr, str) else type(self.aggr_module).__name__
        if aggr not in ("mean", "add", "sum", "MeanAggregation", "SumAggregation"):
            raise NotImplementedError(
                f"switchgnn.pyg.SAGEConv through the switch sums or averages; aggr={aggr!r} "
                "is not supported (use 'mean' or 'add')")
        h = x
        if self.project and hasattr(self, "lin"):
            h = self.lin(h).relu()
        if isinstance(self.lin_l.weight, torch.nn.parameter.UninitializedParameter):
            self.lin_l(h)  # lazy in_channels=-1: let PyG's Linear size its weight first
        s = c.neighbour_sum(F.linear(h, self.lin_l.weight), self.exchange_layer)
        if aggr in ("mean", "MeanAggregation"):
            s = s / c.degree.to(s.dtype).clamp(min=1).unsqueeze(1)
        out = s if self.lin_l.bias is None else s + self.lin_l.bias
        if self.root_weight:
            out = out + self.lin_r(x)
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        return out


__all__ = ["GCNConv", "SAGEConv"]
