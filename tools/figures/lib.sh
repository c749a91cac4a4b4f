# Helpers for the `extract` column of docs/figures.tsv (sourced by tools/figures/check.sh).
# Every extract runs in its command's output directory ($OUT) and prints one number.

# csv FILE COL [KEY=VALUE ...]: the column COL of the first row of the CSV FILE (header
# line first) whose columns KEY equal VALUE.
csv() {
    local file=$1 col=$2
    shift 2
    awk -F, -v col="$col" -v conds="$*" '
        NR == 1 {
            for (c = 1; c <= NF; c++) idx[$c] = c
            if (!(col in idx)) { print FILENAME ": no column " col > "/dev/stderr"; exit 2 }
            n = split(conds, cs, " ")
            for (i = 1; i <= n; i++) {
                split(cs[i], kv, "=")
                if (!(kv[1] in idx)) { print FILENAME ": no column " kv[1] > "/dev/stderr"; exit 2 }
                key[i] = idx[kv[1]]; val[i] = substr(cs[i], length(kv[1]) + 2)
            }
            next
        }
        {
            for (i = 1; i <= n; i++) if ($key[i] != val[i]) next
            print $idx[col]; found = 1; exit
        }
        END { if (!found && NR > 0) exit 1 }' "$file"
}

# json FILE EXPR: a Python expression over the parsed JSON FILE (named `r`).
json() {
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# ratio A B: A / B.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) exit 1; printf "%.4f\n", a / b }'
}

# match FILE REGEX: the first group of the first line of FILE that matches the extended
# regular expression REGEX (which must match the whole line and hold one group).
match() {
    python3 -c 'import re, sys
for line in open(sys.argv[1]):
    m = re.fullmatch(sys.argv[2], line.rstrip("\n"))
    if m:
        print(m.group(1).replace(",", ""))
        break' "$1" "$2"
}

# table FILE ROW COL: the cell of a markdown table (as the bench scripts print) in the row
# whose first columns start with ROW ("| 100 KB | planned") and in column COL (1 = first
# cell); the first number of the cell.
table() {
    awk -F'|' -v row="$2" -v col="$3" 'index($0, row) == 1 { print $(col + 1); exit }' "$1" |
        grep -oE '[-0-9.,]+' | head -1 | tr -d ,
}

# testbed FILE MODE bytes|ms: from a testbed report.json, the MB on the host links (up and
# down, the report's "link bytes") or the ms per layer of the run of MODE (switchgnn,
# switchgnn-auto, host-based, ...).
testbed() {
    python3 - "$@" <<'PY'
import json, sys
f, mode, what = sys.argv[1:4]
r = json.load(open(f))
runs = [x for x in r["runs"] if x["mode"] == mode]
if not runs:
    sys.exit(f"{f}: no run of mode {mode}")
x = runs[0]
print((sum(x["link_bytes_up"]) + sum(x["link_bytes_down"])) / 1e6 if what == "bytes" else x["ms_per_layer"])
PY
}

# median N...: the median of the numbers.
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
