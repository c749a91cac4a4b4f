#!/usr/bin/env python3
"""Runs the SwitchGNN P4 program on bmv2 simple_switch and compares it with a Python model
of softswitch::Pipeline as docs/switch-interface.md specifies it: every emitted frame byte
for byte (per input frame), then every counter and the registers the run touched.

Needs root (it creates veth pairs p4t0..p4t3 <-> p4t0h..p4t3h, or <prefix>0.. with
--veth-prefix, and removes them again), the toolchain on PATH (`. /opt/p4/env.sh`) and a
compiled program:

    p4c --target bmv2 --arch v1model -o /tmp/p4work p4/v1model/switchgnn.p4
    python3 p4/tools/bmv2_check.py --json /tmp/p4work/switchgnn.json            # all
    python3 p4/tools/bmv2_check.py --json /tmp/p4work/switchgnn.json ecn random

Worker w (0..2) is on port w with MAC 02:00:00:00:00:0w and IP 10.1.0.w; a plain host
10.9.0.3 is on port 3; clone session 100 goes to port 64 (no interface needed). The
settings are the default action of the keyless table switch_config, written with
`table_set_default switch_config set_config ...`. The switch runs with --priority-queues 8
and its log goes to <json dir>/bmv2_check.log.

The model is the tests' own reading of the contract, checked against the Rust pipeline; it
does not model drop_prob (random) and assumes empty queues except in the ECN scenario.
"""
import argparse
import os
import random
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import time

THRIFT_PORT = 9191
VETH = "p4t"          # veth pairs VETH0..3 (switch side) <-> VETH0h..3h (host side)
P4_PYTHON = os.environ.get("P4_PYTHON", "/opt/p4/venv/bin/python")
SWITCH_MAC = bytes([2, 0, 0, 0, 0xff, 0xfe])
SWITCH_IP = bytes([10, 0, 0, 254])
PLAIN_HOST = bytes([10, 9, 0, 3])
RECIRC_PORT = 64
# switch_config's initial default action: set_config(0, 1, 4294967295, 0, 0,
# 02:00:00:00:ff:fe, 10.0.0.254, 0) (plan_tag 0: no plan loaded)
INITIAL_CONFIG = dict(workers=0, blocks_per_round=1, ecn_threshold=0xffffffff, drop_every=0,
                      drop_prob=0, mac=SWITCH_MAC, ip=SWITCH_IP, plan_tag=0)
DATA, RESULT, ACK, FETCH, BYPASS, BLOCK_DONE, BLOCK_ADVANCE = range(7)
LANES_TYPES = (DATA, RESULT, BYPASS)
EVENTS = ["rx", "tx", "data", "aggregated", "results", "recirculated", "bypassed",
          "delivered", "reclaimed", "forwarded", "block_done", "block_done_duplicate",
          "block_done_stale", "block_advance", "ecn_marked", "drop_simulated",
          "drop_not_ipv4", "drop_no_route", "drop_malformed", "drop_unexpected",
          "drop_stale", "drop_no_entry", "drop_bad_index", "drop_unknown_worker",
          "saturated", "drop_duplicate"]
SEEN_CELLS = 262144
SEEN_VALID = 1 << 32


# ---------------------------------------------------------------- frames (as sgnn_wire emits them)

def worker_mac(w):
    return bytes([2, 0, 0, 0, w >> 8, w & 255])


def worker_ip(w):
    return bytes([10, 1, w >> 8, w & 255])


def checksum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def ipv4(src, dst, payload_len, proto=253, dscp=0, ecn=0, ident=0, flags_off=0x4000,
         ttl=64, ver_ihl=0x45, total=None, csum=None):
    total = 20 + payload_len if total is None else total
    h = bytearray(struct.pack("!BBHHHBBH4s4s", ver_ihl, (dscp << 2) | ecn, total, ident,
                              flags_off, ttl, proto, 0, bytes(src), bytes(dst)))
    h[10:12] = struct.pack("!H", checksum(bytes(h)) if csum is None else csum)
    return bytes(h)


def sgnn(t, worker=0, src=0, dst=0, block=0, count=0, rnd=0, segment=0, pas=0, frac=0,
         ecn=0, resend=0, ack=None, fetch=None, rsvd_flags=0, reserved=0, version=1):
    ack = int(t == ACK) if ack is None else ack
    fetch = int(t == FETCH) if fetch is None else fetch
    flags = (ack << 7) | (fetch << 6) | (ecn << 5) | (resend << 4) | rsvd_flags
    return struct.pack("!BBHIIHHHHBBH", (version << 4) | t, flags, worker, src, dst, block,
                       count, rnd, segment, pas, frac, reserved)


def lanes(vals):
    return struct.pack("!32i", *vals)


def frame(eth_dst, eth_src, ip_src, ip_dst, payload, dscp=0, ecn=0, ident=0, ttl=64, **ipkw):
    return (bytes(eth_dst) + bytes(eth_src) + b"\x08\x00" +
            ipv4(ip_src, ip_dst, len(payload), dscp=dscp, ecn=ecn, ident=ident, ttl=ttl,
                 **ipkw) + payload)


def from_worker(w, t, vals=None, dscp=0, dst_ip=SWITCH_IP, **kw):
    """A frame worker w sends (to the switch unless dst_ip says otherwise)."""
    payload = sgnn(t, **kw) + (lanes(vals) if vals is not None else b"")
    return frame(SWITCH_MAC, worker_mac(w), worker_ip(w), dst_ip, payload, dscp=dscp)


def with_checksum(f):
    f = bytearray(f)
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", checksum(bytes(f[14:34])))
    return bytes(f)


def parse(f):
    """(Ethernet bytes, IPv4 fields, SwitchGNN fields, lanes) of a frame."""
    ip = struct.unpack("!BBHHHBBH4s4s", f[14:34])
    s = struct.unpack("!BBHIIHHHHBBH", f[34:58])
    d = dict(version=s[0] >> 4, type=s[0] & 15, flags=s[1], worker=s[2], src=s[3],
             dst=s[4], block=s[5], count=s[6], round=s[7], segment=s[8], pas=s[9],
             frac=s[10], reserved=s[11])
    ipd = dict(ver_ihl=ip[0], dscp=ip[1] >> 2, ecn=ip[1] & 3, total=ip[2], ident=ip[3],
               flags_off=ip[4], ttl=ip[5], proto=ip[6], csum=ip[7], src=ip[8], dst=ip[9])
    lv = list(struct.unpack("!32i", f[58:186])) if len(f) >= 186 else None
    return f[:14], ipd, d, lv


# ---------------------------------------------------------------- switch, control plane, ports

def run(cmd):
    subprocess.run(cmd, check=True, capture_output=True)


class Switch:
    """veth pairs and a simple_switch child process."""

    def __init__(self, json_path):
        self.created = []
        for n in range(4):
            sw, host = "%s%d" % (VETH, n), "%s%dh" % (VETH, n)
            if not os.path.exists("/sys/class/net/" + sw):
                run(["ip", "link", "add", sw, "type", "veth", "peer", "name", host])
                self.created.append(sw)
            for i in (sw, host):
                # no IPv6: the host ends would send neighbour/router solicitations
                run(["sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % i])
                run(["ip", "link", "set", i, "up"])
        log = os.path.join(os.path.dirname(os.path.abspath(json_path)), "bmv2_check.log")
        cmd = ["simple_switch", "--thrift-port", str(THRIFT_PORT)]
        for n in range(4):
            cmd += ["-i", "%d@%s%d" % (n, VETH, n)]
        cmd += [json_path, "--", "--priority-queues", "8"]
        self.proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        for _ in range(100):
            time.sleep(0.2)
            if self.proc.poll() is not None:
                raise RuntimeError("simple_switch exited (port in use?), see " + log)
            try:
                cli("show_ports")
                return
            except RuntimeError:
                if self.proc.poll() is not None:
                    raise RuntimeError("simple_switch exited, see " + log)
        raise RuntimeError("simple_switch did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        for i in self.created:
            run(["ip", "link", "del", i])


def cli(cmds):
    """Runs simple_switch_CLI commands in one session; returns the output."""
    if isinstance(cmds, str):
        cmds = [cmds]
    exe = shutil.which("simple_switch_CLI") or "simple_switch_CLI"
    r = subprocess.run([P4_PYTHON, exe, "--thrift-port", str(THRIFT_PORT)],
                       input="\n".join(cmds) + "\n", capture_output=True, text=True)
    if r.returncode or "Error" in r.stdout or "Invalid" in r.stdout or "Could not" in r.stdout:
        raise RuntimeError("CLI failed:\n" + r.stdout + r.stderr)
    return r.stdout


def read_events():
    out = cli(["counter_read events %d" % i for i in range(len(EVENTS))])
    return dict(zip(EVENTS, [int(x) for x in re.findall(r"(\d+) packets\)", out)]))


def read_port_counters(name, ports):
    out = cli(["counter_read %s %d" % (name, p) for p in ports])
    return [(int(b), int(p)) for b, p in re.findall(r"\((\d+) bytes, (\d+) packets\)", out)]


def read_regs(pairs):
    out = cli(["register_read %s %d" % p for p in pairs])
    return [int(v) for v in re.findall(r"\]=\s*(\d+)", out)]


class Ports:
    """AF_PACKET sockets on the host ends (p4tNh)."""

    def __init__(self, n=4):
        self.s = {}
        for p in range(n):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            s.bind(("%s%dh" % (VETH, p), 0))
            s.setblocking(False)
            self.s[p] = s
        self.collect(first=0.1, quiet=0.05)

    def send(self, port, f):
        self.s[port].send(f)

    def collect(self, quiet=0.15, first=0.6, expect=None):
        """[(port, frame)] the switch emitted: waits `first` seconds for a frame (less once
        `expect` frames arrived), then until `quiet` seconds pass without one."""
        got = []
        deadline = time.time() + first
        port_of = {s.fileno(): p for p, s in self.s.items()}
        while True:
            wait = deadline - time.time()
            if wait <= 0:
                return got
            ready, _, _ = select.select(list(self.s.values()), [], [], wait)
            for s in ready:
                try:
                    while True:
                        data, addr = s.recvfrom(65536)
                        if addr[2] != socket.PACKET_OUTGOING:
                            got.append((port_of[s.fileno()], data))
                            deadline = time.time() + quiet
                except BlockingIOError:
                    pass
            if expect is not None and len(got) >= expect:
                deadline = min(deadline, time.time() + quiet)


# ---------------------------------------------------------------- model


def wrap32(x):
    x &= 0xffffffff
    return x - (1 << 32) if x & 0x80000000 else x


class Model:
    """softswitch::Pipeline as docs/switch-interface.md says it behaves."""

    def __init__(self, aggregators=65536, max_workers=256):
        self.n = aggregators
        self.max_workers = max_workers
        # (block, src, pass) -> ('aggregate', base, dst, dw, exp, more, seen_base)
        #                     / ('deliver', dst, dw, more, seen_base)
        self.agg_table = {}
        self.worker_table = {}     # w -> port
        self.worker_addr = {}      # w -> (mac, ip)
        self.ipv4_forward = {}     # ip bytes -> port
        self.dscp_priority = {}
        self.mc_group = []         # [(rid, port)]
        # switch_config's initial default action (docs/switch-interface.md, table 6)
        self.cfg = dict(INITIAL_CONFIG)
        self.values = {}
        self.count = {}
        self.state = {}
        self.tag = {}
        self.ecn = {}
        self.sync_round = 0
        self.sync_block = 0
        self.sync_done = {}
        self.sync_count = 0
        self.drop_seen = 0
        self.src_seen = {}         # cell -> 1 << 32 | round << 16 | block
        self.ev = dict.fromkeys(EVENTS, 0)
        self.port_rx = {}
        self.port_tx = {}
        self.congested = set()     # ports whose queue is over the threshold

    # -- parsing as sgnn_wire does
    def classify(self, f):
        if len(f) < 14 or f[12:14] != b"\x08\x00":
            return "not_ipv4", None
        ip = f[14:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[0] & 15 != 5:
            return "malformed", None
        total = struct.unpack("!H", ip[2:4])[0]
        if total < 20 or total > len(ip):
            return "malformed", None
        if ip[9] != 253:
            return "other", None
        return "sgnn", total

    def sgnn_valid(self, f, total):
        ip = f[14:34]
        if checksum(ip) != 0:
            return False
        fo = struct.unpack("!H", ip[6:8])[0]
        if fo & 0x2000 or fo & 0x1fff:
            return False
        pl = total - 20
        if pl < 24:
            return False
        p = f[34:34 + pl]
        v, t = p[0] >> 4, p[0] & 15
        if v != 1 or t > 6:
            return False
        if p[1] & 0x0f or p[22:24] != b"\0\0":
            return False
        if bool(p[1] & 0x80) != (t == ACK) or bool(p[1] & 0x40) != (t == FETCH):
            return False
        if p[21] > 30:
            return False
        return pl == (152 if t in LANES_TYPES else 24)

    def process(self, port, f):
        out = []
        self.ev["rx"] += 1
        b, p = self.port_rx.get(port, (0, 0))
        self.port_rx[port] = (b + len(f), p + 1)
        kind, total = self.classify(f)
        if kind == "not_ipv4":
            self.ev["drop_not_ipv4"] += 1
            return out
        if kind == "malformed":
            self.ev["drop_malformed"] += 1
            return out
        dscp = f[15] >> 2
        if kind == "other":
            self.forward(f, dscp, out)
            return out
        if self.drop_sim():
            self.ev["drop_simulated"] += 1
            return out
        if not self.sgnn_valid(f, total):
            self.ev["drop_malformed"] += 1
            return out
        _, ipd, s, lv = parse(f)
        t = s["type"]
        if t == DATA:
            self.ev["data"] += 1
            self.data(f, s, lv, dscp, out)
        elif t == BLOCK_DONE:
            self.block_done(f, s, dscp, out)
        elif t in (ACK, FETCH, BYPASS):
            self.forward(f, dscp, out)
        else:
            self.ev["drop_unexpected"] += 1
        return out

    def drop_sim(self):
        self.drop_seen += 1
        if self.cfg["drop_every"] and self.drop_seen >= self.cfg["drop_every"]:
            self.drop_seen = 0
            return True
        return False   # drop_prob is not modelled (random)

    def forward(self, f, dscp, out):
        dst = f[30:34]
        if dst in self.ipv4_forward:
            self.ev["forwarded"] += 1
            self.emit(self.ipv4_forward[dst], f, out)
        else:
            self.ev["drop_no_route"] += 1

    def emit(self, port, f, out):
        self.ev["tx"] += 1
        b, p = self.port_tx.get(port, (0, 0))
        self.port_tx[port] = (b + len(f), p + 1)
        out.append((port, f))

    def switch_frame(self, worker, port, hdr, lv, dscp, in_len, out):
        """egress_to_worker: addresses from worker_addr (a miss drops); hdr is the sgnn dict."""
        if worker not in self.worker_addr:
            self.ev["drop_unknown_worker"] += 1
            return
        mac, ip = self.worker_addr[worker]
        ecn = 0
        if port in self.congested:
            hdr = dict(hdr, flags=hdr["flags"] | 0x20)
            ecn = 3
        if hdr["flags"] & 0x20:
            self.ev["ecn_marked"] += 1
        payload = struct.pack("!BBHIIHHHHBBH", (1 << 4) | hdr["type"], hdr["flags"],
                              hdr["worker"], hdr["src"], hdr["dst"], hdr["block"],
                              hdr["count"], hdr["round"], hdr["segment"], hdr["pas"],
                              hdr["frac"], 0)
        if lv is not None:
            payload += lanes(lv)
        f = frame(mac, self.cfg["mac"], self.cfg["ip"], ip, payload, dscp=dscp, ecn=ecn)
        self.ev["tx"] += 1
        b, p = self.port_tx.get(port, (0, 0))
        # bmv2 counts a frame's bytes as its length when it entered the switch
        self.port_tx[port] = (b + in_len, p + 1)
        out.append((port, f))

    def to_worker(self, worker, hdr, lv, dscp, in_len, out):
        if worker not in self.worker_table:
            self.ev["drop_unknown_worker"] += 1
            return
        self.switch_frame(worker, self.worker_table[worker], hdr, lv, dscp, in_len, out)

    def release(self, i, state, tag):
        self.values[i] = [0] * 32
        self.count[i] = 0
        self.ecn[i] = 0
        self.state[i] = state
        self.tag[i] = tag

    def data(self, f, s, lv, dscp, out):
        if (s["round"], s["block"]) != (self.sync_round, self.sync_block):
            self.ev["drop_stale"] += 1
            return
        resend = bool(s["flags"] & 0x10)
        if s["pas"] != 0 and not resend:
            self.ev["drop_unexpected"] += 1
            return
        pas = s["pas"]
        while True:
            a = self.agg_table.get((s["block"], s["src"], pas))
            if a is None:
                self.ev["drop_no_entry"] += 1
                return
            # duplicate suppression: a host's first-pass copy without RESEND
            if pas == 0 and not resend:
                i = a[-1] + s["segment"]
                if i >= SEEN_CELLS:
                    self.ev["drop_bad_index"] += 1
                    return
                mark = SEEN_VALID | (s["round"] << 16) | s["block"]
                if self.src_seen.get(i, 0) == mark:
                    self.ev["drop_duplicate"] += 1
                    return
                self.src_seen[i] = mark
            if a[0] == "deliver":
                _, dst, dw, more, _ = a
                self.ev["delivered"] += 1
                self.bypass(s, dst, dw, lv, dscp, len(f), out)
            else:
                _, base, dst, dw, exp, more, _ = a
                self.aggregate(s, base, dst, dw, exp, resend, lv, dscp, len(f), out)
            if not more or resend or pas == 255:
                return
            pas += 1
            self.ev["recirculated"] += 1

    def bypass(self, s, dst, dw, lv, dscp, in_len, out):
        h = dict(s, type=BYPASS, flags=s["flags"] & 0x30, dst=dst, pas=0)
        self.to_worker(dw, h, lv, dscp, in_len, out)

    def aggregate(self, s, base, dst, dw, exp, resend, lv, dscp, in_len, out):
        i = base + s["segment"]
        if i >= self.n:
            self.ev["drop_bad_index"] += 1
            return
        t = (s["round"] << 16) | s["block"]
        if self.state.get(i, 0) != 0 and self.tag.get(i, 0) != t:
            self.ev["reclaimed"] += 1
            self.release(i, 0, 0)
        if resend or self.state.get(i, 0) == 2:
            self.release(i, 2, t)
            self.ev["bypassed"] += 1
            self.bypass(s, dst, dw, lv, dscp, in_len, out)
            return
        if self.state.get(i, 0) == 0:
            self.state[i] = 1
            self.tag[i] = t
        acc = self.values.get(i, [0] * 32)
        sat = 0
        new = []
        for a, x in zip(acc, lv):
            r = wrap32(a + x)
            if (a >= 0) == (x >= 0) and (r >= 0) != (a >= 0):
                sat += 1
                r = 0x7fffffff if a >= 0 else -0x80000000
            new.append(r)
        self.values[i] = new
        if sat:
            self.ev["saturated"] += 1
        self.count[i] = (self.count.get(i, 0) + 1) & 0xffff
        self.ecn[i] = self.ecn.get(i, 0) | int(bool(s["flags"] & 0x20))
        self.ev["aggregated"] += 1
        if self.count[i] >= exp:
            r = dict(type=RESULT, flags=0x20 if self.ecn[i] else 0, worker=dw, src=s["src"],
                     dst=dst, block=s["block"], count=self.count[i], round=s["round"],
                     segment=s["segment"], pas=0, frac=s["frac"])
            total = self.values[i]
            self.release(i, 0, 0)
            self.ev["results"] += 1
            self.to_worker(dw, r, total, dscp, in_len, out)

    def advance(self, rnd, block, worker):
        return dict(type=BLOCK_ADVANCE, flags=0, worker=worker, src=0, dst=0, block=block,
                    count=0, round=rnd, segment=0, pas=0, frac=0)

    def block_done(self, f, s, dscp, out):
        w = s["worker"]
        if w >= self.cfg["workers"] or w >= self.max_workers:
            self.ev["drop_unknown_worker"] += 1
            return
        cur = (self.sync_round, self.sync_block)
        got = (s["round"], s["block"])
        if got < cur:
            self.ev["block_done_stale"] += 1
            self.to_worker(w, self.advance(got[0], got[1], w), None, dscp, len(f), out)
            return
        if got > cur:
            self.ev["drop_stale"] += 1
            return
        if self.sync_done.get(w):
            self.ev["block_done_duplicate"] += 1
            return
        self.sync_done[w] = 1
        self.sync_count += 1
        self.ev["block_done"] += 1
        if self.sync_count == self.cfg["workers"]:
            self.ev["block_advance"] += 1
            for rid, port in self.mc_group:
                self.switch_frame(rid, port, self.advance(cur[0], cur[1], rid), None, dscp,
                                  len(f), out)
                self.sync_done[rid] = 0
            self.sync_count = 0
            self.sync_block = (self.sync_block + 1) & 0xffff
            if self.sync_block >= self.cfg["blocks_per_round"]:
                self.sync_block = 0
                self.sync_round = (self.sync_round + 1) & 0xffff


# ---------------------------------------------------------------- bench

def set_config_cmd(c):
    """simple_switch_CLI command writing switch_config's default action."""
    # The eight parameters of set_config (p4/v1model/switch_config.p4), plan_tag last.
    return "table_set_default switch_config set_config %d %d %d %d %d %s %s %d" % (
        c["workers"], c["blocks_per_round"], c["ecn_threshold"], c["drop_every"],
        c["drop_prob"], mac_s(c["mac"]), ip_s(c["ip"]), c.get("plan_tag", 0))


def mac_s(b):
    return ":".join("%02x" % x for x in b)


def ip_s(b):
    return ".".join(str(x) for x in b)


class Bench:
    """A configured switch and its model; send() compares each frame's outputs."""

    def __init__(self, workers=3, blocks_per_round=2, ecn_threshold=0xffffffff, initial=False,
                 no_addr=()):
        """Tables for `workers` workers (those in no_addr without a worker_addr entry);
        switch_config as given, or (initial) as the program starts it (reset_state restores
        the initial default action)."""
        c = ["reset_state"]
        m = Model()
        for w in range(workers):
            c += ["table_add worker_table set_worker %d => %d" % (w, w),
                  "table_add ipv4_forward forward %s => %d" % (ip_s(worker_ip(w)), w)]
            m.worker_table[w] = w
            m.ipv4_forward[worker_ip(w)] = w
            if w not in no_addr:
                c.append("table_add worker_addr set_worker_addr %d => %s %s" % (
                    w, mac_s(worker_mac(w)), ip_s(worker_ip(w))))
                m.worker_addr[w] = (worker_mac(w), worker_ip(w))
            m.mc_group.append((w, w))
        c.append("table_add ipv4_forward forward %s => 3" % ip_s(PLAIN_HOST))
        m.ipv4_forward[PLAIN_HOST] = 3
        c.append("mc_mgrp_create 1")
        for w in range(workers):
            c += ["mc_node_create %d %d" % (w, w), "mc_node_associate 1 %d" % w]
        c.append("mirroring_add 100 %d" % RECIRC_PORT)
        cli(c)
        self.m = m
        if not initial:
            self.config(workers=workers, blocks_per_round=blocks_per_round,
                        ecn_threshold=ecn_threshold)
        self.P = Ports()
        self.touched = set()       # aggregators the entries can reach
        self.seen_touched = set()  # src_seen cells the entries can reach
        self.seen_next = {}        # block -> seen_base of its next new source
        self.seen_of = {}          # (block, src) -> seen_base
        self.failures = 0
        self.frames = 0

    def seen_base(self, block, src, seen):
        """seen, or as the planner gives it: source k of the block gets k * 4 (4 segments)."""
        if seen is None:
            if (block, src) not in self.seen_of:
                self.seen_of[(block, src)] = self.seen_next.get(block, 0)
                self.seen_next[block] = self.seen_next.get(block, 0) + 4
            seen = self.seen_of[(block, src)]
        self.seen_touched.update(i for i in range(seen, seen + 4) if i < SEEN_CELLS)
        return seen

    def agg(self, block, src, pas, base, dst, dw, exp, more, seen=None):
        seen = self.seen_base(block, src, seen)
        cli("table_add agg_table aggregate %d %d %d => %d %d %d %d %d %d" % (
            block, src, pas, base, dst, dw, exp, more, seen))
        self.m.agg_table[(block, src, pas)] = ("aggregate", base, dst, dw, exp, more, seen)
        self.touched.update(i for i in range(base, base + 4) if i < self.m.n)

    def deliver(self, block, src, pas, dst, dw, more, seen=None):
        seen = self.seen_base(block, src, seen)
        cli("table_add agg_table deliver %d %d %d => %d %d %d %d" % (
            block, src, pas, dst, dw, more, seen))
        self.m.agg_table[(block, src, pas)] = ("deliver", dst, dw, more, seen)

    def config(self, **kw):
        """Replaces switch_config's default action: the model's settings updated by kw."""
        self.m.cfg.update(kw)
        cli(set_config_cmd(self.m.cfg))

    def drop_every(self, n):
        self.config(drop_every=n)

    def send(self, port, f, label=""):
        self.frames += 1
        want = sorted(self.m.process(port, f))
        self.P.send(port, f)
        got = sorted(self.P.collect(first=0.5 if want else 0.25, expect=len(want)))
        if got != want:
            self.failures += 1
            print("  MISMATCH", label, "input", f.hex())
            for name, lst in (("want", want), ("got", got)):
                for p, g in lst:
                    print("    %s port %d %s" % (name, p, g.hex()))
        return got

    def final(self, label):
        ok = True
        ev = read_events()
        if ev != self.m.ev:
            ok = False
            print("  events differ:", {k: (ev[k], self.m.ev[k]) for k in ev if ev[k] != self.m.ev[k]})
        for name, mine in (("port_rx", self.m.port_rx), ("port_tx", self.m.port_tx)):
            got = read_port_counters(name, range(4))
            want = [mine.get(p, (0, 0)) for p in range(4)]
            if got != want:
                ok = False
                print("  %s differ: got %s, want %s" % (name, got, want))
        m = self.m
        pairs = [("sync_round", 0), ("sync_block", 0), ("sync_count", 0), ("drop_seen", 0)]
        want = [m.sync_round, m.sync_block, m.sync_count, m.drop_seen]
        pairs += [("sync_done", w) for w in range(4)]
        want += [m.sync_done.get(w, 0) for w in range(4)]
        for i in sorted(self.touched):
            pairs += [("agg_count", i), ("agg_state", i), ("agg_tag", i), ("agg_ecn", i)]
            want += [m.count.get(i, 0), m.state.get(i, 0), m.tag.get(i, 0), m.ecn.get(i, 0)]
            pairs += [("agg_value_%d" % l, i) for l in range(32)]
            want += [v & 0xffffffff for v in m.values.get(i, [0] * 32)]
        for i in sorted(self.seen_touched):
            pairs.append(("src_seen", i))
            want.append(m.src_seen.get(i, 0))
        got = read_regs(pairs)
        bad = [(p, g, w) for p, g, w in zip(pairs, got, want) if g != w]
        if bad or len(got) != len(want):
            ok = False
            print("  registers differ (name, index), bmv2, model:", bad[:20])
        print("%-14s %4d frames, %d frame mismatches, counters and registers %s" % (
            label, self.frames, self.failures, "equal" if ok else "DIFFERENT"))
        return ok and not self.failures


def vals(seed, scale=100000):
    r = random.Random(seed)
    return [r.randint(-scale, scale) for _ in range(32)]


# ---------------------------------------------------------------- scenarios

def s_aggregate():
    """One block, 3 contributors -> one Result with the exact sum; then segment 1."""
    b = Bench()
    for w in range(3):
        b.agg(0, 100 + w, 0, 10, 500, 2, 3, 0)
    for w in range(3):
        b.send(w, from_worker(w, DATA, vals(w), worker=w, src=100 + w, count=1, frac=16, dscp=34))
    for w in range(3):
        b.send(w, from_worker(w, DATA, vals(10 + w), worker=w, src=100 + w, segment=1, frac=16))
    return b.final("aggregate")


def s_recirculation():
    """A source feeding 3 aggregators: passes 0..2 each add the original values."""
    b = Bench()
    b.agg(0, 200, 0, 20, 600, 0, 2, 1)
    b.agg(0, 200, 1, 30, 601, 1, 2, 1)
    b.agg(0, 200, 2, 40, 602, 2, 2, 0)
    for k in range(3):
        b.agg(0, 201 + k, 0, 20 + 10 * k, 600 + k, k, 2, 0)
    b.send(1, from_worker(1, DATA, vals(1), worker=1, src=201))
    b.send(2, from_worker(2, DATA, vals(2), worker=2, src=202))
    b.send(0, from_worker(0, DATA, vals(0), worker=0, src=200), "200: 2 results, 3 passes")
    b.send(2, from_worker(2, DATA, vals(3), worker=2, src=203))
    b.send(0, from_worker(0, DATA, vals(4), worker=0, src=200, segment=1), "segment 1: 3 passes")
    b.send(0, from_worker(0, DATA, vals(4), worker=0, src=200, segment=1), "duplicate: no pass")
    return b.final("recirculation")


def s_deliver():
    """deliver (cut edge) -> Bypass; deliver with more, then aggregate on pass 1."""
    b = Bench()
    b.deliver(0, 300, 0, 700, 1, 1)
    b.agg(0, 300, 1, 50, 701, 2, 1, 0)
    b.deliver(0, 301, 0, 702, 2, 0)
    b.send(0, from_worker(0, DATA, vals(5), worker=0, src=300, count=2, frac=20, ecn=1))
    b.send(1, from_worker(1, DATA, vals(6), worker=1, src=301, count=1, frac=3, dscp=10))
    return b.final("deliver")


def s_resend():
    """RESEND releases and bypasses; stale, unexpected, no entry, bad index, unknown worker."""
    b = Bench()
    for w in range(3):
        b.agg(0, 400 + w, 0, 60, 800, 1, 3, 0)
    b.agg(0, 403, 0, 61, 801, 2, 2, 1)
    b.agg(0, 403, 1, 62, 802, 0, 2, 0)
    b.send(0, from_worker(0, DATA, vals(7), worker=0, src=400))
    b.send(1, from_worker(1, DATA, vals(8), worker=1, src=401, resend=1), "resend")
    b.send(2, from_worker(2, DATA, vals(9), worker=2, src=402), "late -> bypass")
    b.send(0, from_worker(0, DATA, vals(10), worker=0, src=400, resend=1))
    b.send(0, from_worker(0, DATA, vals(11), worker=0, src=403, pas=1, resend=1))
    b.send(0, from_worker(0, DATA, vals(12), worker=0, src=403, pas=1), "pass 1, no resend")
    b.send(0, from_worker(0, DATA, vals(14), worker=0, src=403, resend=1), "resend, more: 1 pass")
    b.send(0, from_worker(0, DATA, vals(12), worker=0, src=403, block=1), "stale block")
    b.send(0, from_worker(0, DATA, vals(12), worker=0, src=403, rnd=1), "stale round")
    b.send(0, from_worker(0, DATA, vals(12), worker=0, src=999), "no entry")
    b.agg(0, 404, 0, 65535, 803, 0, 1, 0)
    b.send(0, from_worker(0, DATA, vals(13), worker=0, src=404, segment=1), "bad index")
    b.send(0, from_worker(0, DATA, vals(13), worker=0, src=404), "last index")
    b.agg(0, 405, 0, 70, 804, 7, 1, 0)
    b.send(0, from_worker(0, DATA, vals(13), worker=0, src=405), "unknown worker")
    return b.final("resend")


def s_duplicate():
    """A network duplicate of a first-pass Data frame is dropped (drop_duplicate), a RESEND of
    the same source is not; deliver and multi-pass sources; src_seen index checks and their
    place before the aggregator's."""
    b = Bench()
    b.agg(0, 100, 0, 10, 500, 1, 2, 0)
    b.agg(0, 101, 0, 10, 500, 1, 2, 0)
    b.deliver(0, 102, 0, 501, 2, 0)
    b.agg(0, 103, 0, 20, 510, 0, 1, 1)
    b.agg(0, 103, 1, 30, 511, 2, 1, 0)
    b.agg(0, 104, 0, 40, 520, 0, 1, 0, seen=SEEN_CELLS - 1)
    b.deliver(0, 105, 0, 530, 1, 0, seen=SEEN_CELLS)
    b.agg(0, 106, 0, 65535, 540, 2, 1, 0)
    first = from_worker(0, DATA, vals(40), worker=0, src=100, dscp=34)
    b.send(0, first, "first copy: aggregated")
    b.send(0, first, "duplicate: dropped")
    b.send(0, from_worker(0, DATA, vals(41), worker=0, src=100), "duplicate, other values")
    b.send(0, from_worker(0, DATA, vals(40), worker=0, src=100, resend=1),
           "RESEND of the same source: bypass")
    b.send(1, from_worker(1, DATA, vals(42), worker=1, src=101), "released: bypass")
    b.send(0, from_worker(0, DATA, vals(43), worker=0, src=100, segment=1), "other segment")
    b.send(1, from_worker(1, DATA, vals(44), worker=1, src=101, segment=1, block=1), "stale")
    b.send(1, from_worker(1, DATA, vals(44), worker=1, src=101, segment=1),
           "the stale frame took no cell")
    b.send(1, from_worker(1, DATA, vals(45), worker=1, src=999), "no entry")
    b.send(2, from_worker(2, DATA, vals(46), worker=2, src=102), "deliver")
    b.send(2, from_worker(2, DATA, vals(46), worker=2, src=102), "deliver duplicate")
    b.send(2, from_worker(2, DATA, vals(46), worker=2, src=102, resend=1), "deliver RESEND")
    b.send(0, from_worker(0, DATA, vals(47), worker=0, src=103), "2 passes")
    b.send(0, from_worker(0, DATA, vals(47), worker=0, src=103), "duplicate: no pass")
    b.send(0, from_worker(0, DATA, vals(48), worker=0, src=103, pas=1, resend=1),
           "RESEND for pass 1")
    b.send(0, from_worker(0, DATA, vals(49), worker=0, src=104), "last src_seen cell")
    b.send(0, from_worker(0, DATA, vals(49), worker=0, src=104, segment=1), "cell beyond")
    b.send(0, from_worker(0, DATA, vals(50), worker=0, src=104, segment=1, resend=1),
           "RESEND: no src_seen check")
    b.send(1, from_worker(1, DATA, vals(51), worker=1, src=105), "deliver, cell beyond")
    b.send(2, from_worker(2, DATA, vals(52), worker=2, src=106, segment=1),
           "cell taken, then aggregator beyond")
    b.send(2, from_worker(2, DATA, vals(52), worker=2, src=106, segment=1),
           "so this is a duplicate")
    return b.final("duplicate")


def s_seen_rounds():
    """src_seen cells are reused by the next block and the next round (other tag)."""
    b = Bench(blocks_per_round=2)
    b.agg(0, 100, 0, 10, 500, 1, 1, 0)
    b.agg(1, 200, 0, 20, 600, 2, 1, 0)
    assert b.seen_of[(0, 100)] == b.seen_of[(1, 200)] == 0

    def advance():
        rnd, blk = b.m.sync_round, b.m.sync_block
        for w in range(3):
            b.send(w, from_worker(w, BLOCK_DONE, worker=w, rnd=rnd, block=blk), "block done")
        return b.m.sync_round, b.m.sync_block

    b.send(0, from_worker(0, DATA, vals(60), worker=0, src=100), "round 0 block 0")
    b.send(0, from_worker(0, DATA, vals(60), worker=0, src=100), "duplicate")
    b.send(0, from_worker(0, DATA, vals(61), worker=0, src=200, block=1), "block 1: stale")
    assert advance() == (0, 1)
    b.send(1, from_worker(1, DATA, vals(62), worker=1, src=200, block=1), "block 1, same cell")
    b.send(1, from_worker(1, DATA, vals(62), worker=1, src=200, block=1), "duplicate")
    assert advance() == (1, 0)
    b.send(0, from_worker(0, DATA, vals(60), worker=0, src=100), "round 0 again: stale")
    b.send(0, from_worker(0, DATA, vals(63), worker=0, src=100, rnd=1), "round 1, same cell")
    b.send(0, from_worker(0, DATA, vals(63), worker=0, src=100, rnd=1), "duplicate")
    b.send(0, from_worker(0, DATA, vals(64), worker=0, src=100, rnd=1, segment=3), "segment 3")
    return b.final("seen_rounds")


def s_unknown_addr():
    """A worker without a worker_addr entry: its frames are dropped in egress and counted
    drop_unknown_worker (not sent, not ECN-marked); its advance replica still clears its
    sync_done entry; a recirculating source goes on."""
    b = Bench(no_addr=(2,))
    b.agg(0, 100, 0, 10, 500, 2, 1, 0)
    b.deliver(0, 101, 0, 501, 2, 0)
    b.agg(0, 102, 0, 20, 502, 2, 1, 1)
    b.agg(0, 102, 1, 30, 503, 0, 1, 0)
    b.send(0, from_worker(0, DATA, vals(70), worker=0, src=100, ecn=1), "Result: dropped")
    b.send(0, from_worker(0, DATA, vals(71), worker=0, src=101), "Bypass: dropped")
    b.send(1, from_worker(1, DATA, vals(72), worker=1, src=102), "pass 0 dropped, pass 1 sent")
    b.send(2, from_worker(2, ACK, worker=2, dst_ip=worker_ip(0)), "forwarded: no worker_addr")
    for w in range(3):
        b.send(w, from_worker(w, BLOCK_DONE, worker=w), "advance to 0 and 1 only")
    b.send(2, from_worker(2, BLOCK_DONE, worker=2), "stale: unicast dropped")
    b.send(2, from_worker(2, BLOCK_DONE, worker=2, block=1), "entry was cleared")
    return b.final("unknown_addr")


def s_block_sync():
    """All BlockDones -> multicast advance; duplicate, future, stale -> unicast, round wrap."""
    b = Bench(blocks_per_round=2)
    b.send(0, from_worker(0, BLOCK_DONE, worker=0))
    b.send(0, from_worker(0, BLOCK_DONE, worker=0), "duplicate")
    b.send(1, from_worker(1, BLOCK_DONE, worker=1, block=1), "future")
    b.send(1, from_worker(1, BLOCK_DONE, worker=1, dscp=46))
    b.send(2, from_worker(2, BLOCK_DONE, worker=2, dscp=46), "advance")
    b.send(1, from_worker(1, BLOCK_DONE, worker=1), "stale -> unicast")
    b.send(3, from_worker(5, BLOCK_DONE, worker=5), "unknown worker")
    for w in range(3):
        b.send(w, from_worker(w, BLOCK_DONE, worker=w, block=1))
    b.send(0, from_worker(0, BLOCK_DONE, worker=0, block=1), "stale, previous round")
    return b.final("block_sync")


def s_config():
    """switch_config: the initial default action, then replaced mid-run (recirculated passes
    and multicast replicas use the new values)."""
    b = Bench(initial=True)
    b.agg(0, 100, 0, 10, 500, 1, 1, 0)
    b.agg(0, 101, 0, 11, 501, 0, 1, 1)
    b.agg(0, 101, 1, 12, 502, 2, 1, 0)
    b.send(0, from_worker(0, BLOCK_DONE, worker=0), "workers 0: unknown worker")
    b.send(0, from_worker(0, DATA, vals(1), worker=0, src=100), "initial switch MAC/IP")
    b.config(workers=3, blocks_per_round=1, mac=bytes([2, 0, 0, 0, 0xee, 1]),
             ip=bytes([10, 0, 0, 1]))
    b.send(1, from_worker(1, DATA, vals(2), worker=1, src=101), "new MAC/IP, 2 passes")
    for w in range(3):
        b.send(w, from_worker(w, BLOCK_DONE, worker=w), "advance, round wraps")
    b.config(ip=bytes([10, 0, 0, 2]))
    b.send(0, from_worker(0, BLOCK_DONE, worker=0, rnd=0), "stale -> unicast")
    b.config(drop_every=2)
    for k in range(4):
        b.send(2, from_worker(2, DATA, vals(3 + k), worker=2, src=100, rnd=1, segment=k % 2),
               "drop every 2nd")
    return b.final("config")


def s_reclaim():
    """A leftover aggregator of block 0 is reclaimed by block 1."""
    b = Bench(blocks_per_round=4)
    b.agg(0, 500, 0, 80, 900, 0, 2, 0)
    b.agg(1, 501, 0, 80, 901, 1, 2, 0)
    b.agg(1, 502, 0, 80, 901, 1, 2, 0)
    b.send(0, from_worker(0, DATA, vals(20), worker=0, src=500, ecn=1))
    for w in range(3):
        b.send(w, from_worker(w, BLOCK_DONE, worker=w))
    b.send(1, from_worker(1, DATA, vals(21), worker=1, src=501, block=1), "reclaim")
    b.send(2, from_worker(2, DATA, vals(22), worker=2, src=502, block=1))
    return b.final("reclaim")


def s_saturation():
    """Lanes saturating both ways; counted once per packet."""
    b = Bench()
    for k in range(3):
        b.agg(0, 600 + k, 0, 90, 950, 0, 3, 0)
    b.send(0, from_worker(0, DATA, [0x7fffffff - 5, -0x80000000 + 5, 1 << 30, -(1 << 30)] + [7] * 28,
                          worker=0, src=600))
    b.send(1, from_worker(1, DATA, [10, -10, 1 << 30, -(1 << 30) - 1] + [-7] * 28, worker=1, src=601))
    b.send(2, from_worker(2, DATA, [-20, 20, -5, 5] + [0] * 28, worker=2, src=602))
    return b.final("saturation")


def s_padding():
    """Switch frames are exactly 186 / 58 bytes; forwarded frames keep their padding."""
    b = Bench()
    b.agg(0, 700, 0, 95, 990, 1, 1, 0)
    b.deliver(0, 701, 0, 991, 2, 0)
    b.send(0, from_worker(0, DATA, vals(30), worker=0, src=700) + b"\xee" * 7)
    b.send(0, from_worker(0, DATA, vals(31), worker=0, src=701) + b"\xee" * 3)
    for w in range(3):
        b.send(w, from_worker(w, BLOCK_DONE, worker=w) + b"\0\0")
    b.send(1, from_worker(1, BLOCK_DONE, worker=1) + b"\0" * 6, "stale -> unicast")
    b.send(1, from_worker(1, ACK, worker=1, dst_ip=worker_ip(0)) + b"\0" * 6, "ack")
    return b.final("padding")


def s_malformed():
    """Every validation rule, foreign frames, forwarding byte for byte."""
    b = Bench()
    b.agg(0, 100, 0, 10, 500, 1, 2, 0)
    b.agg(0, 101, 0, 11, 501, 1, 1, 0)
    good = from_worker(0, DATA, vals(0), worker=0, src=100, frac=30)

    def setb(f, off, v, fix=True):
        f = bytearray(f)
        f[off] = v
        return with_checksum(bytes(f)) if fix else bytes(f)

    def total(f, n):
        return with_checksum(f[:16] + struct.pack("!H", n) + f[18:])

    udp = struct.pack("!HHHH", 1234, 5678, 12, 0) + b"abcd"
    cases = [
        setb(good, 24, good[24] ^ 1, fix=False),                     # checksum
        with_checksum(good[:20] + bytes([0x60]) + good[21:]),        # MF
        with_checksum(good[:21] + bytes([1]) + good[22:]),           # fragment offset
        with_checksum(good[:20] + bytes([0]) + good[21:]),           # DF clear: valid
        setb(good, 34, 0x20), setb(good, 34, 0x00),                  # version
        setb(good, 34, 0x17), setb(good, 34, 0x1f),                  # type
        setb(good, 35, 0x01), setb(good, 35, 0x08),                  # reserved flag bits
        setb(good, 35, 0x80), setb(good, 35, 0x40),                  # IS_ACK / IS_FETCH on Data
        from_worker(0, ACK, worker=0, ack=0, dst_ip=worker_ip(1)),
        from_worker(0, ACK, worker=0, fetch=1, dst_ip=worker_ip(1)),
        setb(good, 57, 1),                                           # reserved field
        setb(good, 55, 31), setb(good, 55, 255),                     # frac_bits
        from_worker(0, DATA, None, worker=0, src=100),               # Data without lanes
        from_worker(0, BLOCK_DONE, vals(1), worker=0),               # BlockDone with lanes
        total(good, 173), total(good, 171), total(good, 19), total(good, 20),
        good[:100], good[:40], good[:30],                            # truncated
        setb(good, 14, 0x46), setb(good, 14, 0x65),                  # IHL 6, IP version 6
        good[:12] + b"\x08\x06" + good[14:], good[:12] + b"\x86\xdd" + good[14:],
        good + b"\0" * 10,                                           # padded Data: valid
        from_worker(0, BLOCK_DONE, worker=0) + b"\0\0",
        from_worker(0, ACK, worker=0, dst_ip=worker_ip(1)) + b"\0\0",
        from_worker(0, RESULT, vals(2), worker=0),                   # switch-only types
        from_worker(0, BLOCK_ADVANCE, worker=0),
        from_worker(0, BYPASS, vals(3), worker=0, resend=1, dst_ip=worker_ip(2)),
        from_worker(0, FETCH, worker=0, dst_ip=worker_ip(2), dscp=46),
        from_worker(0, ACK, worker=0, dst_ip=bytes([10, 8, 8, 8])),  # no route
        frame(bytes(6), worker_mac(0), worker_ip(0), PLAIN_HOST, b"x" * 30, proto=17, csum=1,
              flags_off=0x2000),                                     # foreign: not checked
        frame(b"\xaa" * 6, worker_mac(0), worker_ip(0), PLAIN_HOST, udp, proto=17, dscp=10,
              ttl=3, ident=77),
        frame(b"\xaa" * 6, worker_mac(0), worker_ip(0), bytes([10, 9, 0, 4]), udp, proto=17),
        frame(b"\xaa" * 6, worker_mac(0), worker_ip(0), PLAIN_HOST, udp, proto=17, ver_ihl=0x46),
        frame(b"\xaa" * 6, worker_mac(0), worker_ip(0), PLAIN_HOST, udp, proto=17, total=40),
        frame(b"\xaa" * 6, worker_mac(0), worker_ip(0), PLAIN_HOST, b"ab", proto=17) + bytes(20),
        from_worker(0, DATA, vals(4), worker=0, src=101, frac=30),
    ]
    for i, f in enumerate(cases):
        b.send(0, f, "case %d" % i)
    return b.final("malformed")


def s_drop_sim():
    """drop_every 3 over SwitchGNN frames only."""
    b = Bench()
    b.drop_every(3)
    b.agg(0, 100, 0, 10, 500, 1, 2, 0)
    good = from_worker(0, DATA, vals(0), worker=0, src=100)
    seq = [from_worker(0, DATA, vals(i), worker=0, src=100) for i in range(4)]
    seq += [frame(b"\xaa" * 6, worker_mac(0), worker_ip(0), PLAIN_HOST, b"abcd", proto=17),
            good[:12] + b"\x08\x06" + good[14:],
            good[:24] + bytes([good[24] ^ 1]) + good[25:],
            with_checksum(good[:16] + struct.pack("!H", 173) + good[18:])]
    seq += [from_worker(w, BLOCK_DONE, worker=w) for w in range(3)]
    seq += [from_worker(0, FETCH, worker=0, dst_ip=worker_ip(2))] * 3
    for i, f in enumerate(seq):
        b.send(i % 3, f, "frame %d" % i)
    return b.final("drop_sim")


def s_random(seed=1, n=300):
    """Random mix over a 3-block plan: valid, stale, resent, padded, mutated frames."""
    R = random.Random(seed)
    W, BLOCKS = 3, 3
    b = Bench(workers=W, blocks_per_round=BLOCKS)
    b.drop_every(17)
    sources = {}
    slot = 0
    for blk in range(BLOCKS):
        dsts = []
        for d in range(6):
            dsts.append((10000 * (blk + 1) + d, R.randrange(W), slot, R.randint(1, 3)))
            slot += 4
        sources[blk] = []
        for s in range(8):
            src, owner, k = 1000 * (blk + 1) + s, R.randrange(W), R.choice([1, 1, 2, 3])
            # src_seen cells as the planner gives them (source s: 4 * s, the same cells in
            # every block and round), one source of block 0 on the last cells (bad index)
            seen = SEEN_CELLS - 2 if (blk, s) == (0, 7) else 4 * s
            for p, (dst, dw, base, exp) in enumerate(R.sample(dsts, k)):
                if R.random() < 0.15:
                    b.deliver(blk, src, p, dst, dw, int(p + 1 < k), seen=seen)
                else:
                    b.agg(blk, src, p, base, dst, dw, exp, int(p + 1 < k), seen=seen)
            sources[blk].append((src, owner, k))

    def lanes_rand():
        if R.random() < 0.1:
            return [R.choice([0x7fffffff, -0x80000000, 1 << 30, -(1 << 30),
                              R.randint(-2 ** 31, 2 ** 31 - 1)]) for _ in range(32)]
        return [R.randint(-10 ** 6, 10 ** 6) for _ in range(32)]

    last_data = None
    for i in range(n):
        blk, rnd = b.m.sync_block, b.m.sync_round
        x = R.random()
        if x < 0.05 and last_data:         # a network duplicate of the last Data frame
            f, port = last_data
        elif x < 0.55:                     # Data
            if R.random() < 0.1:
                blk, rnd = R.randrange(BLOCKS), R.choice([rnd, (rnd + 1) & 0xffff, max(rnd - 1, 0)])
            src, owner, k = R.choice(sources[blk])
            resend = int(R.random() < 0.12)
            pas = R.randrange(k) if resend else (0 if R.random() < 0.97 else 1)
            f = from_worker(owner, DATA, lanes_rand(), worker=owner, src=src, block=blk, rnd=rnd,
                            segment=R.choice([0, 0, 1, 2, 3]), pas=pas, resend=resend,
                            ecn=int(R.random() < 0.1), frac=R.randint(0, 30), count=k,
                            dscp=R.choice([0, 34]))
            port = owner
            last_data = f, port
        elif x < 0.68:                     # BlockDone
            w = R.randrange(W + 1) if R.random() < 0.1 else R.randrange(W)
            if R.random() < 0.2:
                blk, rnd = R.randrange(BLOCKS), R.choice([rnd, max(rnd - 1, 0), rnd + 1])
            f = from_worker(w, BLOCK_DONE, worker=w, block=blk, rnd=rnd, dscp=46)
            port = w % 4
        elif x < 0.78:                     # host to host
            w, t = R.randrange(W), R.choice([ACK, FETCH, BYPASS])
            f = from_worker(w, t, lanes_rand() if t == BYPASS else None, worker=w,
                            dst_ip=worker_ip(R.randrange(W + 1)), src=R.randrange(9999),
                            dst=R.randrange(9999), resend=int(t == BYPASS))
            if R.random() < 0.3:
                f += bytes(R.randrange(1, 20))
            port = w
        elif x < 0.83:                     # plain IPv4
            f = frame(b"\x02" * 6, worker_mac(0), worker_ip(0),
                      R.choice([PLAIN_HOST, worker_ip(1), bytes([1, 2, 3, 4])]),
                      bytes(R.randrange(256) for _ in range(R.randrange(8, 64))),
                      proto=R.choice([6, 17, 1]))
            port = R.randrange(4)
        elif x < 0.97:                     # mutated SwitchGNN
            src, owner, k = R.choice(sources[blk])
            if R.random() < 0.6:
                f = from_worker(owner, DATA, lanes_rand(), worker=owner, src=src, block=blk, rnd=rnd)
            else:
                f = from_worker(owner, R.choice([DATA, BLOCK_DONE]), None, worker=owner, src=src,
                                block=blk, rnd=rnd)
            f = bytearray(f)
            kind = R.random()
            if kind < 0.6:
                pos = R.randrange(12, 58)
                f[pos] ^= 1 << R.randrange(8)
                if R.random() < 0.7 and pos not in (24, 25):
                    f = bytearray(with_checksum(bytes(f)))
            elif kind < 0.8:
                f = f[:R.randrange(14, len(f))]
            else:
                f += bytes(R.randrange(1, 30))
            f, port = bytes(f), owner
        else:                              # switch-only types from a host
            t = R.choice([RESULT, BLOCK_ADVANCE])
            f = from_worker(0, t, lanes_rand() if t == RESULT else None, worker=0)
            port = 0
        b.send(port, f, "random %d" % i)
    return b.final("random %d" % seed)


def s_ecn():
    """30 Results into a 20 pps queue with threshold 3, 3 Acks among them."""
    b = Bench(ecn_threshold=3)
    n = 30
    cli(["table_add agg_table aggregate 0 %d 0 => %d %d 2 1 0 %d" % (
        1000 + i, 100 + i, 2000 + i, i) for i in range(n)] + ["set_queue_rate 20 2"])
    for i in range(n):
        b.P.send(0, from_worker(0, DATA, [i] * 32, worker=0, src=1000 + i, dscp=34))
        if i % 10 == 5:
            b.P.send(1, from_worker(1, ACK, worker=1, dst=2000 + i, dst_ip=worker_ip(2)))
    got = b.P.collect(first=5, quiet=0.5)
    cli("set_queue_rate 1000000 2")
    ok, marked = True, 0
    for p, f in got:
        _, ip, s, lv = parse(f)
        mark = bool(s["flags"] & 0x20)
        if s["type"] == RESULT:
            marked += mark
            ok &= ip["ecn"] == (3 if mark else 0) and checksum(f[14:34]) == 0
            ok &= lv == [s["dst"] - 2000] * 32
        else:
            ok &= ip["ecn"] == 0 and not mark
    ev = read_events()
    ok &= ev["ecn_marked"] == marked > 0 and ev["results"] == n and len(got) == n + 3
    print("%-14s %d of %d Results marked (IPv4 ECN 3 + flag), Acks untouched, ecn_marked %d: %s" % (
        "ecn", marked, n, ev["ecn_marked"], "ok" if ok else "WRONG"))
    return ok


def s_priority():
    """EF (46 -> 7) and AF41 (34 -> 5) overtake earlier DSCP 0 bulk into a 10 pps port."""
    b = Bench()
    cli(["table_add dscp_priority set_priority 46 => 7",
         "table_add dscp_priority set_priority 34 => 5"] +
        ["table_add agg_table aggregate 0 %d 0 => %d %d 2 1 0 %d" % (
            1000 + i, 100 + i, 2000 + i, i) for i in range(8)] +
        ["set_queue_rate 10 2 %d" % q for q in range(8)])
    for i in range(12):
        b.P.send(0, frame(worker_mac(2), worker_mac(0), worker_ip(0), worker_ip(2),
                          struct.pack("!HHHH", 1, 2, 12, 0) + bytes([i] * 4), proto=17))
    for i in range(8):
        b.P.send(0, from_worker(0, DATA, [i] * 32, worker=0, src=1000 + i, dscp=34))
    for i in range(3):
        b.P.send(1, from_worker(1, ACK, worker=1, dst=i, dscp=46, dst_ip=worker_ip(2)))
    got = b.P.collect(first=8, quiet=1.0)
    cli(["set_queue_rate 1000000 2 %d" % q for q in range(8)])
    seq = "".join("u" if f[23] == 17 else {ACK: "a", RESULT: "r"}[parse(f)[2]["type"]]
                  for _, f in got)
    # every ack and result must leave before the last bulk frame sent before them
    ok = len(seq) == 23 and seq.rindex("a") < seq.rindex("u") and seq.rindex("r") < seq.rindex("u")
    print("%-14s sent uuuuuuuuuuuurrrrrrrraaa, received %s: %s" % (
        "priority", seq, "ok" if ok else "WRONG"))
    return ok


SCENARIOS = {
    "aggregate": s_aggregate, "recirculation": s_recirculation, "deliver": s_deliver,
    "resend": s_resend, "duplicate": s_duplicate, "seen_rounds": s_seen_rounds,
    "unknown_addr": s_unknown_addr, "block_sync": s_block_sync, "config": s_config, "reclaim": s_reclaim,
    "saturation": s_saturation, "padding": s_padding, "malformed": s_malformed,
    "drop_sim": s_drop_sim, "random": s_random, "ecn": s_ecn, "priority": s_priority,
}


def main():
    global THRIFT_PORT, VETH
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", required=True, help="bmv2 JSON of p4/v1model/switchgnn.p4")
    ap.add_argument("--thrift-port", type=int, default=9191,
                    help="Thrift port of the switch it starts (default %(default)s); pick a "
                         "free one when other switches run on the machine")
    ap.add_argument("--veth-prefix", default="p4t",
                    help="names of the veth pairs: PREFIX0..3 <-> PREFIX0h..3h (default "
                         "%(default)s); pick unused ones when other tests run on the machine")
    ap.add_argument("scenarios", nargs="*", metavar="scenario",
                    help="any of %s (default: all)" % ", ".join(SCENARIOS))
    a = ap.parse_args()
    THRIFT_PORT = a.thrift_port
    VETH = a.veth_prefix
    unknown = [s for s in a.scenarios if s not in SCENARIOS]
    if unknown:
        ap.error("unknown scenario %s" % ", ".join(unknown))
    switch = Switch(a.json)
    try:
        results = {name: SCENARIOS[name]() for name in (a.scenarios or SCENARIOS)}
    finally:
        switch.stop()
    failed = [k for k, v in results.items() if not v]
    print("all %d scenarios passed" % len(results) if not failed else "FAILED: " + " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
