//! Recovery: the timers of the running exchange (fetch what is missing, resend what is not
//! acknowledged, send BlockDone again, and the baseline's final barrier), each with
//! exponential backoff and at most `recovery_window` frames per firing; and answering peers'
//! fetch requests from the round's features.

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, ALL_NEIGHBOURS};

use super::{Engine, Phase};
use crate::class::TrafficClass;
use crate::view::WorkerView;

impl Engine {
    /// Fires the fetch, resend and BlockDone timers of the running exchange (and the
    /// baseline's final barrier) due at `now`.
    pub(super) fn recovery_timers(&mut self, now: u64) {
        let view = self.view.clone();
        let max = self.cfg.max_backoff_ns;
        // While this worker still makes first transmissions its peers most likely do too:
        // what is missing is probably not lost yet.
        let sending = self.data_pending();
        if sending {
            if let Phase::Block(bs) = &mut self.phase {
                bs.fetch_at = bs.fetch_at.max(now + self.cfg.fetch_timeout_ns);
            } else if let Phase::Host(hs) = &mut self.phase {
                hs.fetch_at = hs.fetch_at.max(now + self.cfg.fetch_timeout_ns);
            }
        }
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
                if bs.unacked > 0 && bs.resend_at.is_some_and(|r| now >= r) {
                    bs.resend_at = Some(now + bs.resend_backoff);
                    bs.resend_backoff = (bs.resend_backoff * 2).min(max);
                    self.resend_unacked();
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

    fn fetch_missing_block(&mut self, now: u64) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs as usize;
        let block = &view.blocks[bs.b];
        // The first `recovery_window` missing (source, segment)s, in cell order; collection
        // stops there.
        let mut seen = std::collections::HashSet::new();
        let wanted: Vec<(u32, u16, u32, u16)> = bs
            .cells
            .iter()
            .enumerate()
            .filter(|(_, cell)| !cell.done)
            .flat_map(|(k, _)| {
                let (d, g) = (k / s, (k % s) as u16);
                block
                    .sources_of(d)
                    .iter()
                    .map(move |src| (src.vertex, g, block.dests[d].vertex, src.worker))
            })
            .filter(|&(v, g, _, _)| !cur.raw.contains_key(&(v, g)) && seen.insert((v, g)))
            .take(self.cfg.recovery_window.max(1))
            .collect();
        // Replicated raw vertices not received: from their owners, for all neighbours.
        let room = self.cfg.recovery_window.max(1).saturating_sub(wanted.len());
        let raw: Vec<(u32, u16, u32, u16)> = bs
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
        let mut wanted = wanted;
        wanted.extend(raw);
        let b = bs.b;
        self.stats.fetch_timeouts += 1;
        self.rate.on_congestion(now);
        for (src, g, dst, owner) in wanted {
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
    }

    fn fetch_missing_host(&mut self, now: u64, view: &WorkerView) {
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs;
        let wanted: Vec<(u32, u16, u16)> = view
            .host_based
            .needs
            .iter()
            .flat_map(|need| (0..s).map(move |g| (need.vertex, g, need.worker)))
            .filter(|&(v, g, _)| !cur.raw.contains_key(&(v, g)))
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

    fn resend_unacked(&mut self) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs as usize;
        let block = &view.blocks[bs.b];
        let frames: Vec<_> = block
            .sources
            .iter()
            .enumerate()
            .flat_map(|(i, src)| {
                (0..block.passes_of(i).len()).flat_map(move |p| (0..s).map(move |g| (src, p, g)))
            })
            .filter(|&(src, p, g)| !bs.acked[(src.pass_start as usize + p) * s + g])
            .map(|(src, p, g)| (src.vertex, src.pass_len, p as u8 + src.pass_offset, g))
            .take(self.cfg.recovery_window.max(1))
            .collect();
        let b = bs.b;
        self.stats.resend_timeouts += 1;
        for (v, count, pass, g) in frames {
            let (lanes, _) = view
                .contribution(&self.cur.as_ref().expect("round running").enc, s, v, g)
                .expect("the view lists only sources this worker sends");
            let mut h = self.header(PacketType::Data, b, g as u16);
            h.src_id = v;
            h.count = count as u16;
            h.pass = pass;
            h.flags.resend = true;
            self.stats.retransmissions += 1;
            tracing::debug!(
                "worker {}: block {b} of round {}: resend vertex {v} segment {g} pass {pass}",
                self.view.worker,
                self.round
            );
            self.emit(TrafficClass::Recovery, self.cfg.switch_ip, h, Some(&lanes));
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
