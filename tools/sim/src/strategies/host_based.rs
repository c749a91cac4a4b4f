//! [`HostBased`]: BNS-GCN with p = 1 (see the module above for the model).

use sgnn_plan::Plan;

use super::{data_pkt, PRIO_DATA};
use crate::net::{App, Kind, Out, Pkt, Time};

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
}

impl HostBased {
    /// The exchange of one layer under `plan`'s partition.
    pub fn new(plan: &Plan) -> HostBased {
        let m = plan.workers() as usize;
        let n = plan.graph.num_vertices();
        let part = &plan.partition;
        let mut counts = vec![0usize; m * m + 1];
        let mut parts: Vec<u32> = Vec::new();
        let remote = |u: u32, parts: &mut Vec<u32>| {
            parts.clear();
            let pu = part[u as usize];
            parts.extend(
                plan.graph
                    .neighbors(u)
                    .iter()
                    .map(|&v| part[v as usize])
                    .filter(|&p| p != pu),
            );
            parts.sort_unstable();
            parts.dedup();
        };
        for u in 0..n as u32 {
            remote(u, &mut parts);
            let pu = part[u as usize] as usize;
            for &d in &parts {
                counts[pu * m + d as usize + 1] += 1;
            }
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let off = counts.clone();
        let mut fill = counts;
        let mut verts = vec![0u32; off[m * m]];
        for u in 0..n as u32 {
            remote(u, &mut parts);
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
        }
    }
}

impl App for HostBased {
    fn host_next(&mut self, host: u32, _now: Time) -> Option<Pkt> {
        let m = self.workers as usize;
        let h = &mut self.hosts[host as usize];
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
        let (d, v) = h.current.expect("set above");
        let pkt = data_pkt(Kind::Raw, PRIO_DATA, host, d, 0, v, h.seg);
        h.seg += 1;
        if h.seg == self.segments {
            h.current = None;
        }
        Some(pkt)
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, _out: &mut Out) {
        debug_assert_eq!(pkt.kind, Kind::Raw);
        let h = &mut self.hosts[host as usize];
        h.got += 1;
        self.delivered += 1;
        if self.delivered == self.total {
            self.finish = Some(now);
        }
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, _now: Time, _out: &mut Out) {
        panic!("host-based traffic addressed to switch {sw}: {pkt:?}");
    }

    fn progress(&self) -> (u64, u64) {
        (self.delivered, self.total)
    }
}
