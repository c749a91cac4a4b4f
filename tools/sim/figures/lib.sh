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

# paper_mem_bytes MB SCALE: the paper's switch memory (MB, for Reddit's 232,965 vertices)
# scaled by the vertex count of an R-MAT graph of 2^SCALE vertices.
paper_mem_bytes() {
    awk -v m="$1" -v s="$2" 'BEGIN { printf "%.0f", m * 1e6 * 2^s / 232965 }'
}
