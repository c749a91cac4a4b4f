"""A 2-layer GCN in plain PyTorch whose neighbour sums go through SwitchGNN.

Start the cluster first (one daemon per worker), then one of these per worker:

    cargo run --release -p sgnn -- serve --graph DATA/edges.txt.gz --workers 2 --feature-dim 16 --out serve-out
    torchrun --nproc-per-node 2 python/examples/gcn.py serve-out DATA

Each process reads its rows of features.npy / labels.npy / *_mask.npy (the vertices its daemon
reports) and sums the weight gradients with torch.distributed (gloo). The maths is that of
docs/training.md: A_hat H W is c * (S(c * HW) + c * HW) with c = (d + 1)^-1/2 and S the
daemon's sum over neighbours. Options: --epochs N, --dropout P, --hidden H, --init DIR (start
from `sgnn train --save-init DIR`'s weights, to compare the loss curves), --losses FILE (write
the per-epoch loss as JSON, rank 0).
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from switchgnn import Daemon  # noqa: E402
from switchgnn.torch import NeighbourSum  # noqa: E402


def glorot(i, o):
    a = (6.0 / (i + o)) ** 0.5
    return torch.empty(i, o).uniform_(-a, a)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("serve_dir")
    ap.add_argument("data_dir")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--init", default=None)
    ap.add_argument("--losses", default=None)
    a = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    daemon = Daemon(os.path.join(a.serve_dir, f"w{rank}.sock"))
    rows = daemon.vertices.astype(np.int64)
    load = lambda name: np.load(os.path.join(a.data_dir, name))  # noqa: E731
    feats = load("features.npy").astype(np.float32)
    sums = feats.sum(1, keepdims=True)
    feats = np.where(sums != 0, feats / np.where(sums != 0, sums, 1), feats)  # rows sum to 1
    x = torch.from_numpy(feats[rows])
    labels = load("labels.npy").astype(np.int64)
    y = torch.from_numpy(labels[rows])
    train = torch.from_numpy(load("train_mask.npy").astype(bool)[rows])
    classes = int(labels.max()) + 1
    # Degrees in the whole graph: the daemon's sum of ones over the neighbours.
    deg = torch.from_numpy(daemon.propagate(1000, np.ones((len(rows), 1), np.float32)))[:, 0]
    c = (deg + 1).rsqrt().unsqueeze(1)
    max_degree = torch.tensor([float(deg.max())])
    dist.all_reduce(max_degree, op=dist.ReduceOp.MAX)

    def agree_max(m):
        t = torch.tensor([m], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t)

    n_train = torch.tensor([float(train.sum())])
    dist.all_reduce(n_train)
    if a.init:
        w = [torch.from_numpy(np.load(os.path.join(a.init, f"w{l}.npy"))) for l in (0, 1)]
        b = [torch.from_numpy(np.load(os.path.join(a.init, f"b{l}.npy"))) for l in (0, 1)]
    else:
        torch.manual_seed(1)
        w = [glorot(x.shape[1], a.hidden), glorot(a.hidden, classes)]
        b = [torch.zeros(a.hidden), torch.zeros(classes)]
    params = [torch.nn.Parameter(p.clone()) for p in w + b]
    w0, w1, b0, b1 = params
    opt = torch.optim.Adam(params, lr=a.lr, eps=1e-8)

    def conv(h, weight, bias, layer):
        z = c * (h @ weight)
        s = NeighbourSum.apply(z, daemon, layer, agree_max, int(max_degree))
        return c * (s + z) + bias

    losses = []
    for epoch in range(a.epochs):
        opt.zero_grad()
        h = torch.relu(conv(torch.dropout(x, a.dropout, True), w0, b0, 0))
        out = conv(torch.dropout(h, a.dropout, True), w1, b1, 1)
        ce = torch.nn.functional.cross_entropy(out[train], y[train], reduction="sum") / n_train
        # The weight decay term once over all workers (the gradients are summed below).
        loss = ce + a.weight_decay / 2 * (w0**2).sum() / world
        loss.backward()
        for p in params:
            dist.all_reduce(p.grad)
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(float(total))
        opt.step()
        if rank == 0 and (epoch % 20 == 0 or epoch == a.epochs - 1):
            print(f"epoch {epoch + 1}: loss {float(total):.6f}", flush=True)
    daemon.close()
    if rank == 0 and a.losses:
        with open(a.losses, "w") as f:
            json.dump(losses, f)


if __name__ == "__main__":
    main()
