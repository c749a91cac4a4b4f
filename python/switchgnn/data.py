"""Graphs and their vertex data, in either of the two layouts `switchgnn launch` accepts.

* Our layout (``docs/formats.md``, "Labelled graphs"): a directory with ``edges.txt.gz`` (or
  ``edges.txt`` / ``edges.npy``), ``features.npy``, ``labels.npy`` and optional
  ``{train,val,test}_mask.npy``.
* PyG's: a ``torch_geometric.data.Data`` with ``edge_index``, ``x``, ``y`` and optional
  ``train_mask`` / ``val_mask`` / ``test_mask``, saved with ``torch.save`` (a ``.pt`` file).
  :func:`write_layout` turns it into our layout, which is what the daemons plan from.

The graph is cleaned the way the planner cleans it: undirected, without self-loops or
duplicate edges. The vertex count is the number of feature rows (isolated vertices included).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import numpy as np

ENV_DATA = "SWITCHGNN_DATA"
MASKS = ("train_mask", "val_mask", "test_mask")


def read_edges(path: str | os.PathLike[str]) -> np.ndarray:
    """An edge list as an [E, 2] int64 array: a ``.npy`` [E, 2] array or a SNAP text file
    (plain or gzip; ``#`` comments; tabs or spaces)."""
    p = Path(path)
    if p.suffix == ".npy":
        e = np.load(p)
        if e.ndim != 2 or e.shape[1] != 2:
            raise ValueError(f"{p}: an edge array must be [E, 2], found {list(e.shape)}")
        return e.astype(np.int64)
    opener: Any = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt") as f:
        e = np.loadtxt(f, dtype=np.int64, comments="#", ndmin=2)
    if e.size == 0:
        return np.zeros((0, 2), np.int64)
    return e[:, :2]


def clean_edges(edges: np.ndarray, num_vertices: int) -> np.ndarray:
    """Undirected, sorted, without self-loops or duplicates: [2, E'] int64 (both directions),
    the ``edge_index`` of the graph the planner builds from the same edges."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(e) and (e.min() < 0 or e.max() >= num_vertices):
        raise ValueError(
            f"edge ids must be in 0..{num_vertices - 1} (one per feature row); found "
            f"{int(e.min())}..{int(e.max())}")
    both = np.concatenate([e, e[:, ::-1]])
    both = both[both[:, 0] != both[:, 1]]
    key = np.unique(both[:, 0] * num_vertices + both[:, 1])
    return np.stack([key // num_vertices, key % num_vertices])


def find_edges(directory: str | os.PathLike[str]) -> Path:
    """The edge file of a directory in our layout."""
    d = Path(directory)
    for name in ("edges.npy", "edges.txt.gz", "edges.txt"):
        if (d / name).exists():
            return d / name
    raise FileNotFoundError(
        f"{d} has no edges.npy, edges.txt.gz or edges.txt: a graph directory needs one "
        "(docs/formats.md, 'Labelled graphs')")


def read_layout(directory: str | os.PathLike[str], edges: bool = True) -> dict[str, np.ndarray]:
    """The arrays of a directory in our layout: ``x`` (float32), ``y`` (int64), the masks
    present (bool) and, with `edges`, ``edge_index`` (cleaned, [2, E])."""
    d = Path(directory)
    out: dict[str, np.ndarray] = {}
    if not (d / "features.npy").exists():
        raise FileNotFoundError(f"{d}/features.npy is missing: one row of features per vertex")
    out["x"] = np.load(d / "features.npy").astype(np.float32)
    n = out["x"].shape[0]
    if (d / "labels.npy").exists():
        out["y"] = np.load(d / "labels.npy").astype(np.int64)
        if len(out["y"]) != n:
            raise ValueError(f"{d}: {len(out['y'])} labels for {n} feature rows")
    for m in MASKS:
        if (d / f"{m}.npy").exists():
            out[m] = np.load(d / f"{m}.npy").astype(bool)
    if edges:
        out["edge_index"] = clean_edges(read_edges(find_edges(d)), n)
    return out


def load_pyg(path: str | os.PathLike[str]) -> Any:
    """A ``Data`` saved with ``torch.save`` (or a PyG dataset's first graph)."""
    import torch
    obj = torch.load(path, weights_only=False)
    if isinstance(obj, (tuple, list)) and obj and hasattr(obj[0], "edge_index"):
        obj = obj[0]
    if hasattr(obj, "__getitem__") and not hasattr(obj, "edge_index"):
        obj = obj[0]
    for attr in ("edge_index", "x"):
        if getattr(obj, attr, None) is None:
            raise ValueError(f"{path}: a PyG Data needs `{attr}` (found {type(obj).__name__})")
    return obj


def write_layout(data: Any, directory: str | os.PathLike[str]) -> Path:
    """Writes a PyG ``Data`` in our layout (``edges.npy`` [E, 2], ``features.npy``,
    ``labels.npy``, masks) and returns the directory."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ei = data.edge_index.detach().cpu().numpy().astype(np.int64)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must be [2, E], found {list(ei.shape)}")
    x = data.x.detach().cpu().numpy().astype(np.float32)
    clean = clean_edges(ei.T, x.shape[0])
    np.save(d / "edges.npy", np.ascontiguousarray(clean.T[clean[0] < clean[1]]))
    np.save(d / "features.npy", x)
    if getattr(data, "y", None) is not None:
        np.save(d / "labels.npy", data.y.detach().cpu().numpy().astype(np.int64).reshape(-1))
    for m in MASKS:
        if getattr(data, m, None) is not None:
            np.save(d / f"{m}.npy", getattr(data, m).detach().cpu().numpy().astype(bool))
    return d


def as_layout(graph: str | os.PathLike[str], scratch: str | os.PathLike[str]) -> Path:
    """A directory in our layout for `graph` (a directory already is; a ``.pt`` is written
    into `scratch`)."""
    p = Path(graph)
    if p.is_dir():
        find_edges(p)
        return p
    if p.suffix in (".pt", ".pth"):
        return write_layout(load_pyg(p), Path(scratch) / "data")
    raise ValueError(
        f"{graph}: give a graph directory (edges.txt.gz + features.npy + labels.npy + masks) "
        "or a PyG Data saved with torch.save (.pt)")


def load_data(path: str | os.PathLike[str] | None = None, normalize_features: bool = False) -> Any:
    """The graph as a ``torch_geometric.data.Data``.

    Under ``switchgnn launch`` (`path` defaults to the graph it planned) this is the worker's
    shard: the rows of its daemon's vertices (``n_id``, ascending) of ``x``, ``y`` and the
    masks, and ``edge_index`` is None: the switchgnn layers sum over the whole graph's
    neighbours through the daemon. Otherwise it is the whole graph with its cleaned
    ``edge_index``, for single-process PyG. `normalize_features` divides each feature row by
    its sum (PyG's ``NormalizeFeatures``; row-wise, so the shard gets the same rows).
    """
    import torch
    from torch_geometric.data import Data  # type: ignore[import-untyped]

    from . import runtime

    if path is None:
        path = os.environ.get(ENV_DATA)
        if path is None:
            raise ValueError(
                f"no graph: pass a path, or run under `switchgnn launch` (which sets {ENV_DATA})")
    p = Path(path)
    cluster = runtime.current()
    if p.suffix in (".pt", ".pth") and not p.is_dir():
        src = load_pyg(p)
        arrays: dict[str, np.ndarray] = {"x": src.x.numpy().astype(np.float32)}
        if getattr(src, "y", None) is not None:
            arrays["y"] = src.y.numpy().astype(np.int64).reshape(-1)
        for m in MASKS:
            if getattr(src, m, None) is not None:
                arrays[m] = getattr(src, m).numpy().astype(bool)
        arrays["edge_index"] = clean_edges(src.edge_index.numpy().T, arrays["x"].shape[0])
    else:
        arrays = read_layout(p, edges=cluster is None)
    x = arrays["x"]
    if normalize_features:
        s = x.sum(1, keepdims=True)
        x = np.where(s != 0, x / np.where(s != 0, s, 1), x).astype(np.float32)
    n = x.shape[0]
    if cluster is None:
        rows = np.arange(n)
        edge_index = torch.from_numpy(arrays["edge_index"])
    else:
        rows = cluster.vertices.numpy()
        if len(rows) and rows.max() >= n:
            raise ValueError(
                f"the daemon's vertex {int(rows.max())} has no row in {path} ({n} rows): "
                "launch with the same graph as the script loads")
        edge_index = None
    data = Data(x=torch.from_numpy(np.ascontiguousarray(x[rows])), edge_index=edge_index)
    data.num_nodes = len(rows)
    data.n_id = torch.from_numpy(rows.astype(np.int64))
    if "y" in arrays:
        data.y = torch.from_numpy(arrays["y"][rows])
        data.num_classes = int(arrays["y"].max()) + 1  # of the whole graph, not the shard
    for m in MASKS:
        if m in arrays:
            data[m] = torch.from_numpy(arrays[m][rows])
    return data
