#!/usr/bin/env bash
# Figure 18 of the SwitchGNN paper (ATC '25), scaled to this machine: traffic of SwitchGNN
# against the host-based (full-graph) exchange as the switch memory grows from 10 to 100 MB,
# with 64 and 128 workers. Reddit-like R-MAT, 602 features, memory scaled by the vertex count
# as in fig2.sh. Writes one `sgnn sim` directory per point and OUT/fig18.csv with
# `workers,paper_mem_mb,mem_bytes,strategy,total_bytes,time_per_layer_us`.
#
#   tools/sim/figures/fig18.sh [OUT]       (default OUT: eval/fig18)
#
# Environment: SGNN, SCALE (default 13), RECIRC (Gbit/s, default 12800), MEMS (paper MB,
# default "10 25 50 75 100"), WORKERS (default "64 128"), DATASET (reddit, products or yelp:
# the R-MAT stand-in of figures/lib.sh, memory scaled by its vertex count; default reddit),
# STRATEGIES (default host_based,switchgnn, the paper's figure; add switchgnn_auto for the
# capacity-aware plan, whose blocks the planner cuts at the switch's src_seen cells as well
# as at its aggregators: docs/evaluation.md, figure 18).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/fig18}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-12800}
MEMS=${MEMS:-"10 25 50 75 100"}
WORKERS=${WORKERS:-"64 128"}
STRATEGIES=${STRATEGIES:-host_based,switchgnn}
. tools/sim/figures/lib.sh
DATASET=${DATASET:-reddit}
dataset_params "$DATASET" "$SCALE"
SGNN=$(sgnn_bin)
mkdir -p "$OUT"
echo "workers,paper_mem_mb,mem_bytes,strategy,total_bytes,time_per_layer_us" > "$OUT/fig18.csv"
for w in $WORKERS; do
    for m in $MEMS; do
        mem=$(paper_mem_bytes "$m" "$SCALE" "$DS_VERTICES")
        echo "== $w workers, paper ${m} MB -> ${mem} B"
        "$SGNN" sim --graph "$DS_GRAPH" --workers "$w" \
            --switch-mem "${mem}B" --feature-dim "$DS_DIM" --buffer 10GB --recirc-gbps "$RECIRC" \
            --strategies "$STRATEGIES" --plots none --out "$OUT/w$w-mem-$m"
        runs_columns "$OUT/w$w-mem-$m/runs.csv" "$w,$m,$mem," strategy total_bytes \
            time_per_layer_us >> "$OUT/fig18.csv"
    done
done
cat "$OUT/fig18.csv"
