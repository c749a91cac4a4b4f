//! Diagnostics: the counters ([`Engine::stats`]), a one-line description of where the worker
//! is ([`Engine::describe`]), and the stall ([`Stall`]): what the worker waited for and from
//! whom.

use super::{Engine, Phase, Probe};
use crate::error::{Heard, RoundAt, Stall};
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

    /// Why the worker stalled: what it waited for and from whom (its text says what to do).
    pub(super) fn stall(&self, now: u64) -> Stall {
        let secs = (now - self.last_progress) as f64 * 1e-9;
        let worker = self.view.worker;
        let heard = |owners: &[u16]| -> Vec<Heard> {
            owners
                .iter()
                .map(|&o| Heard {
                    worker: o,
                    last_heard_s: self.last_heard[o as usize].map(|t| (now - t) as f64 * 1e-9),
                })
                .collect()
        };
        if matches!(self.probe, Probe::Peers { .. }) {
            let missing: Vec<u16> = (0..self.heard.len())
                .filter(|&p| !self.heard[p])
                .map(|p| p as u16)
                .collect();
            return Stall::PeerHellos {
                worker,
                secs,
                missing,
            };
        }
        if matches!(self.probe, Probe::Pending { .. }) {
            return Stall::SwitchProbe { worker, secs };
        }
        let at = RoundAt {
            round: self.cur.as_ref().map_or(self.round, |c| c.round),
            layer: self.cur.as_ref().map(|c| c.layer),
        };
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
                Stall::Aggregates {
                    worker,
                    secs,
                    at,
                    block: bs.b,
                    blocks: view.blocks.len(),
                    missing: bs.incomplete,
                    cells: bs.cells.len(),
                    from: heard(&owners),
                    fetches_sent: self.stats.fetches_sent,
                }
            }
            Phase::Block(bs) if bs.done_at.is_none() => Stall::Sending {
                worker,
                secs,
                at,
                block: bs.b,
                rate_mbps: self.rate.rate_mbps(),
            },
            Phase::Block(bs) => Stall::BlockDone {
                worker,
                secs,
                at,
                block: bs.b,
                blocks: self.view.blocks.len(),
                done_sent: bs.done_sent,
                peers: heard(
                    &(0..self.view.workers)
                        .filter(|&o| o != worker)
                        .collect::<Vec<_>>(),
                ),
            },
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
                Stall::HostSegments {
                    worker,
                    secs,
                    at,
                    missing: hs.missing,
                    from: heard(&owners),
                }
            }
            Phase::Finishing { sent, .. } => Stall::FinalBarrier {
                worker,
                secs,
                sent: *sent,
            },
            _ => Stall::NoProgress { worker, secs },
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
