//! Congestion signals between workers (docs/host.md, "Rate control"): the notification point
//! and the reaction point of DCQCN, in both modes alike.
//!
//! A worker that receives an ECN-marked frame tells the workers whose sending filled the
//! marked queue, at most once per peer per `rate.decrease_interval_ns`, with a congestion
//! notification ([`sgnn_wire::CNP`], an Ack to the peer):
//! - a raw frame (the baseline's features, a replica of a multicast vertex, a fetched value):
//!   its sender, the frame's `worker_id`;
//! - a Result: every worker that contributed to the sum, as the block's view lists them (the
//!   switch sends the sum, but the senders of its contributions set its rate);
//! - the switch's own Acks and block synchronisation: nobody (no worker's sending made them).
//!
//! A worker that receives a notification from a peer halves its rate (the rate controller's
//! one congestion signal, with loss). Marks thus slow the senders whose frames queued, not
//! the receiver whose downlink they queued on.

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, CNP};

use super::Engine;
use crate::class::TrafficClass;

impl Engine {
    /// An ECN-marked frame `s` came in at `now`: notifies the workers whose sending made the
    /// queue it was marked in.
    pub(super) fn notify_congestion(&mut self, now: u64, s: &Repr) {
        let mut senders: Vec<u16> = Vec::new();
        match s.packet_type {
            PacketType::Bypass => senders.push(s.worker_id),
            PacketType::Result => {
                let Some(block) = self.view.blocks.get(s.block_id as usize) else {
                    return;
                };
                let Some(&d) = block.dest_index.get(&s.dst_id) else {
                    return;
                };
                senders.extend(block.sources_of(d as usize).iter().map(|r| r.worker));
                senders.sort_unstable();
                senders.dedup();
            }
            _ => return,
        }
        let interval = self.cfg.rate.decrease_interval_ns;
        for w in senders {
            if w == self.view.worker {
                continue;
            }
            let Some(last) = self.last_cnp.get_mut(w as usize) else {
                continue;
            };
            if last.is_some_and(|t| now < t.saturating_add(interval)) {
                continue;
            }
            *last = Some(now);
            let mut a = Repr::new(PacketType::Ack);
            a.worker_id = self.view.worker;
            a.dst_id = CNP;
            a.src_id = w as u32;
            self.stats.cnps_sent += 1;
            self.emit(TrafficClass::Control, worker_ip(w), a, None);
        }
    }

    /// A congestion notification from peer `from` at `now`: a congestion signal for this
    /// worker's rate control. One from a worker outside the plan, or naming another worker as
    /// its target, is ignored (counted as unexpected).
    pub(super) fn on_cnp(&mut self, now: u64, s: &Repr) {
        let from = s.worker_id;
        if from as usize >= self.view.workers as usize
            || from == self.view.worker
            || s.src_id != self.view.worker as u32
        {
            self.stats.unexpected += 1;
            return;
        }
        self.stats.cnps_received += 1;
        self.rate.on_congestion(now);
    }
}
