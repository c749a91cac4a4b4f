#!/usr/bin/env bash
# Figure 19 of the SwitchGNN paper (ATC '25), scaled to this machine: one layer's time of
# SwitchGNN with and without host congestion control (`switchgnn`, `switchgnn_no_cc`) under
# background traffic (Hadoop flow sizes, Poisson arrivals between random hosts) of growing
# load, with 64 and 128 workers. Reddit-like R-MAT, 602 features, 100 MB scaled as in
# fig2.sh, default switch buffers (32 MB per port), ECN threshold (100 KB) and recovery
# timeout (20 ms). Writes one `sgnn sim` directory per point and OUT/fig19.csv with
# `workers,load,strategy,time_per_layer_us,dropped_frames,fetch_requests,rate_decreases,bg_fct_p99_us,bg_cnps_sent,bg_rate_decreases`.
#
#   tools/sim/figures/fig19.sh [OUT]       (default OUT: eval/fig19)
#
# Environment: SGNN, SCALE (default 13), RECIRC (Gbit/s, default 12800), LOADS (default
# "0 0.2 0.4 0.6"), WORKERS (default "64 128"), BG_CC (on|off, default on), and the rate
# control below: CC_INTERVAL_US (55), CC_INCREASE_GBPS (0.1), CC_FAST_RECOVERY (5),
# CC_DECREASE_US (50).
#
# Congestion control: the same DCQCN-like law for SwitchGNN's hosts (`switchgnn`; not
# `switchgnn_no_cc`) and for the background flows of both runs (`--background-cc on`: one
# controller per host for its background flows, receivers of ECN-marked background frames
# answer with CNPs). In the paper every sender presumably reacts to congestion (its NS3
# setting is DCQCN, where the Hadoop workload comes from); with open-loop background flows
# the only sender that backs off is SwitchGNN (see docs/evaluation.md, figure 19). The
# parameters are DCQCN's (Zhu et al., SIGCOMM 2015) scaled to our 100 Gbit/s links:
# - rate-increase timer 55 us and 5 fast-recovery steps, as in DCQCN;
# - additive increase R_AI = 40 Mbit/s at 40 Gbit/s in DCQCN, scaled with the link rate to
#   100 Mbit/s at 100 Gbit/s (the same fraction of the line rate per step; the daemon's
#   default, 50 Mbit/s per 1 ms, is 18 times slower per unit of time);
# - at most one halving per 50 us: DCQCN's notification point sends at most one CNP per
#   flow per 50 us and its reaction point cuts on each; SwitchGNN's hosts react to marked
#   Results directly, so 50 us is their equivalent (the daemon's default is 200 us).
# The cut itself is a halving (DCQCN's cut with alpha = 1, its initial value; alpha is not
# modelled).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/fig19}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-12800}
LOADS=${LOADS:-"0 0.2 0.4 0.6"}
WORKERS=${WORKERS:-"64 128"}
BG_CC=${BG_CC:-on}
CC_INTERVAL_US=${CC_INTERVAL_US:-55}
CC_INCREASE_GBPS=${CC_INCREASE_GBPS:-0.1}
CC_FAST_RECOVERY=${CC_FAST_RECOVERY:-5}
CC_DECREASE_US=${CC_DECREASE_US:-50}
SGNN=${SGNN:-target/release/sgnn}
if [ ! -x "$SGNN" ]; then
    cargo build --release -p sgnn
fi
mem=$(awk -v s="$SCALE" 'BEGIN { printf "%.0f", 100e6 * 2^s / 232965 }')
mkdir -p "$OUT"
echo "workers,load,strategy,time_per_layer_us,dropped_frames,fetch_requests,rate_decreases,bg_fct_p99_us,bg_cnps_sent,bg_rate_decreases" > "$OUT/fig19.csv"
for w in $WORKERS; do
    for l in $LOADS; do
        echo "== $w workers, background load $l"
        "$SGNN" sim --graph "rmat:scale=$SCALE,edge_factor=245,seed=1" --workers "$w" \
            --switch-mem "${mem}B" --feature-dim 602 --recirc-gbps "$RECIRC" \
            --background-load "$l" --background-cc "$BG_CC" \
            --cc-increase-interval-us "$CC_INTERVAL_US" --cc-increase-gbps "$CC_INCREASE_GBPS" \
            --cc-fast-recovery "$CC_FAST_RECOVERY" --cc-decrease-interval-us "$CC_DECREASE_US" \
            --strategies switchgnn,switchgnn_no_cc --plots none \
            --out "$OUT/w$w-load-$l"
        # runs.csv columns by name (other columns may be appended to runs.csv).
        awk -F, -v w="$w" -v l="$l" '
            NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            { print w "," l "," $c["strategy"] "," $c["time_per_layer_us"] "," \
                $c["dropped_frames"] "," $c["fetch_requests"] "," $c["rate_decreases"] "," \
                $c["bg_fct_p99_us"] "," $c["bg_cnps_sent"] "," $c["bg_rate_decreases"] }' \
            "$OUT/w$w-load-$l/runs.csv" >> "$OUT/fig19.csv"
    done
done
cat "$OUT/fig19.csv"
