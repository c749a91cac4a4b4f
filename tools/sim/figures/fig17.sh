#!/usr/bin/env bash
# Figure 17 of the SwitchGNN paper (ATC '25), scaled to this machine: SwitchGNN with GAMR (the
# planner's graph-aware send order) against SwitchGNN without it (`--order random`,
# `switchgnn_no_gamr`) as the switch memory grows from 10 to 100 MB. Reddit-like R-MAT, 128
# workers, 602 features, 10 GB buffers; memory scaled by the vertex count as in fig2.sh.
# Writes one `sgnn sim` directory per memory point and OUT/fig17.csv with
# `paper_mem_mb,mem_bytes,strategy,time_per_layer_us,max_queue_bytes,total_bytes`.
#
#   tools/sim/figures/fig17.sh [OUT]       (default OUT: eval/fig17)
#
# Environment: SGNN, SCALE (default 13), RECIRC (Gbit/s, default 12800), MEMS (paper MB,
# default "10 25 50 75 100"), DATASET (reddit, products or yelp: the R-MAT stand-in of
# figures/lib.sh, memory scaled by its vertex count; default reddit).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/fig17}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-12800}
MEMS=${MEMS:-"10 25 50 75 100"}
. tools/sim/figures/lib.sh
DATASET=${DATASET:-reddit}
dataset_params "$DATASET" "$SCALE"
SGNN=$(sgnn_bin)
mkdir -p "$OUT"
echo "paper_mem_mb,mem_bytes,strategy,time_per_layer_us,max_queue_bytes,total_bytes" > "$OUT/fig17.csv"
for m in $MEMS; do
    mem=$(paper_mem_bytes "$m" "$SCALE" "$DS_VERTICES")
    echo "== paper ${m} MB -> ${mem} B"
    "$SGNN" sim --graph "$DS_GRAPH" --workers 128 \
        --switch-mem "${mem}B" --feature-dim "$DS_DIM" --buffer 10GB --recirc-gbps "$RECIRC" \
        --strategies switchgnn,switchgnn_no_gamr --plots none --out "$OUT/mem-$m"
    runs_columns "$OUT/mem-$m/runs.csv" "$m,$mem," strategy time_per_layer_us \
        max_queue_bytes total_bytes >> "$OUT/fig17.csv"
done
cat "$OUT/fig17.csv"
