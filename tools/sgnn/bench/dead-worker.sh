#!/usr/bin/env bash
# Issue 31, item 4: how long the survivors take to name a dead worker. Runs the testbed
# (software switch, 4 sgnn-hostd over loopback UDP, the README's default graph, 8 layers so a
# run lasts long enough) N times, each time killing a random worker at a random moment of the
# run (`--kill-worker W --kill-after-ms MS`), with the default --timeout 20, and prints per run
# the time from the kill to the first survivor stopping (the testbed's `detected:` line), the
# survivor's message, and the median and maximum over the runs. Results in docs/host.md
# ("A dead worker").
#
#   tools/sgnn/bench/dead-worker.sh [OUT_DIR]     (default eval/dead-worker)
#   N=10 SEED=1 tools/sgnn/bench/dead-worker.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-eval/dead-worker}
n=${N:-10}
RANDOM=${SEED:-1}
mkdir -p "$out"
cargo build --release -q -p sgnn -p sgnn-hostd -p softswitch -p switch-ctl
: > "$out/runs.txt"
for i in $(seq 1 "$n"); do
  w=$((RANDOM % 4))
  ms=$((100 + RANDOM % 1400))
  d="$out/run$i"
  if target/release/sgnn testbed --layers 8 --no-baseline --kill-worker "$w" --kill-after-ms "$ms" \
      --out "$d" > "$d.txt" 2>&1; then
    echo "run $i: the run ended before the kill at $ms ms (not counted)" | tee -a "$out/runs.txt" >&2
    continue
  fi
  det=$(grep -o 'detected: worker [0-9]* stopped [0-9]* ms' "$d.txt" | head -1 || true)
  if [ -z "$det" ]; then
    echo "run $i: killed worker $w at $ms ms, no survivor stopped (see $d.txt)" | tee -a "$out/runs.txt" >&2
    continue
  fi
  named=$(grep -o "worker $w is not answering" "$d.txt" | head -1 || true)
  echo "run $i: killed worker $w at $ms ms; $det after the kill; ${named:-the dead worker was NOT named}" | tee -a "$out/runs.txt" >&2
done
python3 - "$out/runs.txt" <<'PY'
import re, statistics, sys
ms = [int(m.group(1)) for l in open(sys.argv[1]) for m in [re.search(r"stopped (\d+) ms after", l)] if m]
named = sum("is not answering" in l for l in open(sys.argv[1]))
if ms:
    print(f"{len(ms)} kills detected: median {statistics.median(ms):.0f} ms, max {max(ms)} ms after the kill; dead worker named in {named}")
else:
    print("no kill detected")
PY
