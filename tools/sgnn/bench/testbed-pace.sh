#!/usr/bin/env bash
# Issue 30 on real processes: the testbed (software switch, 4 sgnn-hostd over loopback UDP, the
# README's default graph) with the switch's ports shaped to RATE Mbit/s and ECN marking at ECN
# bytes of queue (`sgnn testbed --port-rate --ecn-threshold`), auto and host-based in the same
# run, with planned pacing and without (`--pace planned|off`), each REPS times. Prints the
# median ms per round of each, the marks, congestion notifications and rate halvings, and
# the cost model's prediction for the same links (`switch-ctl plan --link-gbps RATE/1000
# --recirc-gbps free`: the software switch recirculates in software). Results in
# docs/evaluation.md ("Congestion control that knows the plan").
#
#   tools/sgnn/bench/testbed-pace.sh [OUT_DIR]      (default eval/testbed-pace)
#   RATE=100 ECN=100000 REPS=3 tools/sgnn/bench/testbed-pace.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-eval/testbed-pace}
rate=${RATE:-100}
ecn=${ECN:-100000}
reps=${REPS:-3}
mkdir -p "$out"
cargo build --release -q -p sgnn -p sgnn-hostd -p softswitch -p switch-ctl
target/release/switch-ctl plan --graph rmat:scale=12,edge_factor=8,seed=1 --workers 4 \
  --feature-dim 64 --switch-mem 4MB --link-gbps "$(awk -v r="$rate" 'BEGIN { print r / 1000 }')" \
  --recirc-gbps free --delay-us 20 --out "$out/plan" > "$out/plan.txt" 2>&1
for pace in planned off; do
  for rep in $(seq 1 "$reps"); do
    d="$out/$pace-rep$rep"
    echo "pace $pace, run $rep/$reps" >&2
    target/release/sgnn testbed --aggregate auto --port-rate "$rate" --ecn-threshold "$ecn" \
      --pace "$pace" --timeout 60 --out "$d" > "$d.txt" 2>&1 || { echo "FAILED: see $d.txt" >&2; tail -3 "$d.txt" >&2; exit 1; }
    tail -1 "$d.txt" >&2
  done
done
python3 - "$out" "$reps" "$rate" "$ecn" <<'PY'
import json, re, statistics, sys
out, reps, rate, ecn = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
pred = {}
for line in open(f"{out}/plan.txt"):
    m = re.match(r"^(host_based|auto)\s+([0-9.]+)(us|ms)", line)
    if m:
        pred[m.group(1)] = float(m.group(2)) / (1000 if m.group(3) == "us" else 1)
print(f"ports {rate} Mbit/s, ECN at {ecn} B; medians of {reps} runs; ms per round")
print("| pace | mode | ms/round | predicted | ECN marks (switch) | CNPs sent | halvings |")
print("|---|---|---|---|---|---|---|")
for pace in ("planned", "off"):
    rows = {}
    for k in range(1, reps + 1):
        r = json.load(open(f"{out}/{pace}-rep{k}/report.json"))
        for run in r["runs"]:
            mode = run["mode"]
            stats = [json.load(open(f"{out}/{pace}-rep{k}/{mode}/w{w}.json"))["stats"] for w in range(4)]
            rows.setdefault(mode, []).append((
                run["ms_per_layer"],
                run["switch"].get("egress_ecn_marked", 0),
                sum(s.get("cnps_sent", 0) for s in stats),
                sum(s.get("rate_decreases", 0) for s in stats),
            ))
    for mode, v in rows.items():
        med = [statistics.median(x[i] for x in v) for i in range(4)]
        p = pred.get("auto" if "auto" in mode else "host_based")
        ps = f"{p:.1f}" if p is not None else "-"
        print(f"| {pace} | {mode} | {med[0]:.1f} | {ps} | {med[1]:.0f} | {med[2]:.0f} | {med[3]:.0f} |")
PY
