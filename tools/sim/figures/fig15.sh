#!/usr/bin/env bash
# Figures 15 and 16 of the SwitchGNN paper (ATC '25), scaled to this machine: the epoch time
# of BNS-GCN (host_based), G3 (g3), the strawman and SwitchGNN as the number of workers grows,
# on a star (figure 15) or on the paper's 8 x 8 leaf-spine (figure 16, tools/sim/figures/fig16.sh).
# Reddit-like R-MAT, 602 features, the paper's 100 MB scaled by the vertex count, an epoch of a
# 4-layer GCN (4 forward + 3 backward exchanges, `sgnn sim --layers 4`), communication only
# (the paper adds its GPU testbed's computation, which we do not have; pass COMPUTE_MS to add
# a fixed amount). Every point is run at each recirculation bandwidth of RECIRC (see
# docs/evaluation.md: 12,800 Gbit/s is every port of a 12.8 Tbit/s switch looped back, an upper
# bound; 1,000,000 makes recirculation practically free, which the paper's results need).
#
# Writes one `sgnn sim` directory per point, OUT/figNN.csv with
# `topology,recirc_gbps,workers,strategy,time_per_layer_us,time_per_epoch_us,total_bytes,max_queue_bytes,recirculations`
# and one plot per recirculation bandwidth, OUT/figNN-recirc-R.png (epoch time in ms against
# workers, a line per strategy).
#
#   tools/sim/figures/fig15.sh [OUT]       (default OUT: eval/fig15)
#
# Environment: SGNN, SCALE (default 13), RECIRC (Gbit/s, default "12800 1000000"), WORKERS
# (default "16 32 64 128"), STRATEGIES (default host_based,g3,strawman,switchgnn,
# switchgnn_no_cc), TOPOLOGY
# (star or leaf-spine; default star), LEAVES and SPINES (leaf-spine only, default 8 and 8),
# COMPUTE_MS (default 0), FIG (the figure number in file names, default 15), DATASET (reddit,
# products or yelp: the R-MAT stand-in of figures/lib.sh; default reddit), and the rate
# control of figures/lib.sh (CC_FLAGS: DCQCN's parameters scaled to 100 Gbit/s, as in fig19.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
. tools/sim/figures/lib.sh
TOPOLOGY=${TOPOLOGY:-star}
FIG=${FIG:-15}
OUT=${1:-eval/fig$FIG}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-"12800 1000000"}
WORKERS=${WORKERS:-"16 32 64 128"}
STRATEGIES=${STRATEGIES:-host_based,g3,strawman,switchgnn,switchgnn_no_cc}
LEAVES=${LEAVES:-8}
SPINES=${SPINES:-8}
COMPUTE_MS=${COMPUTE_MS:-0}
DATASET=${DATASET:-reddit}
dataset_params "$DATASET" "$SCALE"
SGNN=$(sgnn_bin)
MEM=$(paper_mem_bytes 100 "$SCALE" "$DS_VERTICES")
topo=(--topology "$TOPOLOGY")
if [ "$TOPOLOGY" = leaf-spine ]; then
    topo+=(--leaves "$LEAVES" --spines "$SPINES")
fi
mkdir -p "$OUT"
CSV="$OUT/fig$FIG.csv"
echo "topology,recirc_gbps,workers,strategy,time_per_layer_us,time_per_epoch_us,total_bytes,max_queue_bytes,recirculations" > "$CSV"
for r in $RECIRC; do
    for w in $WORKERS; do
        echo "== $TOPOLOGY, $w workers, recirculation $r Gbit/s, switch memory ${MEM} B"
        dir="$OUT/recirc-$r/w$w"
        "$SGNN" sim --graph "$DS_GRAPH" --workers "$w" \
            "${topo[@]}" --switch-mem "${MEM}B" --feature-dim "$DS_DIM" --recirc-gbps "$r" \
            --layers 4 --compute-ms "$COMPUTE_MS" "${CC_FLAGS[@]}" --strategies "$STRATEGIES" \
            --plots none \
            --out "$dir"
        runs_columns "$dir/runs.csv" "$TOPOLOGY,$r,$w," strategy time_per_layer_us \
            time_per_epoch_us total_bytes max_queue_bytes recirculations >> "$CSV"
    done
    "$SGNN" plot --csv "$CSV" --where "recirc_gbps=$r" --x workers --y time_per_epoch_us \
        --y-div 1000 --series strategy --x-label workers --y-label "epoch time (ms)" \
        --title "Figure $FIG ($TOPOLOGY, $DATASET): epoch time, recirculation $r Gbit/s" \
        --out "$OUT/fig$FIG-recirc-$r.png"
done
cat "$CSV"
