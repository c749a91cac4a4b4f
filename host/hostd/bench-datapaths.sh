#!/usr/bin/env bash
# Four sgnn-hostd workers and the softswitch on one machine, over each datapath, with the same
# plan and options; prints per datapath the slowest worker's time for each of the 4 rounds
# (2 forward, 2 backward; every round checked bit for bit with --verify), their mean, the
# recovery work and the frames the DPDK devices refused. Release builds; needs root
# (namespaces, AF_PACKET) and DPDK (default features).
#
#   cargo build --release -p sgnn-hostd -p softswitch -p switch-ctl
#   sudo host/hostd/bench-datapaths.sh [GRAPH] [SWITCH_MEM] [EXTRA HOSTD ARGS...]
#
# Defaults: rmat:scale=11,edge_factor=8 and 64KB; the daemons' own rate defaults (start at
# 1000 Mbit/s, at most 10000) unless EXTRA says otherwise. MEMIF_OPTS=",rsize=12" appends
# options to the daemons' memif vdevs.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=target/release
GRAPH=${1:-rmat:scale=11,edge_factor=8}
MEM=${2:-64KB}
shift 2 2>/dev/null || shift $#
EXTRA=("$@")
W=4
T=$(mktemp -d /tmp/sgnn-bench.XXXXXX)
P=bx$$
cleanup() {
    for k in $(jobs -p); do kill "$k" 2>/dev/null || true; done
    ip netns del "${P}sw" 2>/dev/null || true
    for w in $(seq 0 $((W - 1))); do ip netns del "${P}h$w" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
"$BIN/switch-ctl" plan --graph "$GRAPH" --workers $W --switch-mem "$MEM" --feature-dim 64 --out "$T/plan" >/dev/null
EAL=(--no-huge -m 256 --no-pci --no-shconf --no-telemetry --log-level=lib.eal:warning)
HOSTD=(--layers 2 --seed 5 --verify --timeout 120 "${EXTRA[@]}")

netns() {
    ip netns add "${P}sw"
    for w in $(seq 0 $((W - 1))); do
        ip netns add "${P}h$w"
        ip link add "${P}s$w" type veth peer name "${P}h$w"
        ip link set "${P}s$w" netns "${P}sw"
        ip link set "${P}h$w" netns "${P}h$w"
        ip netns exec "${P}sw" sysctl -qw "net.ipv6.conf.${P}s$w.disable_ipv6=1"
        ip netns exec "${P}h$w" sysctl -qw "net.ipv6.conf.${P}h$w.disable_ipv6=1"
        ip -n "${P}sw" link set "${P}s$w" up
        ip -n "${P}h$w" link set "${P}h$w" up
    done
}

summary() { # $1 = label
    python3 - "$T" "$1" <<'EOF'
import json, sys
t, label = sys.argv[1], sys.argv[2]
ws = [json.load(open(f"{t}/w{w}.json")) for w in range(4)]
assert all(w["ok"] for w in ws), label
rounds = [max(w["stats"]["rounds"][r]["seconds"] for w in ws) for r in range(4)]
tot = lambda k: sum(w["stats"].get(k, 0) for w in ws)
sw = {}
for line in open(f"{t}/switch.log"):
    if line.startswith("counters: "):
        sw = json.loads(line[len("counters: "):])
sw_drop = sum(v for k, v in sw.get("datapath", {}).items() if k.endswith("tx_dropped"))
w_drop = sum(w["datapath"].get("tx_dropped", 0) for w in ws)
print(f"{label:37s} round ms {' '.join(f'{x*1e3:6.1f}' for x in rounds)}"
      f"  mean {sum(rounds)/4*1e3:6.1f}  fetches {tot('fetches_sent'):5d}"
      f"  retx {tot('retransmissions'):4d}  tx_dropped hosts/switch {w_drop}/{sw_drop}"
      f"  switch tx_errors {sw.get('tx_errors', 0)}")
EOF
}

run() { # $1 label, $2 switch command (stdin: closed to stop it), $3 worker command ($w)
    rm -f "$T"/w*.json
    exec 3> >(eval "$2" >"$T/switch.log" 2>&1)
    sleep 1
    local pids=()
    for w in $(seq 0 $((W - 1))); do
        eval "$3" >"$T/w$w.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || echo "a worker failed: $(cat "$T"/w*.log | grep error)"; done
    exec 3>&-
    sleep 1
    summary "$1"
}

# UDP on loopback
ports=(); for w in $(seq 0 $((W - 1))); do ports+=(--worker 127.0.0.1:$((39100 + w))); done
run "udp (loopback)" \
    "$BIN/softswitch --plan $T/plan --listen 127.0.0.1:39000 ${ports[*]}" \
    "$BIN/sgnn-hostd --plan $T/plan --worker-id \$w --switch 127.0.0.1:39000 --bind 127.0.0.1:\$((39100 + w)) ${HOSTD[*]} --stats-json $T/w\$w.json"

# DPDK memif, both sides
vd=(); for w in $(seq 0 $((W - 1))); do vd+=(--vdev=net_memif$w,role=server,socket=$T/m$w.sock,socket-abstract=no); done
run "dpdk memif (switch on dpdk)" \
    "$BIN/softswitch --plan $T/plan --dpdk -- ${EAL[*]} --file-prefix ${P}s ${vd[*]}" \
    "$BIN/sgnn-hostd --plan $T/plan --worker-id \$w --datapath dpdk ${HOSTD[*]} --stats-json $T/w\$w.json -- ${EAL[*]} --file-prefix ${P}w\$w --vdev=net_memif0,role=client,socket=$T/m\$w.sock,socket-abstract=no${MEMIF_OPTS:-}"

# Veths between namespaces
netns
ifs=(); for w in $(seq 0 $((W - 1))); do ifs+=(--iface ${P}s$w); done
run "af_packet (switch on af_packet)" \
    "ip netns exec ${P}sw $BIN/softswitch --plan $T/plan ${ifs[*]}" \
    "ip netns exec ${P}h\$w $BIN/sgnn-hostd --plan $T/plan --worker-id \$w --datapath af-packet --iface ${P}h\$w ${HOSTD[*]} --stats-json $T/w\$w.json"
run "dpdk af_packet (switch on af_packet)" \
    "ip netns exec ${P}sw $BIN/softswitch --plan $T/plan ${ifs[*]}" \
    "ip netns exec ${P}h\$w $BIN/sgnn-hostd --plan $T/plan --worker-id \$w --datapath dpdk ${HOSTD[*]} --stats-json $T/w\$w.json -- ${EAL[*]} --file-prefix ${P}w\$w --vdev=net_af_packet0,iface=${P}h\$w"
