"""Parity: PyG's GCN through the switch follows single-process PyG's loss within 1e-4
relative at every one of 100 epochs (dropout off, the same initial weights), on cora at 2 and
4 workers, with 3% of the frames lost, and on citeseer (the last two marked slow: CI runs
`-m "not slow"` to stay within its time; the bench below covers both). The full matrix (both graphs, both
worker counts, both loss rates, and the accuracy of the standard recipe) is
python/bench/pytorch_bench.py, whose output is in docs/pytorch.md.

The same runs with the model wrapped in PyTorch's DistributedDataParallel instead of
switchgnn.all_reduce_gradients (`pyg_train.py --sync ddp`, each worker's loss times the world
size) follow both the all_reduce path and PyG (test_ddp_...)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, Skip, datasets, has

EXAMPLE = ROOT / "python/examples/pyg_train.py"
EPOCHS = 100


def run_reference(graph: Path, out: Path) -> list[float]:
    r = subprocess.run([sys.executable, str(EXAMPLE), str(graph), "--impl", "pyg", "--dropout",
                        "0", "--epochs", str(EPOCHS), "--eval-every", "0", "--out", str(out)],
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text())["loss"]


def run_launched(graph: Path, workers: int, loss: float, out: Path,
                 sync: str = "all_reduce") -> list[float]:
    r = subprocess.run([sys.executable, "-m", "switchgnn", "launch", "--graph", str(graph),
                        "--workers", str(workers), "--loss", str(loss), "--out",
                        str(out.parent / "launch"), "--", sys.executable, str(EXAMPLE),
                        "--dropout", "0", "--epochs", str(EPOCHS), "--eval-every", "0",
                        "--sync", sync, "--out", str(out)],
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(out.read_text())
    assert report["sync"] == sync, report["sync"]
    losses: list[float] = report["loss"]
    _launched[(graph.name, workers, loss, sync)] = losses
    return losses


# Runs already made in this session (the DDP test compares with the parity test's runs rather
# than repeat them: each launch or reference run takes 30-60 s here).
_references: dict[str, list[float]] = {}
_launched: dict[tuple[str, int, float, str], list[float]] = {}


def reference(graph: Path, tmp_path: Path) -> list[float]:
    if graph.name not in _references:
        _references[graph.name] = run_reference(graph, tmp_path / "ref.json")
    return _references[graph.name]


def ready(what: str, name: str, sgnn: str | None, skipped: Skip) -> Path | None:
    """The dataset `name` when torch, PyG, the dataset and the sgnn binary are all there (the
    binary then in SGNN_BIN for the launches); otherwise None, having said SKIPPED for what
    is missing (conftest's `sgnn` fixture says it for the binary)."""
    if not (has("torch") and has("torch_geometric")):
        skipped(what, "torch or torch_geometric is not importable", "pip install ./python[pyg]")
        return None
    graph = datasets() / name
    if not (graph / "edges.txt.gz").exists():
        skipped(what, f"{graph} is missing", "put the datasets in ../shared/datasets or set "
                "SGNN_DATASETS")
        return None
    if sgnn is None:
        return None
    os.environ["SGNN_BIN"] = sgnn
    return graph


@pytest.mark.parametrize("name,workers,loss", [
    ("cora", 2, 0.0), ("cora", 4, 0.0),
    pytest.param("cora", 2, 0.03, marks=pytest.mark.slow),
    pytest.param("citeseer", 2, 0.0, marks=pytest.mark.slow)])
def test_the_loss_follows_single_process_pyg(tmp_path, sgnn, skipped, name, workers, loss):
    what = f"the PyG parity test on {name} at {workers} workers, {loss:.0%} loss"
    graph = ready(what, name, sgnn, skipped)
    if graph is None:
        return
    want = reference(graph, tmp_path)
    got = run_launched(graph, workers, loss, tmp_path / "run.json")
    assert len(got) == len(want) == EPOCHS
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    print(f"{what}: largest relative difference {worst:.2e} over {EPOCHS} epochs")
    for e, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= 1e-4 * abs(w), f"epoch {e + 1}: through the switch {g}, PyG {w}"
    # It trained: the loss fell.
    assert got[-1] < 0.8 * got[0]


@pytest.mark.parametrize("workers", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_ddp_follows_the_all_reduce_path_and_pyg(tmp_path, sgnn, skipped, workers):
    """DistributedDataParallel around the switch layers (gloo, CPU), the loss times the world
    size (DDP averages the gradients; the all_reduce path sums them): the same losses as
    switchgnn.all_reduce_gradients and, within the parity tolerance, as PyG. At 2 workers the
    scaling is by a power of two, which is exact, so DDP computes bit for bit what the
    all_reduce path does; at 3 the multiplication and DDP's division round."""
    what = f"the DDP parity test on cora at {workers} workers"
    graph = ready(what, "cora", sgnn, skipped)
    if graph is None:
        return
    pyg = reference(graph, tmp_path)
    summed = _launched.get(("cora", workers, 0.0, "all_reduce"))
    if summed is None:
        summed = run_launched(graph, workers, 0.0, tmp_path / "all_reduce.json")
    ddp = run_launched(graph, workers, 0.0, tmp_path / "ddp.json", sync="ddp")
    assert len(ddp) == len(summed) == len(pyg) == EPOCHS
    vs_summed = max(abs(d - s) / abs(s) for d, s in zip(ddp, summed))
    vs_pyg = max(abs(d - w) / abs(w) for d, w in zip(ddp, pyg))
    print(f"{what}: largest relative difference {vs_summed:.2e} from the all_reduce path, "
          f"{vs_pyg:.2e} from PyG, over {EPOCHS} epochs")
    same = 1e-6 if workers & (workers - 1) == 0 else 1e-4
    for e, (d, s, w) in enumerate(zip(ddp, summed, pyg)):
        assert abs(d - s) <= same * abs(s), f"epoch {e + 1}: DDP {d}, all_reduce {s}"
        assert abs(d - w) <= 1e-4 * abs(w), f"epoch {e + 1}: DDP {d}, PyG {w}"
    assert ddp[-1] < 0.8 * ddp[0]
