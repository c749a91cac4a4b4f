#!/usr/bin/env bash
# The testbed (software switch, 4 sgnn-hostd over loopback UDP, the README's default graph)
# with every delivery side by side (--aggregate paper,partials,multicast,auto, plus host-based)
# at several loss rates, each cell run REPS times; prints the median ms/layer, the bytes on the
# links and the extra frames each lost frame cost, as a markdown table. Results in
# docs/benchmarks.md ("Loss: what recovery costs, by delivery").
#
#   tools/sgnn/bench/testbed-loss.sh [OUT_DIR]      (default eval/testbed-loss)
#   LOSSES="0 0.05" REPS=1 tools/sgnn/bench/testbed-loss.sh
#
# Recovery frames per lost frame = (retransmissions + NACKs + 2 x pulls + 2 x fetches + 2 x
# tail probes sent again: a request and its answer, from the workers' stats; docs/host.md,
# "Loss recovery") / frames lost (the switch's drop_simulated + fault_dropped), the
# median over the runs of the cell. At 0% it is the recovery the machine's own hiccups caused
# (fetches on a timeout with nothing lost), in frames per layer.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-eval/testbed-loss}
losses=${LOSSES:-0 0.01 0.05 0.1 0.2}
reps=${REPS:-3}
mkdir -p "$out"
cargo build --release -q -p sgnn -p sgnn-hostd -p softswitch
for loss in $losses; do
  for rep in $(seq 1 "$reps"); do
    d="$out/loss$loss-rep$rep"
    echo "loss $loss, run $rep/$reps" >&2
    target/release/sgnn testbed --aggregate paper,partials,multicast,auto --loss "$loss" \
      --timeout 60 --out "$d" > "$d.txt" 2>&1 || { echo "FAILED: see $d.txt" >&2; tail -1 "$d.txt" >&2; exit 1; }
    tail -1 "$d.txt" >&2
  done
done
python3 - "$out" $losses <<'PY'
import json, statistics, sys
out, losses = sys.argv[1], sys.argv[2:]
cells = {}
for loss in losses:
    k = 1
    while True:
        try:
            r = json.load(open(f"{out}/loss{loss}-rep{k}/report.json"))
        except FileNotFoundError:
            break
        layers = len(r["runs"][0]["round_seconds"])
        for run in r["runs"]:
            sw = run["switch"]
            lost = sw.get("drop_simulated", 0) + sw.get("fault_dropped", 0)
            rec = (run["retransmissions"] + run.get("nacks", 0) + 2 * run.get("pulls", 0)
                   + 2 * run["fetches"] + 2 * run.get("tail_probes_resent", 0))
            by = sum(run["link_bytes_up"]) + sum(run["link_bytes_down"])
            per_lost = rec / lost if lost else rec / layers
            cells.setdefault((run["mode"], loss), []).append((run["ms_per_layer"], by, per_lost))
        k += 1
modes = []
for (m, _) in cells:
    if m not in modes:
        modes.append(m)
med = statistics.median
print("| loss | " + " | ".join(modes) + " |")
print("|---|" + "---|" * len(modes))
for loss in losses:
    row = []
    for m in modes:
        c = cells[(m, loss)]
        ms, by, pl = med([x[0] for x in c]), med([x[1] for x in c]), med([x[2] for x in c])
        unit = "rec/lost" if float(loss) > 0 else "rec/layer"
        row.append(f"{ms:.1f} ms, {by / 1e6:.2f} MB, {pl:.2f} {unit}")
    print(f"| {float(loss) * 100:g}% | " + " | ".join(row) + " |")
print(f"\n(median of {len(cells[(modes[0], losses[0])])} runs per cell: ms per layer; bytes on the host links for the run's 4 rounds; recovery frames per lost frame)")
PY
