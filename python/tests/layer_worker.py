"""Run by test_pyg.py under `switchgnn launch`: every layer configuration of CONFIGS on this
worker's shard, forward and backward, saved to OUT/rankR.npz (outputs, input gradients and the
all-reduced weight gradients), for the test to compare with torch_geometric on the whole graph."""

import sys

import numpy as np
import torch

import switchgnn
from switchgnn.pyg import GCNConv, SAGEConv

CONFIGS = [
    ("gcn", {}), ("gcn", {"improved": True}), ("gcn", {"normalize": False}),
    ("gcn", {"add_self_loops": False}), ("gcn", {"bias": False}), ("sage", {}),
    ("sage", {"aggr": "add", "normalize": True, "root_weight": False}),
    ("sage", {"project": True}),
]


def build(kind, kwargs, dim_in, dim_out, seed):
    torch.manual_seed(seed)
    return (GCNConv if kind == "gcn" else SAGEConv)(dim_in, dim_out, **kwargs)


def main():
    out_dir, dim_out = sys.argv[1], int(sys.argv[2])
    data = switchgnn.load_data()
    rng = np.random.default_rng(5)
    n = int(switchgnn.global_sum(data.num_nodes))
    weights = torch.from_numpy(rng.uniform(-1, 1, (n, dim_out)).astype(np.float32))[data.n_id]
    saved = {"n_id": data.n_id.numpy()}
    for i, (kind, kwargs) in enumerate(CONFIGS):
        layer = build(kind, kwargs, data.num_features, dim_out, seed=10 + i)
        x = data.x.clone().requires_grad_(True)
        y = layer(x, data.edge_index)
        (y * weights).sum().backward()
        switchgnn.all_reduce_gradients(layer.parameters())
        saved[f"out{i}"] = y.detach().numpy()
        saved[f"dx{i}"] = x.grad.numpy()
        for name, p in layer.named_parameters():
            saved[f"grad{i}.{name}"] = p.grad.numpy()
    np.savez(f"{out_dir}/rank{switchgnn.rank()}.npz", **saved)


if __name__ == "__main__":
    main()
