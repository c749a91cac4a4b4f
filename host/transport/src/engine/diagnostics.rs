//! Diagnostics: the counters ([`Engine::stats`]), a one-line description of where the worker
//! is ([`Engine::describe`]), and the message of a stall, naming what the worker waited for
//! and from whom.

use super::{Direction, Engine, Phase, Probe};
use crate::stats::Stats;

impl Engine {
    /// Counters so far (rate samples included).
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.rate_decreases = self.rate.decreases;
        s.rate_mbps = self
            .rate
            .samples
            .iter()
            .map(|&(t, r)| (t.saturating_sub(self.t0) as f64 * 1e-9, r))
            .collect();
        s
    }

    /// Why the worker stalled: what it waited for and from whom, and what to do.
    pub(super) fn stall_message(&self, now: u64) -> String {
        let secs = (now - self.last_progress) as f64 * 1e-9;
        let w = self.view.worker;
        let heard = |owners: &[u16]| -> String {
            owners
                .iter()
                .map(|&o| match self.last_heard[o as usize] {
                    Some(t) => format!(
                        "worker {o} (last heard {:.1} s ago)",
                        (now - t) as f64 * 1e-9
                    ),
                    None => format!("worker {o} (never heard from)"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if matches!(self.probe, Probe::Peers { .. }) {
            let missing: Vec<String> = (0..self.heard.len())
                .filter(|&p| !self.heard[p])
                .map(|p| p.to_string())
                .collect();
            let who = if missing.len() == 1 {
                format!("worker {}", missing[0])
            } else {
                format!("workers {}", missing.join(", "))
            };
            return format!(
                "worker {w}: the switch answered, but {who} never answered this daemon's start hello for {secs:.1} s (not running, or its port is down): start every daemon of the plan (one per worker id), and check that the switch forwards between their ports",
            );
        }
        if matches!(self.probe, Probe::Pending { .. }) {
            return format!(
                "worker {w}: no answer from the switch to the start-up probe for {secs:.1} s: check that the switch is running and that this daemon is its port {w} (UDP: --switch is the switch's listen address and its worker list has this daemon's address as worker {w}; AF_PACKET or DPDK: this daemon's interface or ethdev leads to the switch's port {w})"
            );
        }
        let layer = self
            .cur
            .as_ref()
            .map(|c| {
                format!(
                    "round {} ({} layer {})",
                    c.round,
                    match c.layer.direction {
                        Direction::Forward => "forward",
                        Direction::Backward => "backward",
                    },
                    c.layer.index
                )
            })
            .unwrap_or_else(|| format!("round {}", self.round));
        match &self.phase {
            Phase::Block(bs) if bs.incomplete > 0 => {
                let view = &self.view;
                let segs = self.segs();
                let block = &view.blocks[bs.b];
                let mut owners: Vec<u16> = Vec::new();
                let cur = self.cur.as_ref().expect("round running");
                for (k, c) in bs.cells.iter().enumerate() {
                    if !c.done {
                        for src in block.sources_of(k / segs) {
                            if !cur.raw.contains_key(&(src.vertex, (k % segs) as u16)) {
                                owners.push(src.worker);
                            }
                        }
                    }
                }
                owners.sort_unstable();
                owners.dedup();
                format!(
                    "worker {w}: no progress for {secs:.1} s in {layer}, block {}/{}: {} of {} aggregates missing; their contributions come from {} ({} fetches sent, none answered since); a worker may have died: restart the run",
                    bs.b,
                    view.blocks.len(),
                    bs.incomplete,
                    bs.cells.len(),
                    heard(&owners),
                    self.stats.fetches_sent
                )
            }
            Phase::Block(bs) if bs.done_at.is_none() => format!(
                "worker {w}: no progress for {secs:.1} s in {layer}, block {}: still sending (rate {:.0} Mbit/s)",
                bs.b,
                self.rate.rate_mbps()
            ),
            Phase::Block(bs) => format!(
                "worker {w}: {layer}, block {}/{}: this worker finished the block and sent BlockDone {} times, but the switch has not advanced it for {secs:.1} s: another worker has not finished (it may have died) or the switch is gone; peers: {}",
                bs.b,
                self.view.blocks.len(),
                bs.done_sent,
                heard(&(0..self.view.workers).filter(|&o| o != w).collect::<Vec<_>>())
            ),
            Phase::Host(hs) => {
                let segs = self.cur.as_ref().expect("round running").segs as usize;
                let mut owners: Vec<u16> = self
                    .view
                    .host_based
                    .needs
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| hs.received[i * segs..(i + 1) * segs].contains(&false))
                    .map(|(_, n)| n.worker)
                    .collect();
                owners.sort_unstable();
                owners.dedup();
                format!(
                    "worker {w}: no progress for {secs:.1} s in {layer} (host-based): {} remote feature segments missing, owned by {}; a worker may have died: restart the run",
                    hs.missing,
                    heard(&owners)
                )
            }
            Phase::Finishing { sent, .. } => format!(
                "worker {w}: final barrier: sent BlockDone {sent} times but the switch has not advanced for {secs:.1} s: another worker has not finished (it may have died), or the switch is not fresh (the baseline's barrier is block 0 of round 0)"
            ),
            _ => format!("worker {w}: no progress for {secs:.1} s"),
        }
    }

    /// A short description of where the worker is (for logs).
    pub fn describe(&self) -> String {
        match &self.phase {
            Phase::Idle => format!("idle before round {}", self.round),
            Phase::Block(bs) => format!(
                "round {} block {}: {} cells left, {} retransmissions queued, tail {}, done sent {}",
                self.round,
                bs.b,
                bs.incomplete,
                bs.retx_queued,
                if bs.tail_dirty { "unconfirmed" } else { "confirmed" },
                bs.done_sent
            ),
            Phase::Host(hs) => format!("round {}: {} segments missing", self.round, hs.missing),
            Phase::Finishing { sent, .. } => format!("final barrier, BlockDone sent {sent}"),
            Phase::Finished => "finished".into(),
        }
    }
}
