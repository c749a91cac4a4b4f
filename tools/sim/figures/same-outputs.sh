#!/usr/bin/env bash
# The simulator's outputs on fixed seeds, for a before/after comparison of a change that must
# not change behaviour (issue 34's moves): the speed-target case (128 workers, R-MAT 2^18 at
# edge factor 250, 602 features, 100 MB; about 15 minutes and 6.5 GB on 2 cores) and three
# cells of the capacity grid (tools/sim/figures/capacity.sh) with every exact strategy.
# Writes OUT/<case>/{summary.txt,runs.csv,links.csv,series.csv} with the columns and lines
# that measure the machine rather than the simulation (wall time, events per second, memory)
# removed, so that two runs of the same code are byte-identical:
#
#   SGNN=/path/to/old/sgnn tools/sim/figures/same-outputs.sh /tmp/before
#   tools/sim/figures/same-outputs.sh /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# Environment: SGNN (the binary, default target/release/sgnn), CASES (default "speed grid";
# `grid` alone takes about a minute), DATASETS (default ../shared/datasets).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:?usage: same-outputs.sh OUT}
. tools/sim/figures/lib.sh
DATASETS=${DATASETS:-../shared/datasets}
CASES=${CASES:-"speed grid"}
SGNN=$(sgnn_bin)
EXACT=host_based,host_based_no_cc,switchgnn,multicast,partials,switchgnn_auto
mkdir -p "$OUT"

# strip DIR: drops the machine-dependent columns of runs.csv and the matching summary lines.
strip() {
    local dir=$1
    awk -F, -v OFS=, '
        NR == 1 { for (c = 1; c <= NF; c++) if ($c ~ /wall|per_sec|rss|_seconds$/) drop[c] = 1 }
        { line = ""; for (c = 1; c <= NF; c++) if (!drop[c]) line = line (line == "" ? "" : ",") $c; print line }
    ' "$dir/runs.csv" > "$dir/runs.tmp" && mv "$dir/runs.tmp" "$dir/runs.csv"
    # The summary's load times, planning times and its table's last column (events/s).
    sed -E -e 's/ \((graph loaded|planned) in [0-9.]+ s\)//' \
        -e '/events\/s$/,/^$/ s/ +[0-9.]+$//' -e 's/ +events\/s$//' \
        "$dir/summary.txt" > "$dir/summary.tmp"
    mv "$dir/summary.tmp" "$dir/summary.txt"
}

run() {
    local name=$1
    shift
    echo "== $name" >&2
    "$SGNN" sim "$@" --plots none --out "$OUT/$name" > /dev/null
    strip "$OUT/$name"
}

for c in $CASES; do
    case $c in
        speed)
            run speed --graph rmat:scale=18,edge_factor=250,seed=1 --workers 128 \
                --switch-mem 100MB --feature-dim 602 --recirc-gbps 12800 --strategies switchgnn ;;
        grid)
            run cora-w8 --graph "$DATASETS/cora/edges.txt.gz" --workers 8 --switch-mem 1MB \
                --recirc-gbps 800 --strategies "$EXACT"
            run enron-w8 --graph "$DATASETS/email-Enron/edges.txt.gz" --workers 8 \
                --switch-mem 10MB --recirc-gbps 100 --strategies "$EXACT"
            run rmat-w32 --graph rmat:scale=14,edge_factor=32 --workers 32 --switch-mem 10MB \
                --recirc-gbps 2400 --strategies "$EXACT" ;;
        *) echo "unknown case $c (speed or grid)" >&2; exit 2 ;;
    esac
done
