#!/usr/bin/env bash
# Training's epoch time split into compute, exchange and weight sync, for switchgnn, host-based
# and single, on cora and on a generated graph of 2^16 vertices, at 4 and 8 workers; bytes per
# epoch. Results in docs/training.md ("Where an epoch's time goes").
#
#   tools/train/bench/epoch-time.sh [OUT_DIR]     (default eval/train-bench; needs ../shared/datasets for cora)
#   ONLY=sbm-2^16 tools/train/bench/epoch-time.sh  (one graph: cora or sbm-2^16; appends to the CSV)
#
# Prints one table per run and writes OUT_DIR/epoch-time.csv.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-eval/train-bench}
mkdir -p "$out"
cargo build --release -q -p sgnn -p sgnn-hostd -p softswitch
sgnn=target/release/sgnn
big="sbm:n=65536,classes=5,p_in=0.0006,p_out=0.00004,dim=64,signal=0.5,seed=1"
only=${ONLY:-}
if [ -z "$only" ] || [ ! -f "$out/epoch-time.csv" ]; then
  echo "graph,workers,mode,epochs,test_accuracy,epoch_ms,compute_ms,exchange_fwd_ms,exchange_bwd_ms,weight_sync_ms,bytes_per_epoch" > "$out/epoch-time.csv"
fi
for g in cora "$big"; do
  name=$([ "$g" = cora ] && echo cora || echo sbm-2^16)
  epochs=$([ "$g" = cora ] && echo 100 || echo 20)
  if [ -n "$only" ] && [ "$only" != "$name" ]; then continue; fi
  for m in 4 8; do
    d="$out/$name-w$m"
    "$sgnn" train --graph "$g" --workers "$m" --epochs "$epochs" \
      --mode switchgnn,host-based,single --out "$d" 2>"$d.log" | tail -1
    python3 - "$d/train.json" "$name" "$m" >> "$out/epoch-time.csv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for x in r["runs"]:
    e = x["epochs"]
    print(f'{sys.argv[2]},{sys.argv[3]},{x["mode"]},{e},{x["test_accuracy"]:.4f},{x["epoch_ms"]:.2f},'
          f'{x["compute_ms"]:.2f},{x["exchange_ms"]["forward"]:.2f},{x["exchange_ms"]["backward"]:.2f},'
          f'{x["weight_sync_ms"]:.2f},{x["bytes_on_links"] // e}')
PY
  done
done
column -s, -t "$out/epoch-time.csv"
