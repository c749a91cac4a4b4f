"""NeighbourSum as a torch.autograd.Function against real daemons: forward equals the sum over
neighbours, backward equals the same exchange of the gradient (checked against the dense
adjacency's product). SKIPPED where torch is not importable.
Run: SGNN_BIN=target/release/sgnn python3 python/tests/test_torch.py
"""

import os
import sys
import tempfile
import threading

import numpy as np

try:
    import torch
except ImportError:
    torch = None

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from switchgnn import Daemon  # noqa: E402
if torch is not None:
    from switchgnn.torch import NeighbourSum  # noqa: E402
from test_client import start_cluster  # noqa: E402


def test_neighbour_sum_is_the_exchange_forward_and_backward(sgnn, skipped):
    """pytest: the same check as the script."""
    if torch is None:
        skipped("the PyTorch test", "torch is not importable", "pip install ./python[pyg]")
        return
    if sgnn is None:
        return
    os.environ["SGNN_BIN"] = sgnn
    main()


def main():
    if torch is None:
        print("SKIPPED the PyTorch test (torch is not importable, pip install torch)")
        return
    out = tempfile.mkdtemp()
    p, socks = start_cluster(out)
    indptr = np.load(os.path.join(out, "plan", "graph", "indptr.npy")).astype(np.int64)
    indices = np.load(os.path.join(out, "plan", "graph", "indices.npy")).astype(np.int64)
    n = len(indptr) - 1
    a = np.zeros((n, n))
    for v in range(n):
        a[v, indices[indptr[v]:indptr[v + 1]]] = 1.0
    rng = np.random.default_rng(3)
    x_all = rng.uniform(-1, 1, (n, 8))
    w_all = rng.uniform(-1, 1, (n, 8))
    # loss = sum(W * (A X)) so dL/dX = A W.
    want_y, want_dx = a @ x_all, a @ w_all
    errors = []
    barrier = threading.Barrier(2)
    maxima = [0.0, 0.0]

    def agree(w):
        def f(m):
            maxima[w] = m
            barrier.wait()
            r = max(maxima)
            barrier.wait()
            return r
        return f

    def worker(w):
        try:
            with Daemon(socks[w]) as d:
                rows = d.vertices.astype(np.int64)
                x = torch.tensor(x_all[rows], dtype=torch.float32, requires_grad=True)
                y = NeighbourSum.apply(x, d, 0, agree(w), int(np.diff(indptr).max()))
                (y * torch.tensor(w_all[rows], dtype=torch.float32)).sum().backward()
                assert np.allclose(y.detach().numpy(), want_y[rows], atol=1e-3)
                assert np.allclose(x.grad.numpy(), want_dx[rows], atol=1e-3)
        except Exception as e:
            errors.append(f"worker {w}: {e!r}")

    ts = [threading.Thread(target=worker, args=(w,)) for w in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert p.wait(60) == 0
    assert not errors, errors
    print("ok: NeighbourSum forward and backward through the switch")


if __name__ == "__main__":
    main()
