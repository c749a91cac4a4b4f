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
# default "10 25 50 75 100"), WORKERS (default "64 128").
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/fig18}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-12800}
MEMS=${MEMS:-"10 25 50 75 100"}
WORKERS=${WORKERS:-"64 128"}
SGNN=${SGNN:-target/release/sgnn}
if [ ! -x "$SGNN" ]; then
    cargo build --release -p sgnn
fi
mkdir -p "$OUT"
echo "workers,paper_mem_mb,mem_bytes,strategy,total_bytes,time_per_layer_us" > "$OUT/fig18.csv"
for w in $WORKERS; do
    for m in $MEMS; do
        mem=$(awk -v s="$SCALE" -v m="$m" 'BEGIN { printf "%.0f", m * 1e6 * 2^s / 232965 }')
        echo "== $w workers, paper ${m} MB -> ${mem} B"
        "$SGNN" sim --graph "rmat:scale=$SCALE,edge_factor=245,seed=1" --workers "$w" \
            --switch-mem "${mem}B" --feature-dim 602 --buffer 10GB --recirc-gbps "$RECIRC" \
            --strategies host_based,switchgnn --plots none --out "$OUT/w$w-mem-$m"
        # runs.csv columns: 1 strategy, 3 time_per_layer_us, 4 total_bytes.
        awk -F, -v w="$w" -v m="$m" -v b="$mem" \
            'NR > 1 { print w "," m "," b "," $1 "," $4 "," $3 }' \
            "$OUT/w$w-mem-$m/runs.csv" >> "$OUT/fig18.csv"
    done
done
cat "$OUT/fig18.csv"
