"""A PyG model (GCN or GraphSAGE, PyG's standard recipe) trained single-process or under
`switchgnn launch`, with the numbers the tests and docs/pytorch.md use.

    python python/examples/pyg_train.py DATA --impl pyg --out ref.json          # torch_geometric.nn
    switchgnn launch --graph DATA --workers 4 -- python python/examples/pyg_train.py --out s.json

`--impl pyg` builds the model from torch_geometric.nn itself (the reference); the default,
`switchgnn`, from switchgnn.pyg (PyG's layers outside a launch, the switch inside one).
Options: --model gcn|sage, --epochs, --hidden, --dropout, --lr, --weight-decay (first layer, as
PyG's GCN example), --seed, --eval-every N (0: only after the last epoch), --out FILE (JSON:
per-epoch loss and ms, accuracies; written by rank 0), --sync all_reduce|ddp (how a launch sums
the gradients: switchgnn.all_reduce_gradients, or the model wrapped in PyTorch's
DistributedDataParallel with each worker's loss times the world size; docs/pytorch.md).
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import switchgnn


class Net(torch.nn.Module):
    """Two graph convolutions with ReLU and dropout between (PyG's GCN example)."""

    def __init__(self, conv1: torch.nn.Module, conv2: torch.nn.Module, dropout: float) -> None:
        super().__init__()
        self.conv1, self.conv2, self.dropout = conv1, conv2, dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor | None) -> torch.Tensor:
        x = F.relu(self.conv1(F.dropout(x, self.dropout, self.training), edge_index))
        out: torch.Tensor = self.conv2(F.dropout(x, self.dropout, self.training), edge_index)
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=None)
    ap.add_argument("--impl", choices=["switchgnn", "pyg"], default="switchgnn")
    ap.add_argument("--model", choices=["gcn", "sage"], default="gcn")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--sync", choices=["all_reduce", "ddp"], default="all_reduce")
    a = ap.parse_args()

    if a.impl == "pyg":
        from torch_geometric.nn import GCNConv, SAGEConv
    else:
        from switchgnn.pyg import GCNConv, SAGEConv  # type: ignore[assignment]
    t_start = time.perf_counter()
    data = switchgnn.load_data(a.data, normalize_features=True)
    conv = GCNConv if a.model == "gcn" else SAGEConv
    torch.manual_seed(a.seed)
    net = Net(conv(data.num_features, a.hidden), conv(a.hidden, data.num_classes), a.dropout)
    opt = torch.optim.Adam([dict(params=net.conv1.parameters(), weight_decay=a.weight_decay),
                            dict(params=net.conv2.parameters(), weight_decay=0.0)], lr=a.lr)
    params = list(net.parameters())
    n_train = switchgnn.global_sum(data.train_mask.sum())
    masks = {m: switchgnn.global_sum(data[m].sum()) for m in ("val_mask", "test_mask")}
    # DDP needs torch.distributed, which only a launch sets up; single-process it is the model.
    ddp = a.sync == "ddp" and switchgnn.current() is not None
    model: torch.nn.Module = DistributedDataParallel(net) if ddp else net
    # DDP averages the gradients over the workers; each worker's loss is its share of the
    # global mean, whose gradient is their sum: scale by the world size to undo the division.
    grad_scale = float(switchgnn.world_size()) if ddp else 1.0

    def evaluate() -> dict[str, float]:
        model.eval()
        with torch.no_grad():
            ok = model(data.x, data.edge_index).argmax(1) == data.y
        model.train()
        return {m: switchgnn.global_sum(ok[data[m]].sum()) / masks[m] for m in masks}

    torch.manual_seed(a.seed + switchgnn.rank())  # each worker's own dropout masks
    losses, ms, best = [], [], {"val_mask": -1.0, "test_mask": 0.0, "epoch": 0}
    setup_s = time.perf_counter() - t_start
    for epoch in range(a.epochs):
        t = time.perf_counter()
        opt.zero_grad()
        out = model(data.x, data.edge_index)[data.train_mask]
        loss = F.cross_entropy(out, data.y[data.train_mask], reduction="sum") / n_train
        if ddp:
            (loss * grad_scale).backward()  # DDP's all-reduce runs in the backward
        else:
            loss.backward()
            switchgnn.all_reduce_gradients(params)
        opt.step()
        ms.append((time.perf_counter() - t) * 1e3)
        losses.append(switchgnn.global_sum(loss.item()))
        if (a.eval_every and (epoch + 1) % a.eval_every == 0) or epoch == a.epochs - 1:
            acc = evaluate()
            if acc["val_mask"] > best["val_mask"]:
                best = {**acc, "epoch": epoch + 1}
            last = acc
        if switchgnn.rank() == 0 and (epoch % 50 == 0 or epoch == a.epochs - 1):
            print(f"epoch {epoch + 1}: loss {losses[-1]:.6f}", flush=True)
    c = switchgnn.current()
    report = {
        "impl": a.impl, "model": a.model, "sync": "ddp" if ddp else "all_reduce", "workers": 1 if c is None else c.world_size,
        "epochs": a.epochs, "dropout": a.dropout, "seed": a.seed, "loss": losses,
        "epoch_ms": ms, "median_epoch_ms": sorted(ms)[len(ms) // 2], "setup_s": setup_s,
        "test_accuracy_at_best_val": best["test_mask"], "best_epoch": best["epoch"],
        "final_test_accuracy": last["test_mask"], "final_val_accuracy": last["val_mask"],
    }
    if switchgnn.rank() == 0:
        print(f"test accuracy {best['test_mask']:.4f} (epoch {best['epoch']}), "
              f"{report['median_epoch_ms']:.1f} ms/epoch (median)", flush=True)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(report, f)


if __name__ == "__main__":
    main()
