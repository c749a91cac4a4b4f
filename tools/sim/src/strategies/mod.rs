//! Strategies as host and switch logic ([`App`]s) driven by a real plan.
//!
//! - `host_based` (BNS-GCN, p = 1) and `switchgnn` (every variant, and the delivery
//!   strategies) run the real code: [`RealTraffic`] drives the daemons' engines
//!   (`sgnn-transport`) and one software-switch `Pipeline` per switch, on a star or a
//!   leaf-spine fabric (two-level aggregation, `sgnn_switch::fabric`), with or without loss.
//!   Their models, which computed the same exchange without frames or sums, were removed once
//!   the real code ran every topology and loss rate they did (2026-11-27).
//!
//! The other strategies have their model in their own module: [`g3`], [`strawman`] (also
//! `unlimited`), [`supergcn`], [`hermod`], and the approximate [`emma`], [`grappa`], [`dgs`];
//! host-only ones run on the [`scheduled`] traffic engine.
//!
//! Frames carry the DSCP class of `sgnn_wire::dscp` as their priority queue: block control 7,
//! results 5, data 2.

use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use crate::net::{Kind, Pkt, Time};

mod counters;
pub mod dgs;
pub mod emma;
pub mod g3;
pub mod grappa;
pub mod hermod;
mod real;
pub mod scheduled;
pub mod strawman;
pub mod supergcn;

pub use counters::SwitchCounters;
pub use real::{feature, RealConfig, RealTraffic};
pub use scheduled::ScheduledTraffic;
pub use strawman::OneShot;

/// Priority queue of block control frames (DSCP 46).
pub const PRIO_CONTROL: u8 = 7;
/// Priority queue of results and acks (DSCP 34).
pub const PRIO_RESULT: u8 = 5;
/// Priority queue of feature data (DSCP 10).
pub const PRIO_DATA: u8 = 2;

/// Wire bytes of a data frame (210).
pub const DATA_WIRE: u32 = wire_bytes(DATA_FRAME_LEN) as u32;
/// Wire bytes of a control frame (84).
pub const CONTROL_WIRE: u32 = wire_bytes(CONTROL_FRAME_LEN) as u32;

pub(crate) fn data_pkt(
    kind: Kind,
    prio: u8,
    src: u32,
    dst: u32,
    block: u32,
    a: u32,
    seg: u32,
) -> Pkt {
    Pkt {
        kind,
        prio,
        ecn: false,
        seg: seg as u16,
        wire: DATA_WIRE,
        src,
        dst,
        block,
        a,
    }
}

/// Recirculation passes still to come at `now` on a path busy without gaps until `free`,
/// one pass every `pass`: `ceil((free - now) / pass)` (for [`crate::App::gauges`], which
/// counts a contribution at the time of its pass).
pub(crate) fn passes_pending(free: Time, now: Time, pass: Time) -> u64 {
    free.saturating_sub(now).div_ceil(pass)
}

/// Aggregators in use on one switch. One is booked when the first frame that feeds it
/// arrives, and freed when its last contribution is added: at the completing frame's arrival,
/// or at that frame's recirculation pass for it, which may lie well ahead of the arrival when
/// the recirculation path has a backlog. (Booking at arrival counts an aggregator from
/// slightly before its first pass when that pass is a recirculated one, an upper bound.)
#[derive(Debug, Clone, Default)]
pub(crate) struct Occupancy {
    /// Booked and not yet complete.
    open: u64,
    /// Completion times still ahead of the last [`Occupancy::book`] (earliest first).
    closing: std::collections::BinaryHeap<std::cmp::Reverse<Time>>,
    /// Most aggregators in use at once.
    pub peak: u64,
}

impl Occupancy {
    /// An aggregator starts being fed at `now`; returns how many are in use then.
    pub fn book(&mut self, now: Time) -> u64 {
        while self.closing.peek().is_some_and(|t| t.0 <= now) {
            self.closing.pop();
        }
        self.open += 1;
        let in_use = self.open + self.closing.len() as u64;
        self.peak = self.peak.max(in_use);
        in_use
    }

    /// A booked aggregator got its last contribution (found at `now`), whose pass completes
    /// at `done` (`>= now`): it is freed then.
    pub fn complete(&mut self, now: Time, done: Time) {
        self.open -= 1;
        if done > now {
            self.closing.push(std::cmp::Reverse(done));
        }
    }

    /// Aggregators in use at `now` (not before the last `book`).
    pub fn in_use(&self, now: Time) -> u64 {
        self.open + self.closing.iter().filter(|t| t.0 > now).count() as u64
    }
}

/// One switch's aggregator rows (`segments` aggregators each, with an expected count per row)
/// and its recirculation path, as the single-round strategies ([`OneShot`]) model
/// them: a frame feeding `k` rows adds into the first in its arrival pass and into the others
/// on `k - 1` passes of a FIFO recirculation path of its own bandwidth (the time is computed,
/// not simulated pass by pass); an aggregator completes at its last contribution's pass.
#[derive(Debug, Clone)]
pub(crate) struct Rows {
    segments: u32,
    expected: Vec<u32>,
    counts: Vec<u32>,
    ready: Vec<Time>,
    occ: Occupancy,
    recirc_free: Time,
    recirc_pass: Time,
    /// Switch counters.
    pub counters: SwitchCounters,
}

impl Rows {
    /// Rows with these expected counts, `segments` aggregators each.
    pub fn new(expected: Vec<u32>, segments: u32, recirc_bps: u64) -> Rows {
        let aggs = expected.len() * segments as usize;
        Rows {
            segments,
            expected,
            counts: vec![0; aggs],
            ready: vec![0; aggs],
            occ: Occupancy::default(),
            recirc_free: 0,
            recirc_pass: crate::net::tx_time(DATA_WIRE as u64, recirc_bps),
            counters: SwitchCounters::default(),
        }
    }

    /// The pass times of a frame arriving at `now` that feeds `k` rows: pass 0 at `now`, pass
    /// `p > 0` on the recirculation path (booked here).
    pub fn passes(&mut self, now: Time, k: u64) -> impl Fn(usize) -> Time {
        let start = self.recirc_free.max(now);
        if k > 1 {
            self.counters.max_recirc_backlog = self.counters.max_recirc_backlog.max(start - now);
            self.recirc_free = start + (k - 1) * self.recirc_pass;
            self.counters.recirculations += k - 1;
        }
        let pass = self.recirc_pass;
        move |p| if p == 0 { now } else { start + p as u64 * pass }
    }

    /// Adds one contribution into segment `seg` of `row` at pass time `at` (the frame arrived
    /// at `now`). Returns when the aggregator completes, if this was its last contribution (it
    /// is then free again).
    pub fn add(&mut self, row: u32, seg: u32, at: Time, now: Time) -> Option<Time> {
        let agg = (row * self.segments + seg) as usize;
        if self.counts[agg] == 0 {
            self.occ.book(now);
            self.counters.peak_aggregators = self.occ.peak;
        }
        self.counts[agg] += 1;
        self.ready[agg] = self.ready[agg].max(at);
        self.counters.contributions += 1;
        if self.counts[agg] < self.expected[row as usize] {
            return None;
        }
        let done = self.ready[agg];
        self.occ.complete(now, done);
        self.counts[agg] = 0;
        self.ready[agg] = 0;
        self.counters.results += 1;
        Some(done)
    }

    /// As `SwitchGnn`'s: aggregators from the arrival of the first frame that feeds one to its
    /// last contribution's pass, contributions at the time of their pass (passes still queued
    /// on the recirculation path subtracted).
    pub fn gauges(&self, now: Time) -> crate::net::Gauges {
        let pending = passes_pending(self.recirc_free, now, self.recirc_pass);
        crate::net::Gauges {
            aggregators_in_use: self.occ.in_use(now),
            contributions: self.counters.contributions - pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Occupancy;

    #[test]
    fn an_aggregator_stays_in_use_until_its_last_pass() {
        let mut o = Occupancy::default();
        assert_eq!(o.book(0), 1);
        assert_eq!(o.book(1), 2);
        // The first completes at once, the second only at its pass at t = 10.
        o.complete(2, 2);
        o.complete(3, 10);
        assert_eq!(
            o.in_use(5),
            1,
            "freed at its pass, not at the frame's arrival"
        );
        assert_eq!(o.in_use(10), 0);
        assert_eq!(o.book(4), 2, "the one still recirculating counts");
        assert_eq!(o.peak, 2);
        assert_eq!(o.book(11), 2, "the t = 10 one is free by t = 11");
        assert_eq!(o.in_use(11), 2, "both booked, neither complete");
        assert_eq!(o.peak, 2);
    }
}
