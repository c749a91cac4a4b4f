//! Liveness: naming a dead peer within about a second (docs/host.md, "A dead worker").
//!
//! While this worker waits (busy, past its start barrier, no progress for a tenth of
//! `EngineConfig::liveness_ns`), every tenth of `liveness_ns` it sends a hello
//! (`sgnn_wire::PEER_HELLO`, segment 0: always answered, also after the start barrier) to each
//! peer it has not heard from in that tenth. A peer that answers none of them, and sends
//! nothing else, for `liveness_ns` is dead or cut off: the worker stops with
//! [`TransportError::PeerSilent`], naming it. Alive peers answer from their event loop
//! whatever they do (a daemon between rounds keeps receiving: `Session::idle`), so a peer that
//! is merely slow is not named. A worker that waits for the switch's BlockAdvance also sends
//! its BlockDone again at each such tenth, so a lost advance is asked for before a peer that
//! has finished and left is blamed. The traffic is one 58-byte frame per silent peer per
//! tenth, and that BlockDone, only while stalled. Datapath-independent: the same on UDP,
//! AF_PACKET and DPDK.

use super::Engine;
use crate::TransportError;

impl Engine {
    /// The interval between liveness hellos.
    fn liveness_interval(&self) -> u64 {
        (self.cfg.liveness_ns / 10).max(1)
    }

    /// When the liveness timer next fires, if it runs.
    pub(super) fn liveness_due(&self) -> Option<u64> {
        (self.cfg.liveness_ns > 0 && self.busy() && !self.probing() && self.view.workers > 1)
            .then(|| (self.last_progress + self.liveness_interval()).max(self.liveness_at))
    }

    /// A frame from peer `w` arrived: it is alive.
    pub(super) fn heard_from(&mut self, now: u64, w: u16) {
        if let Some(h) = self.last_heard.get_mut(w as usize) {
            *h = Some(now);
        }
        if let Some(a) = self.asked.get_mut(w as usize) {
            *a = None;
        }
    }

    /// Sends the hellos that are due; an error naming a peer silent for `liveness_ns`.
    pub(super) fn liveness_timer(&mut self, now: u64) -> Result<(), TransportError> {
        let Some(due) = self.liveness_due() else {
            return Ok(());
        };
        if now < due {
            return Ok(());
        }
        // Progress since the last asks: a new stall, asked afresh.
        if self.asked_epoch != self.last_progress {
            self.asked_epoch = self.last_progress;
            self.asked.iter_mut().for_each(|a| *a = None);
        }
        let me = self.view.worker as usize;
        let dead = (0..self.asked.len())
            .filter(|&p| p != me)
            .filter_map(|p| self.asked[p].map(|t| (p, t)))
            .filter(|&(_, t)| now.saturating_sub(t) >= self.cfg.liveness_ns)
            .min_by_key(|&(_, t)| t);
        if let Some((p, asked)) = dead {
            return Err(TransportError::PeerSilent {
                me: me as u16,
                worker: p as u16,
                asked_s: now.saturating_sub(asked) as f64 * 1e-9,
                last_heard_s: self.last_heard[p].map(|t| now.saturating_sub(t) as f64 * 1e-9),
                doing: self.describe(),
            });
        }
        let interval = self.liveness_interval();
        let mut asking = false;
        for p in 0..self.asked.len() {
            if p == me {
                continue;
            }
            let recent = self.last_heard[p].is_some_and(|h| now.saturating_sub(h) < interval);
            if !recent {
                self.asked[p].get_or_insert(now);
                self.stats.liveness_hellos += 1;
                self.send_hello(p as u16, false);
                asking = true;
            }
        }
        if asking {
            self.ask_the_switch_again(now);
        }
        self.liveness_at = now + interval;
        Ok(())
    }

    /// While peers are silent and this worker waits for the switch's BlockAdvance (its
    /// BlockDone sent), its BlockDone goes again now rather than at its backed-off time. A
    /// peer that finished the job has left, which is no fault: the last advance to this
    /// worker was lost, the others got theirs and exited. The switch answers a BlockDone of a
    /// block it has passed with its advance, and that must happen before the silence is
    /// blamed on a peer; the backoff (up to `max_backoff_ns`, longer than `liveness_ns`)
    /// would resend only after the peer was named (docs/host.md, "A dead worker").
    fn ask_the_switch_again(&mut self, now: u64) {
        match &mut self.phase {
            super::Phase::Block(bs) => {
                if let Some(d) = bs.done_at.as_mut() {
                    *d = (*d).min(now);
                }
            }
            super::Phase::Finishing { at, .. } => *at = (*at).min(now),
            _ => {}
        }
    }
}
