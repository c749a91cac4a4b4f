//! [`Deliver`]: capacity-aware delivery (`sgnn_plan::delivery`), the engine of `multicast`,
//! `partials` and `switchgnn_auto`.
//!
//! Each worker sends its raw vertices (block field 0) and its pre-aggregated partials (block
//! field 1), one frame per segment, in the order of `Tables::send` (merged by the aggregator
//! row they feed, so sums complete steadily). The switch:
//! - replicates a raw frame to every worker of `Tables::mcast` on arrival (the packet
//!   replication engine: no recirculation);
//! - adds a raw frame into every aggregator row of `Tables::r_rows`, pass 0 on arrival and
//!   `k - 1` passes on the recirculation path (as [`super::SwitchGnn`] models it);
//! - adds a partial into its destination's row in the arrival pass;
//! - sends a row's sum to the destination's worker once its count reaches
//!   `Tables::row_expected`, and frees the aggregator.
//!
//! When the in-switch destinations do not fit the switch memory at once they are cut into
//! blocks (`Tables::blocks`): a worker sends block `b`'s share of its list, then waits; the switch counts the block's completed sums and, when the last one
//! completes, multicasts BlockAdvance (priority 7) to every worker, which starts block `b + 1`.
//! Workers send no BlockDone: the switch knows every row's expected count. (`R` is only chosen
//! with one block, so a raw frame never has to be sent twice.)

use sgnn_plan::delivery::Tables;

use super::{control_pkt, data_pkt, Rows, SwitchCounters, PRIO_DATA, PRIO_RESULT};
use crate::net::{App, Kind, Out, Pkt, Time};

/// Block field of a raw frame.
const RAW: u32 = 0;
/// Block field of a partial.
const PARTIAL: u32 = 1;

#[derive(Debug, Clone, Default)]
struct DHost {
    /// The block being sent, and the highest block the switch has advanced to.
    block: u32,
    allowed: u32,
    /// Position in `Tables::send` and the segment being sent.
    pos: usize,
    seg: u32,
}

/// Capacity-aware delivery of one layer (see the module doc).
pub struct Deliver {
    t: Tables,
    segments: u32,
    switch_node: u32,
    partition: Vec<u32>,
    hosts: Vec<DHost>,
    rows: Rows,
    /// Completed sums per block.
    done_in_block: Vec<u32>,
    delivered: u64,
    total: u64,
    /// When the last expected frame arrived.
    pub finish: Option<Time>,
    /// Per aggregator (slot x segment) of the current block, the row whose generation holds
    /// it while its sum is incomplete (`u32::MAX`: free).
    holder: Vec<u32>,
}

impl Deliver {
    /// The delivery of `t` for a plan partitioned by `partition`, with `segments` frames per
    /// vector, on a star whose switch is node `switch_node`.
    pub fn new(
        t: Tables,
        partition: &[u32],
        segments: u32,
        switch_node: u32,
        recirc_bps: u64,
    ) -> Deliver {
        let rows = t.row_dst.len();
        let total = (t.raw_deliveries() + rows as u64) * segments as u64;
        let m = t.raw_send.len();
        Deliver {
            segments,
            switch_node,
            partition: partition.to_vec(),
            hosts: vec![DHost::default(); m],
            rows: Rows::new(t.row_expected.clone(), segments, recirc_bps),
            done_in_block: vec![0; t.blocks as usize],
            delivered: 0,
            total,
            finish: if total == 0 { Some(0) } else { None },
            holder: vec![u32::MAX; rows.min(t.capacity_rows as usize) * segments as usize],
            t,
        }
    }

    /// Switch counters.
    pub fn counters(&self) -> &SwitchCounters {
        &self.rows.counters
    }

    fn add(&mut self, row: u32, seg: u32, at: Time, now: Time, sw: u32, out: &mut Out) {
        // The switch's aggregator of this contribution (rows of a recycling plan share them).
        let agg = (self.t.row_slot[row as usize] * self.segments + seg) as usize;
        if let Some(h) = self.holder.get_mut(agg) {
            if *h != row {
                if *h != u32::MAX {
                    self.rows.counters.generation_conflicts += 1;
                }
                *h = row;
            }
        }
        let Some(done) = self.rows.add(row, seg, at, now) else {
            return;
        };
        if let Some(h) = self.holder.get_mut(agg) {
            if *h == row {
                *h = u32::MAX;
            }
        }
        let dst = self.partition[self.t.row_dst[row as usize] as usize];
        out.emits.push((
            done,
            sw,
            data_pkt(Kind::Result, PRIO_RESULT, sw, dst, 0, row, seg),
        ));
        // Every segment of every row of the block done: advance.
        let b = self.t.block_of_row(row);
        self.done_in_block[b as usize] += 1;
        if self.done_in_block[b as usize] == self.t.rows_in_block(b) * self.segments
            && b + 1 < self.t.blocks
        {
            for w in 0..self.hosts.len() as u32 {
                out.emits
                    .push((done, sw, control_pkt(Kind::BlockAdvance, sw, w, b + 1)));
            }
        }
    }
}

impl App for Deliver {
    fn host_next(&mut self, host: u32, _now: Time) -> Option<Pkt> {
        let q = host as usize;
        let h = &mut self.hosts[q];
        let off = &self.t.send_block_off[q];
        while h.pos >= off[h.block as usize + 1] {
            if h.block >= h.allowed {
                return None;
            }
            h.block += 1;
        }
        let s = self.t.send[q][h.pos];
        let block = if s.partial { PARTIAL } else { RAW };
        let pkt = data_pkt(
            Kind::Data,
            PRIO_DATA,
            host,
            self.switch_node,
            block,
            s.vertex,
            h.seg,
        );
        h.seg += 1;
        if h.seg == self.segments {
            h.seg = 0;
            h.pos += 1;
        }
        Some(pkt)
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out) {
        if pkt.kind == Kind::BlockAdvance {
            let h = &mut self.hosts[host as usize];
            h.allowed = h.allowed.max(pkt.block);
            out.kicks.push(host);
            return;
        }
        debug_assert!(matches!(pkt.kind, Kind::Result | Kind::Raw));
        self.delivered += 1;
        if self.delivered == self.total {
            self.finish = Some(now);
        }
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out) {
        assert_eq!(pkt.kind, Kind::Data, "switch got {pkt:?}");
        let v = pkt.a as usize;
        let seg = pkt.seg as u32;
        if pkt.block == PARTIAL {
            let row = self.t.row_of[v];
            self.add(row, seg, now, now, sw, out);
            return;
        }
        for i in self.t.mcast_off[v]..self.t.mcast_off[v + 1] {
            let w = self.t.mcast[i];
            out.emits.push((
                now,
                sw,
                data_pkt(Kind::Raw, PRIO_DATA, sw, w, 0, pkt.a, seg),
            ));
        }
        let (lo, hi) = (self.t.r_off[v], self.t.r_off[v + 1]);
        let pass = self.rows.passes(now, (hi - lo) as u64);
        for p in 0..hi - lo {
            let row = self.t.r_rows[lo + p];
            self.add(row, seg, pass(p), now, sw, out);
        }
    }

    fn progress(&self) -> (u64, u64) {
        (self.delivered, self.total)
    }

    fn gauges(&self, now: Time) -> crate::net::Gauges {
        self.rows.gauges(now)
    }
}
