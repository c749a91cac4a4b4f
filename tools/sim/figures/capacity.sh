#!/usr/bin/env bash
# Issue 15's grid: capacity-aware delivery (switchgnn_auto, multicast, partials) against the
# host-based exchange, the paper's design (switchgnn) and the other exact strategies, over
# graphs x workers x recirculation bandwidth x switch memory, 128 features, star, 100 Gbit/s
# links, 2 us delay. Writes one `sgnn sim` directory per cell and
#   OUT/capacity.csv  graph,workers,recirc_gbps,recirc_step,mem_mb,strategy,time_per_layer_us,predicted_us,total_bytes
#   OUT/cells.csv     one row per cell: the better host-based run, the best other strategy,
#                     switchgnn_auto, auto / best other, auto's speedup over the better
#                     host-based, the prediction's error
#   OUT/speedup.csv   graph,workers,mem_mb,recirc_step,mode,speedup (over host_based)
#   OUT/speedup-w8-mem10.png, OUT/speedup-w32-mem10.png (and -mem1, -mem100): speedup over
#                     host_based against recirculation (1 = 100, 2 = 800, 3 = 2,400 Gbit/s,
#                     4 = free), one line per graph and mode
# and prints the cells where switchgnn_auto is more than 2% slower than the best other
# strategy that fits the switch memory (every one but `unlimited`, the paper's lower bound
# that ignores the memory) or the cost model is more than 10% off. host_based runs the
# daemons' rate control with the receivers echoing ECN marks; host_based_no_cc sends at line
# rate; the speedup is over the better of the two. ECN at the default threshold (100 KB).
#
#   tools/sim/figures/capacity.sh [OUT]        (default OUT: eval/capacity)
#
# Environment: SGNN, GRAPHS (space-separated name=source pairs, default the four below),
# WORKERS (default "8 32"), RECIRCS (default "100 800 2400 free"), MEMS (MB, default
# "1 10 100"), STRATEGIES (default the exact ones below), DATASETS (default ../shared/datasets).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-eval/capacity}
. tools/sim/figures/lib.sh
DATASETS=${DATASETS:-../shared/datasets}
GRAPHS=${GRAPHS:-"rmat=rmat:scale=14,edge_factor=32 ego-Facebook=$DATASETS/ego-Facebook/edges.txt.gz email-Enron=$DATASETS/email-Enron/edges.txt.gz cora=$DATASETS/cora/edges.txt.gz"}
WORKERS=${WORKERS:-"8 32"}
RECIRCS=${RECIRCS:-"100 800 2400 free"}
MEMS=${MEMS:-"1 10 100"}
STRATEGIES=${STRATEGIES:-host_based,host_based_no_cc,switchgnn,unlimited,strawman,supergcn,g3,hermod,multicast,partials,switchgnn_auto}
SGNN=$(sgnn_bin)
mkdir -p "$OUT"
csv="$OUT/capacity.csv"
echo "graph,workers,recirc_gbps,recirc_step,mem_mb,strategy,time_per_layer_us,predicted_us,total_bytes" > "$csv"
for g in $GRAPHS; do
    name=${g%%=*}
    src=${g#*=}
    case "$src" in
        rmat:*) ;;
        *) [ -f "$src" ] || { echo "SKIPPED $name: $src not found" >&2; continue; } ;;
    esac
    for w in $WORKERS; do
        for m in $MEMS; do
            step=0
            for r in $RECIRCS; do
                step=$((step + 1))
                dir="$OUT/$name-w$w-mem$m-r$r"
                echo "== $name, $w workers, $m MB, recirculation $r"
                "$SGNN" sim --graph "$src" --workers "$w" --switch-mem "${m}MB" --feature-dim 128 \
                    --recirc-gbps "$([ "$r" = free ] && echo 1000000 || echo "$r")" \
                    --strategies "$STRATEGIES" --plots none --out "$dir" > "$dir.log" 2>&1 ||
                    { cat "$dir.log" >&2; exit 1; }
                runs_columns "$dir/runs.csv" "$name,$w,$r,$step,$m," strategy time_per_layer_us \
                    predicted_us total_bytes >> "$csv"
            done
        done
    done
done

cells_csv "$csv" > "$OUT/cells.csv"

# Speedup over host_based of every in-network mode, per cell.
{
    echo "graph,workers,mem_mb,recirc_step,mode,series,speedup"
    awk -F, 'NR > 1 {
            key = $1 "," $2 "," $5 "," $4
            if (($6 == "host_based" || $6 == "host_based_no_cc") && (!(key in host) || $7 + 0 < host[key])) host[key] = $7 + 0
            else if ($6 ~ /^(switchgnn|switchgnn_auto|multicast|partials)$/) t[key SUBSEP $6] = $7
        }
        END {
            for (k in t) {
                split(k, p, SUBSEP)
                split(p[1], f, ",")
                if (t[k] > 0) printf "%s,%s,%s %s,%.4f\n", p[1], p[2], f[1], p[2], host[p[1]] / t[k]
            }
        }' "$csv" | sort -t, -k1,1 -k2,2n -k3,3n -k5,5 -k4,4n
} > "$OUT/speedup.csv"

for w in $WORKERS; do
    for m in $MEMS; do
        "$SGNN" plot --csv "$OUT/speedup.csv" --x recirc_step --y speedup --series series \
            --where "workers=$w" --where "mem_mb=$m" \
            --title "Speedup over the better host-based, $w workers, $m MB, 128 features" \
            --x-label "recirculation: 1 = 100, 2 = 800, 3 = 2,400 Gbit/s, 4 = free" \
            --y-label "host_based time / mode time" \
            --out "$OUT/speedup-w$w-mem$m.png" >/dev/null 2>&1 ||
            "$SGNN" plot --csv "$OUT/speedup.csv" --x recirc_step --y speedup --series series \
                --where "workers=$w" --where "mem_mb=$m" \
                --title "Speedup over the better host-based, $w workers, $m MB, 128 features" \
                --out "$OUT/speedup-w$w-mem$m.svg" >/dev/null
    done
done

echo "cells: $OUT/cells.csv"
column -s, -t < "$OUT/cells.csv"
echo "cells where switchgnn_auto is over 1.02x the best other strategy that fits the memory, or the model over 10% off:"
awk -F, 'NR > 1 && ($10 > 1.02 || $12 > 0.10 || $12 < -0.10)' "$OUT/cells.csv"
