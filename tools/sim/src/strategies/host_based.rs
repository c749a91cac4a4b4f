//! [`HostBased`]: BNS-GCN with p = 1 (see the module above for the model).
//!
//! Loss recovery (`with_timeout`): a receiver remembers which of its expected frames arrived
//! (one bit each); when it is done sending and nothing new arrived for the timeout, it sends
//! one Fetch per missing (vertex, segment) to the vertex's owner, who answers with the raw
//! frame at the recovery priority. The timeout doubles after every expiry (up to
//! [`MAX_BACKOFF`] times) and resets on progress.

use std::collections::VecDeque;

use sgnn_plan::Plan;

use super::{data_pkt, CONTROL_WIRE, PRIO_DATA};
use crate::host::{Deadline, HostCounters, MAX_BACKOFF, PRIO_RECOVERY, TOKEN_HOST};
use crate::net::{App, Kind, Out, Pkt, Time};

/// Vectors worker `w` sends worker `d` under `host_based` (`T[w * M + d]`): one per
/// boundary vertex of `w` and remote worker with a neighbour of it.
pub fn host_based_matrix(plan: &Plan) -> Vec<u64> {
    let m = plan.workers() as usize;
    let mut t = vec![0u64; m * m];
    let mut parts: Vec<u32> = Vec::new();
    for u in 0..plan.graph.num_vertices() as u32 {
        plan.remote_parts(u, &mut parts);
        let pu = plan.partition[u as usize] as usize;
        for &d in &parts {
            t[pu * m + d as usize] += 1;
        }
    }
    t
}

/// Per-host sending state of the host-based all-to-all.
#[derive(Debug, Clone, Default)]
struct HbHost {
    /// Destinations with vectors left, served round-robin.
    active: Vec<u32>,
    /// Position in `active`.
    pos: usize,
    /// Segment of the vector being sent, and its (destination, vertex).
    seg: u32,
    current: Option<(u32, u32)>,
    /// Frames received, and expected.
    got: u64,
    expected: u64,
    /// Fetch requests and replies, sent before data.
    recovery: VecDeque<Pkt>,
    last_progress: Time,
    backoff: Time,
    deadline: Deadline,
}

/// BNS-GCN with p = 1: boundary vectors unicast to every remote worker that needs them.
pub struct HostBased {
    workers: u32,
    segments: u32,
    /// Vertices worker `w` sends to worker `d`: `verts[off[w * M + d]..off[w * M + d + 1]]`.
    off: Vec<usize>,
    verts: Vec<u32>,
    cursor: Vec<usize>,
    hosts: Vec<HbHost>,
    delivered: u64,
    total: u64,
    /// When the last expected frame arrived (if every host got all it expected).
    pub finish: Option<Time>,
    /// One bit per expected frame: `(off[w * M + d] + k) * segments + segment` for the `k`-th
    /// vertex `w` sends `d`.
    received: Vec<u64>,
    timeout: Option<Time>,
    /// Host counters (recovery).
    pub host_counters: HostCounters,
}

impl HostBased {
    /// The exchange of one layer under `plan`'s partition.
    pub fn new(plan: &Plan) -> HostBased {
        let m = plan.workers() as usize;
        let n = plan.graph.num_vertices();
        let part = &plan.partition;
        // off[w * M + d]..off[w * M + d + 1]: the vertices w sends d, in vertex order.
        let mut off = vec![0usize; m * m + 1];
        for (i, &t) in host_based_matrix(plan).iter().enumerate() {
            off[i + 1] = off[i] + t as usize;
        }
        let mut fill = off[..m * m].to_vec();
        let mut verts = vec![0u32; off[m * m]];
        let mut parts: Vec<u32> = Vec::new();
        for u in 0..n as u32 {
            plan.remote_parts(u, &mut parts);
            let pu = part[u as usize] as usize;
            for &d in &parts {
                let k = &mut fill[pu * m + d as usize];
                verts[*k] = u;
                *k += 1;
            }
        }
        let segments = plan.manifest.segments;
        let mut hosts = vec![HbHost::default(); m];
        for w in 0..m {
            for k in 1..m {
                let d = (w + k) % m;
                let sent = (off[w * m + d + 1] - off[w * m + d]) as u64;
                if sent > 0 {
                    hosts[w].active.push(d as u32);
                }
                hosts[d].expected += sent * segments as u64;
            }
        }
        let total = hosts.iter().map(|h| h.expected).sum();
        let received = vec![0; (off[m * m] * segments as usize).div_ceil(64)];
        let cursor = off[..m * m].to_vec();
        HostBased {
            workers: m as u32,
            segments,
            off,
            verts,
            cursor,
            hosts,
            delivered: 0,
            total,
            finish: if total == 0 { Some(0) } else { None },
            received,
            timeout: None,
            host_counters: HostCounters::default(),
        }
    }

    /// Loss recovery after `timeout` without progress (`None`: none).
    pub fn with_timeout(mut self, timeout: Option<Time>) -> Self {
        self.timeout = timeout;
        for h in &mut self.hosts {
            h.backoff = timeout.unwrap_or(0);
        }
        self
    }

    /// Bit index of frame (`v`, `seg`) from `w` to `d`.
    fn bit(&self, w: u32, d: u32, v: u32, seg: u16) -> usize {
        let i = (w * self.workers + d) as usize;
        let list = &self.verts[self.off[i]..self.off[i + 1]];
        let k = list
            .binary_search(&v)
            .unwrap_or_else(|_| panic!("worker {w} does not send vertex {v} to worker {d}"));
        (self.off[i] + k) * self.segments as usize + seg as usize
    }

    fn sending(&self, host: u32) -> bool {
        let h = &self.hosts[host as usize];
        h.current.is_some() || !h.active.is_empty() || !h.recovery.is_empty()
    }

    fn deadline(&self, host: u32) -> Option<Time> {
        let h = &self.hosts[host as usize];
        (self.timeout.is_some() && h.got < h.expected).then(|| h.last_progress + h.backoff)
    }

    /// Asks every owner for every frame `host` still misses.
    fn fetch(&mut self, host: u32) {
        let m = self.workers;
        let segs = self.segments;
        let mut requests = 0;
        for w in (0..m).filter(|&w| w != host) {
            let i = (w * m + host) as usize;
            for k in self.off[i]..self.off[i + 1] {
                for g in 0..segs {
                    let bit = k * segs as usize + g as usize;
                    if self.received[bit / 64] & (1 << (bit % 64)) != 0 {
                        continue;
                    }
                    requests += 1;
                    self.hosts[host as usize].recovery.push_back(Pkt {
                        kind: Kind::Fetch,
                        prio: PRIO_RECOVERY,
                        ecn: false,
                        seg: g as u16,
                        wire: CONTROL_WIRE,
                        src: host,
                        dst: w,
                        block: 0,
                        a: self.verts[k],
                    });
                }
            }
        }
        self.host_counters.fetch_requests += requests;
    }
}

impl App for HostBased {
    fn host_next(&mut self, host: u32, now: Time) -> Option<Pkt> {
        let m = self.workers as usize;
        let h = &mut self.hosts[host as usize];
        if let Some(p) = h.recovery.pop_front() {
            return Some(p);
        }
        if h.current.is_none() {
            if h.active.is_empty() {
                return None;
            }
            if h.pos >= h.active.len() {
                h.pos = 0;
            }
            let d = h.active[h.pos] as usize;
            let i = host as usize * m + d;
            let v = self.verts[self.cursor[i]];
            self.cursor[i] += 1;
            if self.cursor[i] == self.off[i + 1] {
                h.active.remove(h.pos); // keeps the round-robin order
            } else {
                h.pos += 1;
            }
            h.current = Some((d as u32, v));
            h.seg = 0;
        }
        h.last_progress = now;
        let (d, v) = h.current.expect("set above");
        let pkt = data_pkt(Kind::Raw, PRIO_DATA, host, d, 0, v, h.seg);
        h.seg += 1;
        if h.seg == self.segments {
            h.current = None;
        }
        Some(pkt)
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out) {
        match pkt.kind {
            Kind::Raw => {}
            Kind::Fetch => {
                let reply = data_pkt(
                    Kind::Raw,
                    PRIO_RECOVERY,
                    host,
                    pkt.src,
                    0,
                    pkt.a,
                    pkt.seg as u32,
                );
                self.hosts[host as usize].recovery.push_back(reply);
                self.host_counters.fetch_replies += 1;
                out.kicks.push(host);
                return;
            }
            k => panic!("host-based host {host} got {k:?}"),
        }
        let bit = self.bit(pkt.src, host, pkt.a, pkt.seg);
        if self.received[bit / 64] & (1 << (bit % 64)) != 0 {
            self.host_counters.duplicates += 1;
            return;
        }
        self.received[bit / 64] |= 1 << (bit % 64);
        if pkt.prio == PRIO_RECOVERY {
            self.host_counters.fetched_new += 1;
        }
        let h = &mut self.hosts[host as usize];
        h.got += 1;
        h.last_progress = now;
        h.backoff = self.timeout.unwrap_or(0);
        self.delivered += 1;
        if self.delivered == self.total {
            self.finish = Some(now);
        }
    }

    fn start(&mut self, out: &mut Out) {
        for w in 0..self.workers {
            if let Some(t) = self.deadline(w) {
                self.hosts[w as usize].deadline.arm(w, t, out);
            }
        }
    }

    fn timer(&mut self, node: u32, token: u64, now: Time, out: &mut Out) {
        debug_assert_eq!(token, TOKEN_HOST);
        let host = node;
        if !self.hosts[host as usize].deadline.fire(now) {
            return;
        }
        let Some(due) = self.deadline(host) else {
            return;
        };
        if now >= due {
            let base = self.timeout.expect("deadline() needs a timeout");
            let sending = self.sending(host);
            let h = &mut self.hosts[host as usize];
            h.last_progress = now;
            if !sending {
                h.backoff = (h.backoff * 2).min(base * MAX_BACKOFF);
                self.host_counters.fetch_timeouts += 1;
                self.fetch(host);
                out.kicks.push(host);
            }
        }
        if let Some(t) = self.deadline(host) {
            self.hosts[host as usize]
                .deadline
                .arm(host, t.max(now), out);
        }
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, _now: Time, _out: &mut Out) {
        panic!("host-based traffic addressed to switch {sw}: {pkt:?}");
    }

    fn progress(&self) -> (u64, u64) {
        (self.delivered, self.total)
    }
}
