"""The numbers of docs/pytorch.md: PyG's GCN through the switch against single-process PyG.

For each graph: parity (dropout off, 100 epochs: the largest relative loss difference at any
epoch), accuracy and epoch time with PyG's standard recipe (2 layers, 16 hidden, dropout 0.5,
lr 0.01, weight decay 5e-4 on the first layer, 200 epochs, test accuracy at the best validation
epoch), through the switch at WORKERS workers and LOSSES loss rates, for SEEDS seeds.

    python3 python/bench/pytorch_bench.py --graphs cora,citeseer --workers 2,4 --losses 0,0.03 \
        --seeds 1,2,3 --out eval/pytorch-bench.json

Needs torch, torch_geometric, the sgnn binaries (SGNN_BIN or target/release) and the datasets.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "python/examples/pyg_train.py"


def run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")


def single(graph: Path, out: Path, extra: list[str]) -> dict:
    run([sys.executable, str(EXAMPLE), str(graph), "--impl", "pyg", "--out", str(out), *extra])
    return json.loads(out.read_text())


def launched(graph: Path, workers: int, loss: float, out: Path, extra: list[str]) -> dict:
    run([sys.executable, "-m", "switchgnn", "launch", "--graph", str(graph), "--workers",
         str(workers), "--loss", str(loss), "--out", str(out.parent / (out.stem + "-launch")),
         "--", sys.executable, str(EXAMPLE), "--out", str(out), *extra])
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default="cora,citeseer")
    ap.add_argument("--workers", default="2,4")
    ap.add_argument("--losses", default="0,0.03")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--datasets", default=str(ROOT.parent / "shared/datasets"))
    ap.add_argument("--out", default="eval/pytorch-bench.json")
    ap.add_argument("--no-parity", action="store_true", help="only the recipe runs")
    ap.add_argument("--recipe", default=None,
                    help="WORKERS:LOSS,... for the recipe runs (default: every --workers x "
                    "--losses)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pytorch-bench-"))
    seeds = [int(s) for s in a.seeds.split(",")]
    results = []
    for name in a.graphs.split(","):
        g = Path(a.datasets) / name
        parity = ["--dropout", "0", "--epochs", "100", "--eval-every", "0"]
        ref = [] if a.no_parity else single(g, tmp / f"{name}-parity-ref.json", parity)["loss"]
        for w in [int(x) for x in a.workers.split(",")] if ref else []:
            for loss in [float(x) for x in a.losses.split(",")]:
                got = launched(g, w, loss, tmp / f"{name}-parity-{w}-{loss}.json", parity)["loss"]
                worst = max(abs(x - y) / abs(y) for x, y in zip(got, ref))
                results.append({"graph": name, "kind": "parity", "workers": w, "loss": loss,
                                "max_rel_diff": worst, "first": [got[0], ref[0]],
                                "last": [got[-1], ref[-1]]})
                print(json.dumps(results[-1]), flush=True)
        for seed in seeds:
            r = single(g, tmp / f"{name}-ref-{seed}.json", ["--seed", str(seed)])
            results.append({"graph": name, "kind": "recipe", "workers": 1, "loss": 0.0,
                            "seed": seed, "test": r["test_accuracy_at_best_val"],
                            "median_epoch_ms": r["median_epoch_ms"]})
            print(json.dumps(results[-1]), flush=True)
            recipe = ([(int(c.split(":")[0]), float(c.split(":")[1]))
                       for c in a.recipe.split(",")] if a.recipe else
                      [(int(w), float(x)) for w in a.workers.split(",")
                       for x in a.losses.split(",")])
            for w, loss in recipe:
                if True:
                    t = time.perf_counter()
                    r = launched(g, w, loss, tmp / f"{name}-{w}-{loss}-{seed}.json",
                                 ["--seed", str(seed)])
                    results.append({"graph": name, "kind": "recipe", "workers": w, "loss": loss,
                                    "seed": seed, "test": r["test_accuracy_at_best_val"],
                                    "median_epoch_ms": r["median_epoch_ms"],
                                    "wall_s": time.perf_counter() - t})
                    print(json.dumps(results[-1]), flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(results, indent=1) + "\n")
    print("\n| graph | workers | loss | parity: max rel. loss diff (100 epochs, dropout 0) | "
          "test acc. (seeds " + a.seeds + ") | mean | median ms/epoch |")
    print("|---|---|---|---|---|---|---|")
    keys = sorted({(r["graph"], r["workers"], r["loss"]) for r in results})
    for gname, w, loss in keys:
        rec = [r for r in results if r["kind"] == "recipe" and (r["graph"], r["workers"],
                                                                r["loss"]) == (gname, w, loss)]
        par = [r for r in results if r["kind"] == "parity" and (r["graph"], r["workers"],
                                                                r["loss"]) == (gname, w, loss)]
        accs = [100 * r["test"] for r in rec]
        print(f"| {gname} | {w if w > 1 else '1 (PyG)'} | {loss:.0%} | "
              f"{par[0]['max_rel_diff']:.1e} | " if par else
              f"| {gname} | {w if w > 1 else '1 (PyG)'} | {loss:.0%} | - | ", end="")
        if not rec:
            print("- | - | - |")
            continue
        print(f"{', '.join(f'{x:.1f}' for x in accs)} | {statistics.mean(accs):.1f} | "
              f"{statistics.median(r['median_epoch_ms'] for r in rec):.1f} |")


if __name__ == "__main__":
    main()
