#!/usr/bin/env bash
# Figure 19 of the SwitchGNN paper (ATC '25), scaled to this machine: one layer's time of
# SwitchGNN with and without host congestion control (`switchgnn`, `switchgnn_no_cc`) under
# background traffic (Hadoop flow sizes, Poisson arrivals between random hosts) of growing
# load, with 64 and 128 workers. Reddit-like R-MAT, 602 features, 100 MB scaled as in
# fig2.sh, default switch buffers (32 MB per port), ECN threshold (100 KB) and recovery
# timeout (20 ms). Writes one `sgnn sim` directory per point and OUT/fig19.csv with
# `workers,load,strategy,time_per_layer_us,dropped_frames,fetch_requests,rate_decreases,bg_fct_p99_us,bg_cnps_sent,bg_rate_decreases,time_per_epoch_us`.
#
#   tools/sim/figures/fig19.sh [OUT]       (default OUT: eval/fig19)
#
# Environment: SGNN, SCALE (default 13), RECIRC (Gbit/s, default 12800), LOADS (default
# "0 0.2 0.4 0.6"), WORKERS (default "64 128"), BG_CC (on|off, default on), BG_PRIO (the
# background frames' queue, `sgnn sim --background-prio`: low, data or results; default
# low), and the rate
# control of figures/lib.sh: CC_INTERVAL_US (55), CC_INCREASE_GBPS (0.1), CC_FAST_RECOVERY
# (5), CC_DECREASE_US (50). Also OUT/fig19-wW.png: epoch time (4-layer GCN, `--layers 4`)
# against load, a line per strategy.
#
# Congestion control: the DCQCN-like law of figures/lib.sh (CC_FLAGS, parameters and their
# sources there) for SwitchGNN's hosts (`switchgnn`; not `switchgnn_no_cc`) and for the
# background flows of both runs (`--background-cc on`: one controller per host for its
# background flows, receivers of ECN-marked background frames answer with CNPs). In the paper
# every sender presumably reacts to congestion (its NS3 setting is DCQCN, where the Hadoop
# workload comes from); with open-loop background flows the only sender that backs off is
# SwitchGNN (see docs/evaluation.md, figure 19).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/fig19}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-12800}
LOADS=${LOADS:-"0 0.2 0.4 0.6"}
WORKERS=${WORKERS:-"64 128"}
BG_CC=${BG_CC:-on}
BG_PRIO=${BG_PRIO:-low}
CC_INTERVAL_US=${CC_INTERVAL_US:-55}
CC_INCREASE_GBPS=${CC_INCREASE_GBPS:-0.1}
CC_FAST_RECOVERY=${CC_FAST_RECOVERY:-5}
CC_DECREASE_US=${CC_DECREASE_US:-50}
. tools/sim/figures/lib.sh
SGNN=$(sgnn_bin)
mem=$(paper_mem_bytes 100 "$SCALE")
mkdir -p "$OUT"
echo "workers,load,strategy,time_per_layer_us,dropped_frames,fetch_requests,rate_decreases,bg_fct_p99_us,bg_cnps_sent,bg_rate_decreases,time_per_epoch_us" > "$OUT/fig19.csv"
for w in $WORKERS; do
    for l in $LOADS; do
        echo "== $w workers, background load $l"
        "$SGNN" sim --graph "rmat:scale=$SCALE,edge_factor=245,seed=1" --workers "$w" \
            --switch-mem "${mem}B" --feature-dim 602 --recirc-gbps "$RECIRC" \
            --background-load "$l" --background-cc "$BG_CC" \
            --background-prio "$BG_PRIO" "${CC_FLAGS[@]}" \
            --strategies switchgnn,switchgnn_no_cc --plots none \
            --out "$OUT/w$w-load-$l"
        runs_columns "$OUT/w$w-load-$l/runs.csv" "$w,$l," strategy time_per_layer_us \
            dropped_frames fetch_requests rate_decreases bg_fct_p99_us bg_cnps_sent \
            bg_rate_decreases time_per_epoch_us >> "$OUT/fig19.csv"
    done
    "$SGNN" plot --csv "$OUT/fig19.csv" --where "workers=$w" --x load --y time_per_epoch_us \
        --y-div 1000 --series strategy --x-label "background load" \
        --y-label "epoch time (ms)" --title "Figure 19: $w workers, epoch time under background load" \
        --out "$OUT/fig19-w$w.png"
done
cat "$OUT/fig19.csv"
