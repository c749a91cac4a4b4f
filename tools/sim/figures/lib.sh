# Shared by the figure scripts (source it): column selection by name from `sgnn sim`'s
# runs.csv, so the scripts keep working when runs.csv gains columns.

# runs_columns FILE PREFIX COL...: prints, for every data row of the runs.csv FILE, PREFIX
# (already comma-terminated, or empty) followed by the named columns joined by commas. An
# unknown column name stops the script with the list of columns FILE has.
runs_columns() {
    local file=$1 prefix=$2
    shift 2
    awk -F, -v prefix="$prefix" -v want="$*" '
        NR == 1 {
            n = split(want, names, " ")
            for (i = 1; i <= n; i++) {
                idx[i] = 0
                for (c = 1; c <= NF; c++) if ($c == names[i]) idx[i] = c
                if (!idx[i]) {
                    print FILENAME ": no column " names[i] "; columns: " $0 > "/dev/stderr"
                    exit 2
                }
            }
            next
        }
        {
            line = prefix
            for (i = 1; i <= n; i++) line = line (i > 1 ? "," : "") $idx[i]
            print line
        }' "$file"
}

# sgnn_bin: the sgnn binary to use ($SGNN, else target/release/sgnn, built if missing).
sgnn_bin() {
    SGNN=${SGNN:-target/release/sgnn}
    if [ ! -x "$SGNN" ]; then
        cargo build --release -p sgnn >&2
    fi
    echo "$SGNN"
}

# paper_mem_bytes MB SCALE [VERTICES]: the paper's switch memory (MB, for a dataset of
# VERTICES vertices, default Reddit's 232,965) scaled by the vertex count of an R-MAT graph
# of 2^SCALE vertices.
paper_mem_bytes() {
    awk -v m="$1" -v s="$2" -v n="${3:-232965}" 'BEGIN { printf "%.0f", m * 1e6 * 2^s / n }'
}

# dataset_params NAME SCALE: the R-MAT stand-in of one of the paper's datasets at 2^SCALE
# vertices. Sets DS_GRAPH (the graph source), DS_DIM (feature length) and DS_VERTICES (the
# real dataset's vertex count, to scale the switch memory with paper_mem_bytes). The edge
# factors give the real average degree after deduplication at SCALE 13 (measured with
# `sgnn dataset info`); at other scales the degree differs, see docs/evaluation.md.
#   reddit:   232,965 vertices, 114.6 M edges, degree ~490, 602 features -> edge factor 245
#             (degree 209 at SCALE 13: R-MAT's skew draws many edges twice)
#   products: ogbn-products, 2,449,029 vertices, 61.86 M edges, degree 50.5, 100 features
#             -> edge factor 37 (degree 50.3)
#   yelp:     716,847 vertices, 6.98 M edges, degree 19.5, 300 features -> edge factor 12
#             (degree 19.4)
dataset_params() {
    local ef
    case "$1" in
        reddit) ef=245 DS_DIM=602 DS_VERTICES=232965 ;;
        products) ef=37 DS_DIM=100 DS_VERTICES=2449029 ;;
        yelp) ef=12 DS_DIM=300 DS_VERTICES=716847 ;;
        *)
            echo "unknown DATASET $1: use reddit, products or yelp" >&2
            exit 2
            ;;
    esac
    DS_GRAPH="rmat:scale=$2,edge_factor=$ef,seed=1"
}

# The congestion control of the figures (fig15.sh, fig16.sh, fig19.sh): a DCQCN-like law for
# SwitchGNN's hosts and, with --background-cc on, for the background flows. The parameters
# are DCQCN's (Zhu et al., SIGCOMM 2015) scaled to 100 Gbit/s links:
# - rate-increase timer 55 us and 5 fast-recovery steps, as in DCQCN;
# - additive increase R_AI = 40 Mbit/s at 40 Gbit/s in DCQCN, scaled with the link rate to
#   100 Mbit/s at 100 Gbit/s (the same fraction of the line rate per step; the daemon's
#   default, 50 Mbit/s per 1 ms, is 18 times slower per unit of time, and is sized for its
#   1-10 Gbit/s software switch);
# - at most one halving per 50 us: DCQCN's notification point sends at most one CNP per
#   flow per 50 us and its reaction point cuts on each; SwitchGNN's hosts react to marked
#   Results directly, so 50 us is their equivalent (the daemon's default is 200 us).
# The cut itself is a halving (DCQCN's cut with alpha = 1, its initial value; alpha is not
# modelled). Override with CC_INTERVAL_US, CC_INCREASE_GBPS, CC_FAST_RECOVERY, CC_DECREASE_US.
CC_FLAGS=(--cc-increase-interval-us "${CC_INTERVAL_US:-55}"
    --cc-increase-gbps "${CC_INCREASE_GBPS:-0.1}"
    --cc-fast-recovery "${CC_FAST_RECOVERY:-5}"
    --cc-decrease-interval-us "${CC_DECREASE_US:-50}")

# cells_csv CSV: one row per cell of a grid's CSV (graph,workers,recirc_gbps,recirc_step,mem_mb,
# strategy,time_per_layer_us,predicted_us,...): the better of host_based and host_based_no_cc,
# the best strategy other than switchgnn_auto that fits the switch (every one but unlimited),
# auto, auto / best other, auto's speedup over the better host-based, the prediction's error,
# and the best other strategy the real code runs (the daemons and the switch's pipeline:
# host_based, host_based_no_cc, switchgnn, multicast, partials) with auto / it. The others
# (strawman, supergcn, g3, hermod) are the simulator's models: no block synchronisation, no
# tail probes, no rate control.
cells_csv() {
    awk -F, 'NR > 1 {
            key = $1 "," $2 "," $3 "," $4 "," $5
            if (!(key in seen)) { seen[key] = 1; order[++n] = key }
            t = $7 + 0
            if ($6 == "host_based" || $6 == "host_based_no_cc")
                if (!(key in host) || t < host[key]) host[key] = t
            real = ($6 ~ /^(host_based|host_based_no_cc|switchgnn|multicast|partials)$/)
            if ($6 == "switchgnn_auto") { auto[key] = t; pred[key] = $8 + 0 }
            else if ($6 != "unlimited") {
                if (!(key in best) || t < best[key]) { best[key] = t; bestname[key] = $6 }
                if (real && (!(key in breal) || t < breal[key])) { breal[key] = t; brealname[key] = $6 }
            }
        }
        END {
            print "graph,workers,recirc_gbps,recirc_step,mem_mb,host_based_us,best_other,best_other_us,auto_us,auto_vs_best,auto_speedup,prediction_error,best_real,best_real_us,auto_vs_real"
            for (i = 1; i <= n; i++) {
                k = order[i]
                printf "%s,%.3f,%s,%.3f,%.3f,%.4f,%.3f,%.4f,%s,%.3f,%.4f\n", k, host[k], bestname[k], best[k], auto[k],
                    auto[k] / best[k], host[k] / auto[k], (pred[k] - auto[k]) / auto[k], brealname[k], breal[k], auto[k] / breal[k]
            }
        }' "$1"
}
