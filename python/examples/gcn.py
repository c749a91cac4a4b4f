"""A 2-layer GCN in plain PyTorch whose neighbour sums go through SwitchGNN.

Start the cluster first (one daemon per worker), then one of these per worker:

    cargo run --release -p sgnn -- serve --graph DATASET_DIR/edges.txt.gz --workers 2 --feature-dim 16 --out serve-out
    torchrun --nproc-per-node 2 python/examples/gcn.py serve-out DATASET_DIR

Each process reads its rows of features.npy / labels.npy / train_mask.npy (the vertices its
daemon reports), and sums the weight gradients with torch.distributed (gloo). The maths is
that of docs/training.md: the remote and local parts of A_hat H are the daemon's unweighted
sum of d^-1/2-scaled rows, post-scaled by d^-1/2, plus the self loop.
"""

import os
import sys

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from switchgnn import Daemon  # noqa: E402
from switchgnn.torch import NeighbourSum  # noqa: E402


def main(serve_dir, data_dir, epochs=200, hidden=16):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    daemon = Daemon(os.path.join(serve_dir, f"w{rank}.sock"))
    rows = daemon.vertices.astype(np.int64)
    x = torch.from_numpy(np.load(os.path.join(data_dir, "features.npy"))[rows].astype(np.float32))
    x = x / x.sum(1, keepdim=True).clamp(min=1e-12)
    y = torch.from_numpy(np.load(os.path.join(data_dir, "labels.npy"))[rows].astype(np.int64))
    train = torch.from_numpy(np.load(os.path.join(data_dir, "train_mask.npy"))[rows].astype(bool))
    # Degrees in the whole graph: the daemon's sum of ones.
    deg = torch.from_numpy(daemon.propagate(1000, np.ones((len(rows), 1), np.float32)))[:, 0]
    c = (deg + 1).rsqrt().unsqueeze(1)
    classes = int(torch.tensor(int(y.max()) + 1).clone())
    t = torch.tensor([classes])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    classes = int(t)

    def agree_max(m):
        t = torch.tensor([m], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t)

    n_train = torch.tensor([float(train.sum())])
    dist.all_reduce(n_train)
    torch.manual_seed(1)
    w1 = torch.nn.Linear(x.shape[1], hidden)
    w2 = torch.nn.Linear(hidden, classes)
    params = list(w1.parameters()) + list(w2.parameters())
    opt = torch.optim.Adam(params, lr=0.01)

    def conv(h, lin, layer):
        z = c * (h @ lin.weight.T)
        return c * (NeighbourSum.apply(z, daemon, layer, agree_max) + z) + lin.bias

    for epoch in range(epochs):
        opt.zero_grad()
        h = torch.relu(conv(torch.dropout(x, 0.5, True), w1, 0))
        out = conv(torch.dropout(h, 0.5, True), w2, 1)
        loss = torch.nn.functional.cross_entropy(out[train], y[train], reduction="sum") / n_train
        loss = loss + 5e-4 / 2 * (w1.weight**2).sum() / dist.get_world_size()
        loss.backward()
        for p in params:
            dist.all_reduce(p.grad)
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0 and epoch % 20 == 0:
            print(f"epoch {epoch}: loss {float(total):.4f}", flush=True)
    daemon.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
