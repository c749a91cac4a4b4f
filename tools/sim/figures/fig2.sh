#!/usr/bin/env bash
# Figure 2 of the SwitchGNN paper (ATC '25), scaled to this machine: the strawman with limited
# switch memory against unlimited memory (Straw-UL), the full-graph host-based exchange and
# SwitchGNN, on a Reddit-like R-MAT graph with 128 workers and a 10 GB buffer per port (so
# nothing drops, as in the paper). Writes one `sgnn sim` output directory per recirculation
# bandwidth (runs.csv, series.csv and the queue / aggregators / throughput / traffic plots).
#
#   tools/sim/figures/fig2.sh [OUT]        (default OUT: eval/fig2)
#
# Environment: SGNN (the sgnn binary; default target/release/sgnn, built if missing),
# SCALE (log2 vertices, default 13), RECIRC (recirculation bandwidths in Gbit/s, default
# "100 12800"). Reddit has 232,965 vertices, 114.6 M edges (average degree ~490) and 602
# features; the paper gives the switch 100 MB. Here the graph is R-MAT with 2^SCALE vertices
# and edge factor 245 (~490 before deduplication; 209 after it at SCALE 13, where R-MAT's skew
# draws many edges twice), 602 features, and the memory
# is scaled by the vertex count: 100 MB x 2^SCALE / 232,965 (3.5 MB at SCALE 13).
# GRAPH (any graph source, e.g. a dataset's edges.txt.gz) replaces the R-MAT graph; VERTICES
# (its vertex count) then scales the memory the same way.
# docs/evaluation.md has the results and how they differ from the paper's.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/fig2}
SCALE=${SCALE:-13}
RECIRC=${RECIRC:-"100 12800"}
. tools/sim/figures/lib.sh
SGNN=$(sgnn_bin)
GRAPH=${GRAPH:-"rmat:scale=$SCALE,edge_factor=245,seed=1"}
if [ -n "${VERTICES:-}" ]; then
    MEM=$(awk -v n="$VERTICES" 'BEGIN { printf "%.0fB", 100e6 * n / 232965 }')
else
    MEM="$(paper_mem_bytes 100 "$SCALE")B"
fi
for r in $RECIRC; do
    echo "== recirculation $r Gbit/s, switch memory $MEM"
    "$SGNN" sim --graph "$GRAPH" --workers 128 \
        --switch-mem "$MEM" --feature-dim 602 --buffer 10GB --recirc-gbps "$r" \
        --strategies host_based,strawman,unlimited,switchgnn --out "$OUT/recirc-$r"
done
