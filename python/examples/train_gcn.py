"""PyG's GCN recipe on a graph, single-process or through the switch: `python train_gcn.py DATA`
runs it as PyG does; `switchgnn launch --graph DATA --workers 4 -- python train_gcn.py` runs
the same file with one process per worker and every neighbour sum through the switch."""
import sys
import torch
import torch.nn.functional as F
import switchgnn
from switchgnn.pyg import GCNConv  # was: from torch_geometric.nn import GCNConv

data = switchgnn.load_data(sys.argv[1] if len(sys.argv) > 1 else None, normalize_features=True)
torch.manual_seed(1)  # the same weights on every worker
conv1, conv2 = GCNConv(data.num_features, 16), GCNConv(16, data.num_classes)
opt = torch.optim.Adam([dict(params=conv1.parameters(), weight_decay=5e-4),
                        dict(params=conv2.parameters(), weight_decay=0)], lr=0.01)
n_train = switchgnn.global_sum(data.train_mask.sum())  # over all workers


def model(x, training):
    x = F.relu(conv1(F.dropout(x, 0.5, training), data.edge_index))
    return conv2(F.dropout(x, 0.5, training), data.edge_index)


for epoch in range(200):
    opt.zero_grad()
    out = model(data.x, True)[data.train_mask]
    loss = F.cross_entropy(out, data.y[data.train_mask], reduction="sum") / n_train
    loss.backward()
    switchgnn.all_reduce_gradients([*conv1.parameters(), *conv2.parameters()])  # sum: gloo
    opt.step()
with torch.no_grad():
    correct = (model(data.x, False).argmax(1) == data.y)[data.test_mask].sum()
acc = switchgnn.global_sum(correct) / switchgnn.global_sum(data.test_mask.sum())
if switchgnn.rank() == 0:
    print(f"loss {switchgnn.global_sum(loss.item()):.4f}, test accuracy {acc:.3f}")
