//! The host-based baseline: every boundary vertex is unicast to every remote worker that
//! needs it and summed at the receiver (the switch only forwards by IPv4), and the session
//! ends with one barrier through the switch.

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::codec::accumulate_rows;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, ALL_NEIGHBOURS, LANES};

use super::{Engine, Phase};
use crate::class::TrafficClass;

/// State of a baseline exchange.
#[derive(Debug)]
pub(super) struct HostState {
    pub(super) cursor: usize,
    /// `needs index * segs + g` still missing.
    pub(super) missing: usize,
    /// Per `needs index * segs + g`: received. The values themselves are summed into their
    /// consumers on arrival and not kept (a round's received features were most of a
    /// baseline worker's memory).
    pub(super) received: Vec<bool>,
    pub(super) fetch_at: u64,
    pub(super) fetch_backoff: u64,
}

impl Engine {
    /// Starts a baseline round: every remote feature segment it needs is missing.
    pub(super) fn start_host(&mut self, now: u64, s: usize) {
        let missing = self.view.host_based.needs.len() * s;
        self.phase = Phase::Host(HostState {
            cursor: 0,
            missing,
            received: vec![false; missing],
            fetch_at: now + self.cfg.fetch_timeout_ns,
            fetch_backoff: self.cfg.fetch_timeout_ns,
        });
        self.check_host_complete(now);
    }

    /// Queues the baseline's next first transmission: every boundary vertex to every remote
    /// worker that needs it, segment by segment.
    pub(super) fn next_host_data(&mut self) {
        let view = self.view.clone();
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs as usize;
        let Phase::Host(hs) = &mut self.phase else {
            return;
        };
        let sends = &view.host_based.sends;
        if hs.cursor >= sends.len() * s {
            return;
        }
        let (k, g) = (hs.cursor / s, hs.cursor % s);
        hs.cursor += 1;
        let (local, target) = sends[k];
        let lanes = cur.enc[local as usize * s + g];
        let mut h = self.header(PacketType::Bypass, 0, g as u16);
        h.src_id = view.local_vertices[local as usize];
        h.dst_id = ALL_NEIGHBOURS;
        self.emit(TrafficClass::Data, worker_ip(target), h, Some(&lanes));
    }

    pub(super) fn check_host_complete(&mut self, now: u64) {
        if self.data_pending() {
            return;
        }
        if let Phase::Host(hs) = &self.phase {
            if hs.missing == 0 {
                self.complete_round(now);
            }
        }
    }

    /// A baseline raw contribution (a peer's feature frame or its answer to a fetch), checked
    /// by [`Engine::on_raw`]: added once per segment into every local neighbour of it. `at` is
    /// the source's position in `host_based.consumers`, whose keys are `needs`' vertices in
    /// the same order, so it is also the source's index in `needs`.
    pub(super) fn on_host_raw(
        &mut self,
        now: u64,
        s: &Repr,
        lanes: &[i32; LANES],
        at: Option<usize>,
    ) {
        let view = self.view.clone();
        let segs = self.segs();
        let g = s.segment;
        let src = s.src_id;
        let Some(cur) = self.cur.as_mut() else {
            self.stats.unexpected += 1;
            return;
        };
        let Some(need) = at else {
            self.stats.unexpected += 1;
            return;
        };
        debug_assert_eq!(view.host_based.needs[need].vertex, src);
        // Past the exchange (the round's barrier) every segment it needed has arrived.
        let Phase::Host(hs) = &mut self.phase else {
            self.stats.raw_duplicate += 1;
            return;
        };
        let k = need * segs + g as usize;
        if hs.received[k] {
            self.stats.raw_duplicate += 1;
            return;
        }
        hs.received[k] = true;
        // The consumers' keys are `needs`' vertices in the same order.
        let consumers = view.host_based.consumers.values_at(need).unwrap_or(&[]);
        self.stats.raw_cached += 1;
        let rows = consumers.iter().map(|&i| i as usize * segs + g as usize);
        let sat = accumulate_rows(&mut cur.acc, rows, lanes);
        cur.cells_by_raw += 1;
        self.stats.cells_by_raw += 1;
        self.stats.saturated_lanes += sat as u64;
        self.last_progress = now;
        if let Phase::Host(hs) = &mut self.phase {
            hs.missing -= 1;
            hs.fetch_at = now + self.cfg.fetch_timeout_ns;
            hs.fetch_backoff = self.cfg.fetch_timeout_ns;
        }
        self.check_host_complete(now);
    }

    /// Starts the baseline's final barrier through the switch (block 0 of round 0), so no
    /// worker leaves while a peer may still fetch from it.
    pub(super) fn start_final_barrier(&mut self, now: u64) {
        self.last_progress = now;
        self.send_block_done(0, 0);
        self.phase = Phase::Finishing {
            at: now + self.cfg.advance_timeout_ns,
            backoff: self.cfg.advance_timeout_ns,
            sent: 1,
        };
    }
}
