//! Recovery (docs/host.md, "Loss recovery"): the timers of the running exchange, each with
//! exponential backoff and at most `recovery_window` frames per firing, and what recovers a
//! lost frame.
//!
//! - Sender: every Data frame leaves numbered (`SEQ_VALID | n` in `dst_id`, counted per
//!   worker); the block's log maps each number to the frame it carried. The switch turns the
//!   frame that reveals a gap into a NACK naming the gap, and exactly those frames are sent
//!   again ([`Engine::on_nack`]). After the block's last numbered frame a tail probe asks the
//!   switch which of them it misses (again on the resend timeout while unanswered). A worker
//!   with nothing to send in a block probes at its start. The switch counts each worker's
//!   first clean probe (nothing missing) of the block, and the last one becomes the all-sent
//!   notice to every worker (`sgnn_switch::recovery`, "All sent").
//! - Receiver: a cell still incomplete after the fetch timeout, or shortly after the
//!   all-sent notice came (its Result was lost, not a contribution), is pulled from
//!   the switch's aggregator; an aggregate that is gone, or stops growing, completes from raw
//!   values fetched from their owners. BlockDone is repeated until the switch advances.
//! - The baseline's fetch timer and final barrier, and answering peers' fetches.

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::recovery::{unpack_range, PULL_GONE, SEQ_PROBE};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, ALL_NEIGHBOURS};

use super::block::BlockState;
use super::transmit::Queued;
use super::{Engine, Phase};
use crate::class::TrafficClass;
use crate::view::WorkerView;

/// Where number `n` is in the block's log: the latest frame sent with that number in this
/// block, if any (numbers before the block's first are not).
fn log_index(bs: &BlockState, n: u16) -> Option<usize> {
    let off = n.wrapping_sub(bs.seq_start) as usize;
    let last = bs.log.len().checked_sub(1)?;
    (off <= last).then(|| off + (last - off) / (1 << 16) * (1 << 16))
}

impl Engine {
    /// Fires the fetch (pull), tail-probe and BlockDone timers of the running exchange (and
    /// the baseline's fetch timer and final barrier) due at `now`.
    pub(super) fn recovery_timers(&mut self, now: u64) {
        let view = self.view.clone();
        let max = self.cfg.max_backoff_ns;
        // While this worker still makes first transmissions its peers most likely do too:
        // what is missing is probably not lost yet; unless every feeder said the switch holds
        // all its frames.
        let sending =
            self.data_pending() && !matches!(&self.phase, Phase::Block(bs) if bs.all_sent);
        if sending {
            if let Phase::Block(bs) = &mut self.phase {
                bs.fetch_at = bs.fetch_at.max(now + self.cfg.fetch_timeout_ns);
            } else if let Phase::Host(hs) = &mut self.phase {
                hs.fetch_at = hs.fetch_at.max(now + self.cfg.fetch_timeout_ns);
            }
        }
        let sends_left = self.sends_left();
        match &mut self.phase {
            Phase::Block(bs) => {
                if bs.incomplete > 0 && now >= bs.fetch_at && !sending {
                    bs.fetch_at = now + bs.fetch_backoff;
                    bs.fetch_backoff = (bs.fetch_backoff * 2).min(max);
                    self.fetch_missing_block(now);
                }
                let Phase::Block(bs) = &mut self.phase else {
                    unreachable!()
                };
                if bs.probe_at.is_some_and(|p| now >= p) && !sends_left {
                    self.send_tail_probe(now, true);
                }
                let Phase::Block(bs) = &mut self.phase else {
                    unreachable!()
                };
                if bs.done_at.is_some_and(|d| now >= d) {
                    bs.done_at = Some(now + bs.advance_backoff);
                    bs.advance_backoff = (bs.advance_backoff * 2).min(max);
                    bs.done_sent += 1;
                    let b = bs.b;
                    self.stats.block_done_resent += 1;
                    self.send_block_done(self.round, b);
                }
            }
            Phase::Host(hs) if hs.missing > 0 && now >= hs.fetch_at && !sending => {
                hs.fetch_at = now + hs.fetch_backoff;
                hs.fetch_backoff = (hs.fetch_backoff * 2).min(max);
                self.fetch_missing_host(now, &view);
            }
            Phase::Finishing { at, backoff, sent } if now >= *at => {
                *at = now + *backoff;
                *backoff = (*backoff * 2).min(max);
                *sent += 1;
                self.stats.block_done_resent += 1;
                self.send_block_done(0, 0);
            }
            _ => {}
        }
    }

    /// Whether the running block still has numbered Data frames to send: first
    /// transmissions, or retransmissions queued.
    pub(super) fn sends_left(&self) -> bool {
        match &self.phase {
            Phase::Block(bs) => bs.retx_queued > 0 || self.data_pending(),
            _ => false,
        }
    }

    /// A frame leaves: a Data frame of the running block takes the next number and goes in
    /// the block's log; after the block's last one, the tail probe follows.
    pub(super) fn number_data(&mut self, now: u64, class: TrafficClass, q: &mut Queued) {
        if !q.is_numbered_data() {
            return;
        }
        let n = self.seq;
        self.seq = n.wrapping_add(1);
        q.set_seq(n);
        let (src, g) = (q.sgnn.src_id, q.sgnn.segment as usize);
        let segs = self.segs();
        let view = self.view.clone();
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        if let Some(&i) = view.blocks[bs.b].source_index.get(&src) {
            let k = i as usize * segs + g;
            bs.log.push(k as u32);
            if class == TrafficClass::Recovery && bs.retx_pending.get(k) == Some(&true) {
                bs.retx_pending[k] = false;
                bs.retx_queued -= 1;
            }
        }
        // Whatever the switch said before, it has not seen this one yet.
        bs.tail_dirty = true;
        bs.probe_at = None;
        if !self.sends_left() {
            self.send_tail_probe(now, false);
        }
    }

    /// Asks the switch which of this worker's numbered frames it misses (an Ack to the switch
    /// with `dst_id` `SEQ_PROBE`, the next number in `src_id` and the NACKs known in
    /// `count`); `again`: the last probe went unanswered.
    pub(super) fn send_tail_probe(&mut self, now: u64, again: bool) {
        let max = self.cfg.max_backoff_ns;
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        if again {
            bs.probe_backoff = (bs.probe_backoff * 2).min(max);
            self.stats.resend_timeouts += 1;
        } else {
            bs.probe_backoff = self.cfg.resend_timeout_ns;
        }
        bs.probe_at = Some(now + bs.probe_backoff);
        let b = bs.b;
        let mut h = self.header(PacketType::Ack, b, 0);
        h.dst_id = SEQ_PROBE;
        h.src_id = self.seq as u32;
        // The NACKs this worker knows of: the switch counts the probe clean only if it sent
        // no other (a lost NACK's gap is not resent yet).
        h.count = self.nacks_known;
        self.stats.tail_probes += 1;
        self.stats.acks_sent += 1;
        self.emit(TrafficClass::Recovery, self.cfg.switch_ip, h, None);
    }

    /// The switch's NACK: an Ack with RESEND naming the gap it just found in this worker's
    /// numbers (`src_id`, `lo << 16 | hi`), the gap before it (`dst_id`), the gaps found so
    /// far (`count`) and the number it expects next (`segment`). A bounce (the Data frame that
    /// revealed the gap, not processed) and a tail probe's answer look the same; the answer
    /// repeats the last gap when there is no new one.
    pub(super) fn on_nack(&mut self, s: &Repr) {
        let delta = s.count.wrapping_sub(self.nacks_known);
        let (lo, hi) = unpack_range(s.src_id);
        if delta == 0 {
            self.stats.acks_used += 1;
        } else {
            // Not progress: a switch that lost its state (restarted mid-layer) NACKs every
            // frame, and the health probe must still find that out.
            self.stats.nacks += 1;
            let ranges = match delta {
                1 => vec![(lo, hi)],
                // The gap before this one, unless this is a probe's answer without a new gap:
                // it repeats the last gap in both fields (the switch keeps only the last).
                2 if s.dst_id != s.src_id => vec![unpack_range(s.dst_id), (lo, hi)],
                // NACKs were lost and their ranges are unknown: everything after the last
                // gap known, up to the end of this one (frames that did arrive are dropped as
                // duplicates by the switch's `src_seen`).
                _ => {
                    let from = match (&self.phase, self.nack_hi) {
                        (_, Some(h)) => h.wrapping_add(1),
                        (Phase::Block(bs), None) => bs.seq_start,
                        _ => lo,
                    };
                    vec![(from, hi)]
                }
            };
            self.nacks_known = s.count;
            self.nack_hi = Some(hi);
            for (lo, hi) in ranges {
                self.retransmit(lo, hi);
            }
        }
        // The switch expects the number this worker would give its next frame, and none is
        // left to send: it holds every one.
        let clean = s.segment == self.seq && !self.sends_left();
        if let Phase::Block(bs) = &mut self.phase {
            if clean && bs.tail_dirty {
                bs.tail_dirty = false;
                bs.probe_at = None;
            }
        }
    }

    /// Queues again the frames numbered `lo..=hi` in the running block (each once, and not
    /// one already queued).
    fn retransmit(&mut self, lo: u16, hi: u16) {
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        let Some(end) = log_index(bs, hi) else {
            // A gap in an earlier block's frames: nothing to do for them now.
            return;
        };
        let start = log_index(bs, lo).filter(|&i| i <= end).unwrap_or(0);
        let mut ks = Vec::new();
        for i in start..=end {
            let k = bs.log[i] as usize;
            if !bs.retx_pending[k] {
                bs.retx_pending[k] = true;
                bs.retx_queued += 1;
                ks.push(k);
            }
        }
        if !ks.is_empty() {
            // The tail probe follows the last of them.
            bs.probe_at = None;
        }
        let b = bs.b;
        let segs = self.segs();
        for k in ks {
            self.stats.retransmissions += 1;
            tracing::debug!(
                "worker {}: block {b} of round {}: resend vertex {} segment {} on a NACK",
                self.view.worker,
                self.round,
                self.view.blocks[b].sources[k / segs].vertex,
                k % segs
            );
            self.queue_data(TrafficClass::Recovery, k);
        }
    }

    /// The switch's all-sent notice for the running block: every worker's clean tail probe
    /// was counted, so the switch holds every contribution of the block and a cell still
    /// incomplete lacks a lost Result (or replica): pull it soon, not after the timeout. The
    /// notice answers this worker's own probe too (its clean probe was among those counted).
    pub(super) fn on_all_sent(&mut self, now: u64) {
        let sends_left = self.sends_left();
        let Phase::Block(bs) = &mut self.phase else {
            self.stats.stale += 1;
            return;
        };
        if std::mem::replace(&mut bs.all_sent, true) {
            self.stats.stale += 1;
            return;
        }
        self.stats.acks_used += 1;
        self.stats.all_sent += 1;
        if !sends_left {
            bs.tail_dirty = false;
            bs.probe_at = None;
        }
        if bs.incomplete > 0 {
            bs.fetch_at = bs.fetch_at.min(now + self.cfg.fetch_timeout_ns / 2);
            bs.fetch_backoff = self.cfg.fetch_timeout_ns;
        }
    }

    /// A pull's answer with less than the whole aggregate: `src_id` `PULL_GONE` (the aggregate
    /// is gone), or a partial sum with its count. A gone aggregate, or one that stopped
    /// growing (over three pulls once the all-sent notice came, or over nine: without it a
    /// feeder may still be resending), completes from its sources' raw values.
    pub(super) fn on_pull_partial(&mut self, _now: u64, k: usize, s: &Repr) {
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        let all_sent = bs.all_sent;
        let c = &mut bs.cells[k];
        if c.done || c.raw {
            self.stats.results_ignored += 1;
            return;
        }
        if s.src_id == PULL_GONE && s.count == 0 {
            self.stats.pulled_gone += 1;
            c.raw = true;
        } else {
            self.stats.pulled_partials += 1;
            if c.partial.is_some_and(|p| p >= s.count) {
                c.stuck += 1;
            } else {
                c.stuck = 0;
            }
            c.partial = Some(s.count);
            if (all_sent && c.stuck >= 2) || c.stuck >= 8 {
                c.raw = true;
                if all_sent {
                    self.stats.given_up_after_all_sent += 1;
                }
            }
        }
        if c.raw {
            self.fetch_cell_raw(k);
        }
    }

    /// Pulls incomplete cells from the switch (or fetches their raw contributions when their
    /// aggregate is gone), and fetches replicated raw vertices not received.
    fn fetch_missing_block(&mut self, now: u64) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let window = self.cfg.recovery_window.max(1);
        let s = self.segs();
        let block = &view.blocks[bs.b];
        let Some(cur) = self.cur.as_ref() else { return };
        // At most `window` frames: a pull per cell, or for a cell gone raw a fetch per
        // (source, segment) not cached and not already asked for in this firing.
        let mut pulls = Vec::new();
        let mut raws: Vec<(u32, u16, u32, u16)> = Vec::new();
        let mut asked = std::collections::HashSet::new();
        for (k, cell) in bs.cells.iter().enumerate() {
            if pulls.len() + raws.len() >= window {
                break;
            }
            if cell.done {
                continue;
            }
            if cell.raw {
                let (d, g) = (k / s, (k % s) as u16);
                for src in block.sources_of(d) {
                    if pulls.len() + raws.len() < window
                        && !cur.raw.contains_key(&(src.vertex, g))
                        && asked.insert((src.vertex, g))
                    {
                        raws.push((src.vertex, g, block.dests[d].vertex, src.worker));
                    }
                }
            } else {
                pulls.push(k);
            }
        }
        // Replicated raw vertices not received: from their owners, for all neighbours.
        let room = window.saturating_sub(pulls.len() + raws.len());
        let replicas: Vec<(u32, u16, u32, u16)> = bs
            .raw_done
            .iter()
            .enumerate()
            .filter(|(_, done)| !**done)
            .map(|(k, _)| {
                let r = block.raw_in[k / s];
                (r.vertex, (k % s) as u16, ALL_NEIGHBOURS, r.worker)
            })
            .take(room)
            .collect();
        let b = bs.b;
        self.stats.fetch_timeouts += 1;
        self.rate.on_congestion(now);
        for k in pulls {
            let dest = block.dests[k / s];
            let mut h = self.header(PacketType::FetchReq, b, (k % s) as u16);
            h.src_id = dest.probe_src;
            h.pass = dest.probe_pass;
            h.dst_id = dest.vertex;
            self.stats.pulls += 1;
            tracing::debug!(
                "worker {}: block {b} of round {}: pull vertex {} segment {} from the switch",
                self.view.worker,
                self.round,
                dest.vertex,
                k % s
            );
            self.emit(TrafficClass::Recovery, self.cfg.switch_ip, h, None);
        }
        for (src, g, dst, owner) in raws {
            self.send_fetch(b, src, g, dst, owner);
        }
        for (src, g, dst, owner) in replicas {
            self.send_fetch(b, src, g, dst, owner);
        }
    }

    /// Fetches the raw contributions of cell `k` not in the cache from their owners.
    fn fetch_cell_raw(&mut self, k: usize) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs as usize;
        let (d, g) = (k / s, (k % s) as u16);
        let block = &view.blocks[bs.b];
        let wanted: Vec<(u32, u16)> = block
            .sources_of(d)
            .iter()
            .filter(|src| !cur.raw.contains_key(&(src.vertex, g)))
            .map(|src| (src.vertex, src.worker))
            .collect();
        let (b, dst) = (bs.b, block.dests[d].vertex);
        for (src, owner) in wanted {
            self.send_fetch(b, src, g, dst, owner);
        }
    }

    fn send_fetch(&mut self, b: usize, src: u32, g: u16, dst: u32, owner: u16) {
        let mut h = self.header(PacketType::FetchReq, b, g);
        h.src_id = src;
        h.dst_id = dst;
        self.stats.fetches_sent += 1;
        tracing::debug!(
            "worker {}: block {b} of round {}: fetch vertex {src} segment {g} for {dst} from worker {owner}",
            self.view.worker,
            self.round
        );
        self.emit(TrafficClass::Recovery, worker_ip(owner), h, None);
    }

    fn fetch_missing_host(&mut self, now: u64, view: &WorkerView) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Host(hs) = &self.phase else { return };
        let s = cur.segs;
        let wanted: Vec<(u32, u16, u16)> = view
            .host_based
            .needs
            .iter()
            .flat_map(|need| (0..s).map(move |g| (need.vertex, g, need.worker)))
            .zip(&hs.received)
            .filter(|&(_, &got)| !got)
            .map(|(w, _)| w)
            .take(self.cfg.recovery_window.max(1))
            .collect();
        self.stats.fetch_timeouts += 1;
        self.rate.on_congestion(now);
        for (src, g, owner) in wanted {
            let mut h = self.header(PacketType::FetchReq, 0, g);
            h.src_id = src;
            h.dst_id = ALL_NEIGHBOURS;
            self.stats.fetches_sent += 1;
            tracing::debug!(
                "worker {}: host-based round {}: fetch vertex {src} segment {g} from worker {owner}",
                self.view.worker,
                self.round
            );
            self.emit(TrafficClass::Recovery, worker_ip(owner), h, None);
        }
    }

    /// Answers a FetchReq from the round's features: the raw contribution, as a Bypass with
    /// RESEND, straight to the requester (the switch forwards it by IPv4).
    pub(super) fn serve_fetch(&mut self, s: &Repr) {
        let data = [self.cur.as_ref(), self.prev.as_ref()]
            .into_iter()
            .flatten()
            .find(|c| c.round == s.round);
        let Some(data) = data else {
            self.stats.stale += 1;
            return;
        };
        if s.segment >= data.segs || s.worker_id >= self.view.workers {
            self.stats.unexpected += 1;
            return;
        }
        let Some((lanes, _)) =
            self.view
                .contribution(&data.enc, data.segs as usize, s.src_id, s.segment as usize)
        else {
            self.stats.unexpected += 1;
            return;
        };
        let mut h = Repr::new(PacketType::Bypass);
        h.worker_id = self.view.worker;
        h.src_id = s.src_id;
        h.dst_id = s.dst_id;
        h.block_id = s.block_id;
        h.round = s.round;
        h.segment = s.segment;
        h.frac_bits = self.view.fixed.frac_bits;
        h.flags.resend = true;
        self.stats.fetches_answered += 1;
        self.emit(
            TrafficClass::Recovery,
            worker_ip(s.worker_id),
            h,
            Some(&lanes),
        );
    }
}
