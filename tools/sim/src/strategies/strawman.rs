//! [`OneShot`]: in-network aggregation in a single block without block synchronisation; the
//! engine of `strawman` and `unlimited`.
//!
//! **`strawman`** (SwitchGNN paper 2.3.2, problems in 2.4; the planner's
//! `sgnn_plan::traffic::strawman`): no block planning. Every worker uploads each of its
//! boundary vertices once (all `segments` data frames back to back), in the seeded random order
//! of `traffic::strawman_order` (graph-agnostic). The switch copies a source into one
//! aggregator per remote neighbour whose destination has aggregators, and forwards it raw,
//! once per worker, to the workers of the remote neighbours that have none (raw features are
//! cached at the receiver and shared by its vertices). Which destinations get aggregators is
//! the traffic model's first-come rule: in the model's global order, a destination is given
//! aggregators at its first contribution if fewer than `aggregators / segments` destinations
//! hold some, keeps them until its last contribution, and otherwise falls back to its host for
//! the whole layer. The simulator takes these decisions from a replay of that sequential pass
//! (so its bytes equal the model's exactly), then lets the network decide the timing: the
//! workers' streams interleave at the switch in a different order than the model's single
//! sequence, so the *measured* peak aggregator occupancy (`peak_aggregators`) can differ from
//! the model's, and may exceed the switch memory; it is reported, not enforced.
//!
//! **`unlimited`** (the traffic model's `unlimited`, the paper's "UL" lower bound of figure 2):
//! SwitchGNN with unlimited switch memory: one block holding every cross edge, so every
//! destination is aggregated in the switch and no block synchronisation is needed. Each worker
//! uploads its boundary vertices once, in SwitchGNN's send order (the plan's sources in block
//! order, each vertex at its first appearance: GAMR inside each block), and every boundary
//! vertex receives one aggregate. The plan's memory limit is ignored.
//!
//! Recirculation is modelled as in [`super::SwitchGnn`]: a source feeding `k` aggregators uses
//! pass 0 on arrival and `k - 1` passes of a FIFO recirculation path of its own bandwidth; an
//! aggregate leaves when its last contribution's pass completes. Raw copies are multicast on
//! arrival (replication needs no recirculation).

use sgnn_plan::Plan;

use super::{data_pkt, Rows, SwitchCounters, PRIO_DATA, PRIO_RESULT};
use crate::net::{App, Kind, Out, Pkt, Time};

#[derive(Debug, Clone, Default)]
struct OsHost {
    /// Position in the worker's send list and the segment being sent.
    pos: usize,
    seg: u32,
}

/// In-network aggregation of one layer in a single block (see the module doc).
pub struct OneShot {
    segments: u32,
    switch_node: u32,
    partition: Vec<u32>,
    /// Sources each worker uploads, in order: `send[send_off[w]..send_off[w + 1]]`.
    send: Vec<u32>,
    send_off: Vec<usize>,
    /// Aggregator rows source `u` feeds: `targets[t_off[u]..t_off[u + 1]]`.
    targets: Vec<u32>,
    t_off: Vec<usize>,
    /// Workers source `u` is forwarded to raw: `raw[r_off[u]..r_off[u + 1]]`.
    raw: Vec<u32>,
    r_off: Vec<usize>,
    /// Destination vertex of each aggregator row (its expected count is in `rows`).
    row_dst: Vec<u32>,
    hosts: Vec<OsHost>,
    rows: Rows,
    delivered: u64,
    total: u64,
    /// When the last expected frame arrived.
    pub finish: Option<Time>,
}

/// Remote-neighbour counts and the boundary vertices of each worker in `order`.
fn remote_degrees(plan: &Plan) -> Vec<u32> {
    (0..plan.graph.num_vertices() as u32)
        .map(|u| {
            let pu = plan.partition[u as usize];
            plan.graph
                .neighbors(u)
                .iter()
                .filter(|&&v| plan.partition[v as usize] != pu)
                .count() as u32
        })
        .collect()
}

impl OneShot {
    /// `strawman` under `plan`'s partition and switch memory, with the model's `seed`.
    pub fn strawman(plan: &Plan, seed: u64, switch_node: u32, recirc_bps: u64) -> OneShot {
        let order = sgnn_plan::traffic::strawman_order(plan, seed);
        // Replay of the model's sequential pass: which destinations get aggregators.
        let n = plan.graph.num_vertices();
        let capacity = plan.manifest.aggregators / plan.manifest.segments as u64;
        let mut remaining = remote_degrees(plan);
        let mut in_switch = vec![None::<bool>; n];
        let mut in_use = 0u64;
        for &u in &order {
            let pu = plan.partition[u as usize];
            for &v in plan.graph.neighbors(u) {
                if plan.partition[v as usize] == pu {
                    continue;
                }
                let s = in_switch[v as usize].get_or_insert_with(|| {
                    let fits = in_use < capacity;
                    in_use += u64::from(fits);
                    fits
                });
                if *s {
                    remaining[v as usize] -= 1;
                    if remaining[v as usize] == 0 {
                        in_use -= 1;
                    }
                }
            }
        }
        let admitted: Vec<bool> = in_switch.iter().map(|s| s == &Some(true)).collect();
        OneShot::new(plan, &order, &admitted, switch_node, recirc_bps)
    }

    /// `unlimited`: every destination in the switch, SwitchGNN's send order.
    pub fn unlimited(plan: &Plan, switch_node: u32, recirc_bps: u64) -> OneShot {
        let n = plan.graph.num_vertices();
        let mut seen = vec![false; n];
        let mut order = Vec::new();
        for b in &plan.blocks {
            for &u in &b.sources {
                if !std::mem::replace(&mut seen[u as usize], true) {
                    order.push(u);
                }
            }
        }
        OneShot::new(plan, &order, &vec![true; n], switch_node, recirc_bps)
    }

    /// Boundary vertices sent in `order` (each worker its own, in that order); destinations
    /// with `admitted[v]` are aggregated in the switch, the others get raw copies.
    fn new(
        plan: &Plan,
        order: &[u32],
        admitted: &[bool],
        switch_node: u32,
        recirc_bps: u64,
    ) -> OneShot {
        let m = plan.workers() as usize;
        let n = plan.graph.num_vertices();
        let segments = plan.manifest.segments;
        let remote = remote_degrees(plan);
        debug_assert_eq!(
            order.len(),
            remote.iter().filter(|&&r| r > 0).count(),
            "every boundary vertex is sent once"
        );
        // Aggregator rows of admitted boundary vertices.
        let mut row = vec![u32::MAX; n];
        let mut row_dst = Vec::new();
        let mut row_expected = Vec::new();
        for v in 0..n {
            if admitted[v] && remote[v] > 0 {
                row[v] = row_dst.len() as u32;
                row_dst.push(v as u32);
                row_expected.push(remote[v]);
            }
        }
        let mut per_worker: Vec<Vec<u32>> = vec![Vec::new(); m];
        for &u in order {
            per_worker[plan.partition[u as usize] as usize].push(u);
        }
        let mut send_off = vec![0];
        let mut send = Vec::with_capacity(order.len());
        for list in per_worker {
            send.extend(list);
            send_off.push(send.len());
        }
        let (mut targets, mut t_off) = (Vec::new(), vec![0usize; n + 1]);
        let (mut raw, mut r_off) = (Vec::new(), vec![0usize; n + 1]);
        let mut expected = vec![0u64; m];
        for u in 0..n as u32 {
            let pu = plan.partition[u as usize];
            let start = raw.len();
            for &v in plan.graph.neighbors(u) {
                let pv = plan.partition[v as usize];
                if pv == pu {
                    continue;
                }
                if row[v as usize] != u32::MAX {
                    targets.push(row[v as usize]);
                } else if !raw[start..].contains(&pv) {
                    raw.push(pv);
                    expected[pv as usize] += segments as u64;
                }
            }
            t_off[u as usize + 1] = targets.len();
            r_off[u as usize + 1] = raw.len();
        }
        for &v in &row_dst {
            expected[plan.partition[v as usize] as usize] += segments as u64;
        }
        let total = expected.iter().sum();
        OneShot {
            segments,
            switch_node,
            partition: plan.partition.clone(),
            send,
            send_off,
            targets,
            t_off,
            raw,
            r_off,
            rows: Rows::new(row_expected, segments, recirc_bps),
            row_dst,
            hosts: vec![OsHost::default(); m],
            delivered: 0,
            total,
            finish: if total == 0 { Some(0) } else { None },
        }
    }

    /// Destinations aggregated in the switch.
    pub fn in_switch_destinations(&self) -> u64 {
        self.row_dst.len() as u64
    }

    /// Switch counters.
    pub fn counters(&self) -> &SwitchCounters {
        &self.rows.counters
    }
}

impl App for OneShot {
    fn host_next(&mut self, host: u32, _now: Time) -> Option<Pkt> {
        let h = &mut self.hosts[host as usize];
        let i = self.send_off[host as usize] + h.pos;
        if i >= self.send_off[host as usize + 1] {
            return None;
        }
        let u = self.send[i];
        let pkt = data_pkt(Kind::Data, PRIO_DATA, host, self.switch_node, 0, u, h.seg);
        h.seg += 1;
        if h.seg == self.segments {
            h.seg = 0;
            h.pos += 1;
        }
        Some(pkt)
    }

    fn host_recv(&mut self, _host: u32, pkt: Pkt, now: Time, _out: &mut Out) {
        debug_assert!(matches!(pkt.kind, Kind::Result | Kind::Raw));
        self.delivered += 1;
        if self.delivered == self.total {
            self.finish = Some(now);
        }
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out) {
        assert_eq!(pkt.kind, Kind::Data, "switch got {pkt:?}");
        let u = pkt.a as usize;
        let seg = pkt.seg as u32;
        for &w in &self.raw[self.r_off[u]..self.r_off[u + 1]] {
            out.emits.push((
                now,
                sw,
                data_pkt(Kind::Raw, PRIO_DATA, sw, w, 0, pkt.a, seg),
            ));
        }
        let targets = &self.targets[self.t_off[u]..self.t_off[u + 1]];
        let pass = self.rows.passes(now, targets.len() as u64);
        for (p, &row) in targets.iter().enumerate() {
            if let Some(done) = self.rows.add(row, seg, pass(p), now) {
                let dst = self.partition[self.row_dst[row as usize] as usize];
                out.emits.push((
                    done,
                    sw,
                    data_pkt(Kind::Result, PRIO_RESULT, sw, dst, 0, row, seg),
                ));
            }
        }
    }

    fn progress(&self) -> (u64, u64) {
        (self.delivered, self.total)
    }

    fn gauges(&self, now: Time) -> crate::net::Gauges {
        self.rows.gauges(now)
    }
}
