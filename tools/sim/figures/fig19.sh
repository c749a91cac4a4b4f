#!/usr/bin/env bash
# Figure 19 of the SwitchGNN paper (ATC '25), scaled to this machine: one layer's time of
# SwitchGNN with and without host congestion control (`switchgnn`, `switchgnn_no_cc`) under
# background traffic (Hadoop flow sizes, Poisson arrivals between random hosts) of growing
# load, with 64 and 128 workers. Reddit-like R-MAT, 602 features, 100 MB scaled as in
# fig2.sh, default switch buffers (32 MB per port) and recovery timeout (20 ms). Writes one
# `sgnn sim` directory per point and OUT/fig19.csv with
# `workers,load,strategy,time_per_layer_us,dropped_frames,fetch_requests,rate_decreases,bg_fct_p99_us`.
#
#   tools/sim/figures/fig19.sh [OUT]       (default OUT: eval/fig19)
#
# Environment: SGNN, SCALE (default 13), RECIRC (Gbit/s, default 12800), LOADS (default
# "0 0.2 0.4 0.6"), WORKERS (default "64 128").
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/fig19}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-12800}
LOADS=${LOADS:-"0 0.2 0.4 0.6"}
WORKERS=${WORKERS:-"64 128"}
SGNN=${SGNN:-target/release/sgnn}
if [ ! -x "$SGNN" ]; then
    cargo build --release -p sgnn
fi
mem=$(awk -v s="$SCALE" 'BEGIN { printf "%.0f", 100e6 * 2^s / 232965 }')
mkdir -p "$OUT"
echo "workers,load,strategy,time_per_layer_us,dropped_frames,fetch_requests,rate_decreases,bg_fct_p99_us" > "$OUT/fig19.csv"
for w in $WORKERS; do
    for l in $LOADS; do
        echo "== $w workers, background load $l"
        "$SGNN" sim --graph "rmat:scale=$SCALE,edge_factor=245,seed=1" --workers "$w" \
            --switch-mem "${mem}B" --feature-dim 602 --recirc-gbps "$RECIRC" \
            --background-load "$l" --strategies switchgnn,switchgnn_no_cc --plots none \
            --out "$OUT/w$w-load-$l"
        # runs.csv columns: 1 strategy, 3 time_per_layer_us, 8 dropped_frames,
        # 17 fetch_requests, 20 rate_decreases, 25 bg_fct_p99_us.
        awk -F, -v w="$w" -v l="$l" \
            'NR > 1 { print w "," l "," $1 "," $3 "," $8 "," $17 "," $20 "," $25 }' \
            "$OUT/w$w-load-$l/runs.csv" >> "$OUT/fig19.csv"
    done
done
cat "$OUT/fig19.csv"
