#!/usr/bin/env bash
# Do the figures the docs quote still hold? Re-runs the figure sources of docs/figures.tsv
# (each distinct command once), extracts each figure from the output, and prints
#
#   id | doc | quoted | now | moved?
#
# and a last line with the number of figures that moved by more than their noise. Exit status
# 0 when none moved, 1 when one moved or could not be measured, 2 on a usage error.
#
#   tools/figures/check.sh                 the quick figures (a few minutes on 2 cores)
#   tools/figures/check.sh --all           every figure, the long sweeps too (hours)
#   tools/figures/check.sh --only ID,...   these figures (and nothing else), quick or long
#   tools/figures/check.sh --list          the registry, no run
#
# The commands run from a snapshot of the repository, so edits in the working tree (or other
# people's) neither rebuild nor change the binaries under a run: a git worktree of REV
# (default HEAD) at $FIGS_SRC, built once in release mode into $FIGS_TARGET, re-created when
# REV has moved. Its target/ points at $FIGS_TARGET, and a `cargo` on PATH that ignores
# `build` keeps the bench scripts (which build first) from rebuilding.
#
# Options: --rev REV (snapshot another commit), --no-build (use $FIGS_SRC and $FIGS_TARGET
# as they are). Environment: FIGS_SRC (default /tmp/figs-src), FIGS_TARGET (default
# /tmp/figs-target), FIGS_OUT (the outputs, default eval/figures/<UTC time> in this checkout),
# DATASETS (default ../shared/datasets beside this checkout).
#
# The registry, docs/figures.tsv: one figure a line, tab-separated,
#   id  doc  quoted  noise  speed  command  extract
# `quoted` is the number the doc states; `noise` how far a re-run may land from it and still
# count as the same figure ("5%" relative, or an absolute number); `speed` quick or long;
# `command` a shell command run in the snapshot's root with $OUT (its own output directory),
# $SGNN, $SGNN_HOSTD, $SGNN_SOFTSWITCH, $SWITCH_CTL and $DATASETS set (identical commands run
# once and share $OUT); `extract` a shell command run in $OUT that prints the figure, with the
# helpers of tools/figures/lib.sh (csv, json, ratio, match, table). docs/benchmarks.md,
# "Checking the quoted figures", says how to add one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
registry=$repo/docs/figures.tsv

all=0 only= list=0 build=1 rev=HEAD
while [ $# -gt 0 ]; do
    case $1 in
        --all) all=1 ;;
        --only) only=${2:?--only needs IDs}; shift ;;
        --list) list=1 ;;
        --no-build) build=0 ;;
        --rev) rev=${2:?--rev needs a commit}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1 (--all, --only IDS, --list, --no-build, --rev REV)" >&2; exit 2 ;;
    esac
    shift
done

# The registry's rows: skip comments and the header.
rows() { grep -v '^#' "$registry" | awk -F'\t' 'NR > 1 && NF >= 7'; }
selected() {
    local id=$1 speed=$2
    if [ -n "$only" ]; then
        case ",$only," in *",$id,"*) return 0 ;; *) return 1 ;; esac
    fi
    [ "$all" = 1 ] || [ "$speed" = quick ]
}

if [ "$list" = 1 ]; then
    rows | awk -F'\t' '{ c = $6; if (length(c) > 70) c = substr(c, 1, 67) "..."
        printf "%-31s %-6s %-19s %9s  %s\n", $1, $5, $2, $3, c }'
    exit 0
fi

# Validate --only.
if [ -n "$only" ]; then
    for id in ${only//,/ }; do
        rows | cut -f1 | grep -qxF "$id" || { echo "no figure $id in $registry" >&2; exit 2; }
    done
fi

# --- the snapshot --------------------------------------------------------------------------
SRC=${FIGS_SRC:-/tmp/figs-src}
TARGET=${FIGS_TARGET:-/tmp/figs-target}
if [ "$build" = 1 ]; then
    want=$(git -C "$repo" rev-parse --verify "$rev^{commit}")
    if [ -e "$SRC" ]; then
        have=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo none)
        if [ "$have" != "$want" ]; then
            # Only ever remove a worktree of this repository.
            if git -C "$repo" worktree list --porcelain | grep -qxF "worktree $SRC"; then
                git -C "$repo" worktree remove --force "$SRC"
            else
                echo "$SRC exists and is not a worktree of $repo: set FIGS_SRC" >&2
                exit 2
            fi
        fi
    fi
    if [ ! -e "$SRC" ]; then
        git -C "$repo" worktree add --detach "$SRC" "$want" >&2
    fi
    echo "building the snapshot $(git -C "$SRC" log -1 --format='%h %cs') into $TARGET ..." >&2
    (cd "$SRC" && CARGO_TARGET_DIR=$TARGET cargo build --release -q \
        -p sgnn -p sgnn-hostd -p softswitch -p switch-ctl) >&2
fi
[ -d "$SRC" ] && [ -x "$TARGET/release/sgnn" ] || { echo "no snapshot at $SRC / $TARGET" >&2; exit 2; }
[ -e "$SRC/target" ] || ln -s "$TARGET" "$SRC/target"
commit=$(git -C "$SRC" log -1 --format='%h')

stamp=$(date -u +%Y-%m-%dT%H%MZ)
OUTROOT=${FIGS_OUT:-$repo/eval/figures/$stamp}
mkdir -p "$OUTROOT/.bin"
OUTROOT=$(cd "$OUTROOT" && pwd)
realcargo=$(command -v cargo || echo cargo)
cat > "$OUTROOT/.bin/cargo" <<EOF
#!/bin/sh
# The figures' snapshot is built already: \`cargo build\` does nothing.
[ "\$1" = build ] && exit 0
exec "$realcargo" "\$@"
EOF
chmod +x "$OUTROOT/.bin/cargo"

export SGNN=$TARGET/release/sgnn SGNN_HOSTD=$TARGET/release/sgnn-hostd
export SGNN_SOFTSWITCH=$TARGET/release/softswitch SWITCH_CTL=$TARGET/release/switch-ctl
export DATASETS=${DATASETS:-$(cd "$repo/.." && pwd)/shared/datasets}
export PATH=$OUTROOT/.bin:$PATH

# --- run each distinct command once ----------------------------------------------------------
declare -A outdir=() status=()
cmds=()
while IFS=$'\t' read -r id doc quoted noise speed command extract; do
    selected "$id" "$speed" || continue
    if [ -z "${outdir[$command]+x}" ]; then
        outdir[$command]=$OUTROOT/run${#cmds[@]}
        cmds+=("$command")
    fi
done < <(rows)

echo "snapshot $commit, $(date -u '+%Y-%m-%d %H:%M UTC'), ${#cmds[@]} commands, outputs in $OUTROOT" >&2
start_all=$SECONDS
i=0
for command in "${cmds[@]}"; do
    i=$((i + 1))
    d=${outdir[$command]}
    mkdir -p "$d"
    printf '%s\n' "$command" > "$d.cmd"
    echo "[$i/${#cmds[@]}] $command" >&2
    t0=$SECONDS
    if (cd "$SRC" && OUT=$d bash -c "$command") > "$d.log" 2>&1; then
        status[$command]=ok
    else
        status[$command]=failed
        echo "    FAILED (exit $?): $d.log" >&2
        tail -3 "$d.log" | sed 's/^/    /' >&2
    fi
    echo "    $((SECONDS - t0)) s" >&2
done

# --- compare --------------------------------------------------------------------------------
moved=0 checked=0 skipped=0 failed=0
report=$OUTROOT/check.tsv
printf 'id\tdoc\tquoted\tnow\tmoved?\n' > "$report"
while IFS=$'\t' read -r id doc quoted noise speed command extract; do
    if ! selected "$id" "$speed"; then
        [ -z "$only" ] || continue
        printf '%s\t%s\t%s\t-\tnot run (%s; --all or --only runs it)\n' "$id" "$doc" "$quoted" "$speed" >> "$report"
        skipped=$((skipped + 1))
        continue
    fi
    d=${outdir[$command]}
    now=
    if [ "${status[$command]}" = ok ]; then
        now=$(cd "$d" && OUT=$d bash -c ". '$here/lib.sh'; $extract" 2>>"$d.extract.log" | tail -1) || now=
    fi
    if ! [[ $now =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; then
        printf '%s\t%s\t%s\t?\tFAILED (%s)\n' "$id" "$doc" "$quoted" \
            "$([ "${status[$command]}" = ok ] && echo "no value: $d.extract.log" || echo "command failed: $d.log")" >> "$report"
        failed=$((failed + 1))
        continue
    fi
    checked=$((checked + 1))
    verdict=$(awk -v q="$quoted" -v n="$now" -v tol="$noise" 'BEGIN {
        t = tol; if (t ~ /%$/) { sub(/%$/, "", t); t = t / 100 * (q < 0 ? -q : q) }
        d = n - q; if (d < 0) d = -d
        rel = (q != 0) ? sprintf(" (%+.1f%%)", (n - q) / (q < 0 ? -q : q) * 100) : ""
        if (d > t + 1e-12) printf "MOVED%s, noise %s", rel, tol; else printf "no%s", rel }')
    case $verdict in MOVED*) moved=$((moved + 1)) ;; esac
    now=$(awk -v n="$now" 'BEGIN { printf (n == int(n) ? "%d" : "%.4g"), n }')
    printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$doc" "$quoted" "$now" "$verdict" >> "$report"
done < <(rows)

echo
echo "figures of docs/figures.tsv, snapshot $commit ($(git -C "$SRC" log -1 --format=%cs)), checked $(date -u '+%Y-%m-%d %H:%M UTC'), $((SECONDS - start_all)) s"
column -t -s $'\t' -o ' | ' "$report"
echo "$moved of $checked figures moved by more than their noise; $failed could not be measured; $skipped not run"
[ "$moved" = 0 ] && [ "$failed" = 0 ]
