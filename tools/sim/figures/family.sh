#!/usr/bin/env bash
# Issue 30's generated family: the capacity-aware plan on graphs the planner was not tuned on,
# at the default ECN threshold (100 KB) with the daemons' rate control on: R-MAT with
# a = 0.45, 0.57 (the default skew) and 0.7 (b = c, d the rest) at scale 14, and two stochastic
# block models (little and much mixing between classes), at 8, 16, 32, 64 and 128 workers,
# one recirculation port (100 Gbit/s), 10 MB, 128 features, star, 100 Gbit/s links, 2 us.
# Writes one `sgnn sim` directory per cell and
#   OUT/family.csv  graph,workers,recirc_gbps,recirc_step,mem_mb,strategy,time_per_layer_us,predicted_us,total_bytes,rate_decreases,ecn_marked
#   OUT/cells.csv   as capacity.sh's (lib.sh cells_csv)
# and prints the cells where switchgnn_auto is over 1.02x the best other strategy that fits,
# or its simulated time over 10% from its prediction.
#
#   tools/sim/figures/family.sh [OUT]        (default OUT: eval/family)
#
# Environment: SGNN, GRAPHS (name=source pairs), WORKERS (default "8 16 32 64 128"), RECIRC
# (Gbit/s, default 100), MEM (MB, default 10), STRATEGIES.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/family}
. tools/sim/figures/lib.sh
GRAPHS=${GRAPHS:-"rmat45=rmat:scale=14,edge_factor=16,a=0.45,b=0.22,c=0.22,d=0.11 rmat57=rmat:scale=14,edge_factor=16 rmat70=rmat:scale=14,edge_factor=16,a=0.7,b=0.12,c=0.12,d=0.06 sbm-low=sbm:n=32768,classes=16,p_in=0.004,p_out=0.0001 sbm-high=sbm:n=32768,classes=16,p_in=0.002,p_out=0.0005"}
WORKERS=${WORKERS:-"8 16 32 64 128"}
RECIRC=${RECIRC:-100}
MEM=${MEM:-10}
STRATEGIES=${STRATEGIES:-host_based,host_based_no_cc,switchgnn,supergcn,hermod,multicast,partials,switchgnn_auto}
SGNN=$(sgnn_bin)
mkdir -p "$OUT"
csv="$OUT/family.csv"
echo "graph,workers,recirc_gbps,recirc_step,mem_mb,strategy,time_per_layer_us,predicted_us,total_bytes,rate_decreases,ecn_marked" > "$csv"
for g in $GRAPHS; do
    name=${g%%=*}
    src=${g#*=}
    for w in $WORKERS; do
        dir="$OUT/$name-w$w"
        echo "== $name, $w workers"
        "$SGNN" sim --graph "$src" --workers "$w" --switch-mem "${MEM}MB" --feature-dim 128 \
            --recirc-gbps "$RECIRC" --strategies "$STRATEGIES" --plots none --out "$dir" \
            > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
        runs_columns "$dir/runs.csv" "$name,$w,$RECIRC,1,$MEM," strategy time_per_layer_us \
            predicted_us total_bytes rate_decreases ecn_marked >> "$csv"
    done
done
cells_csv "$csv" > "$OUT/cells.csv"
echo "cells: $OUT/cells.csv"
column -s, -t < "$OUT/cells.csv"
echo "cells where switchgnn_auto is over 1.02x the best other strategy that fits, or the model over 10% off:"
awk -F, 'NR > 1 && ($10 > 1.02 || $12 > 0.10 || $12 < -0.10)' "$OUT/cells.csv"
