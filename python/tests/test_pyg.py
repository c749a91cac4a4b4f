"""switchgnn.pyg against torch_geometric.nn: outside a launch the layers are PyG's (same
parameters, same initialisation, same outputs); under `switchgnn launch` every configuration
of GCNConv and SAGEConv gives PyG's outputs, input gradients and weight gradients on the whole
graph, with the graph given as our directory layout and as a PyG Data (.pt)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, has

HAVE = has("torch") and has("torch_geometric")
if HAVE:
    import torch
    import torch_geometric.nn as pyg_nn

    from switchgnn import pyg
    from switchgnn.data import clean_edges

sys.path.insert(0, str(Path(__file__).parent))


def random_graph(n: int = 240, isolated: int = 7, dim: int = 12, seed: int = 3):
    """Edges among the first n - isolated vertices (the last ones have none), features, labels."""
    rng = np.random.default_rng(seed)
    m = n - isolated
    e = rng.integers(0, m, (5 * m, 2))
    x = rng.uniform(-1, 1, (n, dim)).astype(np.float32)
    y = rng.integers(0, 4, n)
    return e, x, y


def write_dir(d: Path, e, x, y) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "edges.npy", e.astype(np.int64))
    np.save(d / "features.npy", x)
    np.save(d / "labels.npy", y.astype(np.int64))
    return d


def test_outside_a_launch_the_layers_are_pygs(skipped):
    if not HAVE:
        skipped("the PyG layer test", "torch or torch_geometric is not importable",
                "pip install ./python[pyg]")
        return
    from layer_worker import CONFIGS
    e, x, _ = random_graph()
    ei = torch.from_numpy(clean_edges(e, len(x)))
    xt = torch.from_numpy(x)
    for kind, kwargs in CONFIGS:
        theirs_cls = pyg_nn.GCNConv if kind == "gcn" else pyg_nn.SAGEConv
        ours_cls = pyg.GCNConv if kind == "gcn" else pyg.SAGEConv
        torch.manual_seed(4)
        theirs = theirs_cls(12, 6, **kwargs)
        torch.manual_seed(4)
        ours = ours_cls(12, 6, **kwargs)
        assert isinstance(ours, theirs_cls)
        a, b = theirs.state_dict(), ours.state_dict()
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), (kind, kwargs)
        assert torch.equal(theirs(xt, ei), ours(xt, ei)), (kind, kwargs)
    with pytest.raises(ValueError, match="needs edge_index"):
        pyg.GCNConv(12, 6)(xt)


def reference(e, x, dim_out: int):
    """Every configuration on the whole graph with torch_geometric.nn."""
    from layer_worker import CONFIGS
    n = len(x)
    ei = torch.from_numpy(clean_edges(e, n))
    rng = np.random.default_rng(5)
    weights = torch.from_numpy(rng.uniform(-1, 1, (n, dim_out)).astype(np.float32))
    out = {}
    for i, (kind, kwargs) in enumerate(CONFIGS):
        torch.manual_seed(10 + i)
        layer = (pyg_nn.GCNConv if kind == "gcn" else pyg_nn.SAGEConv)(x.shape[1], dim_out,
                                                                       **kwargs)
        xt = torch.from_numpy(x).requires_grad_(True)
        y = layer(xt, ei)
        (y * weights).sum().backward()
        out[f"out{i}"] = y.detach().numpy()
        out[f"dx{i}"] = xt.grad.numpy()
        for name, p in layer.named_parameters():
            out[f"grad{i}.{name}"] = p.grad.numpy()
    return out


def launch(graph: Path, workers: int, out: Path, dim_out: int, feature_dim: int):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    cmd = [sys.executable, "-m", "switchgnn", "launch", "--graph", str(graph), "--workers",
           str(workers), "--feature-dim", str(feature_dim), "--out", str(out / "launch"),
           "--", sys.executable, str(Path(__file__).parent / "layer_worker.py"), str(out),
           str(dim_out)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def check_against_reference(out: Path, workers: int, want: dict) -> None:
    seen = []
    for r in range(workers):
        got = np.load(out / f"rank{r}.npz")
        rows = got["n_id"]
        seen.append(rows)
        for k, v in want.items():
            g = got[k]
            w = v[rows] if k.startswith(("out", "dx")) else v
            scale = max(1.0, float(np.abs(w).max()))
            assert np.allclose(g, w, rtol=1e-4, atol=1e-4 * scale), \
                (k, r, float(np.abs(g - w).max()))
    assert sorted(np.concatenate(seen).tolist()) == list(range(len(want["out0"])))


@pytest.mark.parametrize("form,workers", [("dir", 2), ("pt", 3)])
def test_through_the_switch_every_layer_is_pygs(tmp_path, sgnn, skipped, form, workers):
    if not HAVE:
        skipped("the PyG-through-the-switch test", "torch or torch_geometric is not importable",
                "pip install ./python[pyg]")
        return
    if sgnn is None:
        return
    os.environ["SGNN_BIN"] = sgnn
    e, x, y = random_graph()
    if form == "dir":
        graph = write_dir(tmp_path / "g", e, x, y)
    else:
        from torch_geometric.data import Data
        graph = tmp_path / "g.pt"
        # Directed, with duplicates: the launch cleans it as PyG's to_undirected would.
        torch.save(Data(x=torch.from_numpy(x), y=torch.from_numpy(y),
                        edge_index=torch.from_numpy(e.T.copy())), graph)
    # 40 output columns through a plan of 32: two exchanges per sum.
    r = launch(graph, workers, tmp_path, dim_out=40, feature_dim=32)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "served:" in r.stderr, r.stderr
    check_against_reference(tmp_path, workers, reference(e, x, 40))
