//! The switch and the peers, checked: the start-up probe (an Ack to this worker through the
//! switch, answered with the plan tag and the block the switch is at), the start barrier
//! (a hello to and from every peer before any data), and health probes while a block makes
//! no progress (a switch that restarted mid-run, or is gone, stops the worker with a
//! message).

use sgnn_wire::addressing::worker_ip;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, PEER_HELLO, PROBE_DST};

use super::{Engine, Mode, Phase, HEALTH_PROBES_UNANSWERED};
use crate::class::TrafficClass;
use crate::error::{ProtocolError, SwitchHolds};
use crate::TransportError;

/// Where the start-up checks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Probe {
    Off,
    /// Waiting for the switch to answer the start-up probe.
    Pending {
        next_at: u64,
    },
    /// The start barrier: waiting to hear from every peer (`Engine::heard`).
    Peers {
        next_at: u64,
    },
    Done,
}

impl Engine {
    /// Before the start checks are done only Control frames leave.
    pub(super) fn probing(&self) -> bool {
        matches!(self.probe, Probe::Pending { .. } | Probe::Peers { .. })
    }

    /// Sends the start-up probe, and the start barrier's hellos, when due.
    pub(super) fn poll_probes(&mut self, now: u64) {
        if let Probe::Pending { next_at } = self.probe {
            if now >= next_at {
                self.send_probe();
                self.probe = Probe::Pending {
                    next_at: now + self.cfg.probe_interval_ns,
                };
            }
        }
        if let Probe::Peers { next_at } = self.probe {
            if now >= next_at {
                for w in 0..self.view.workers {
                    if !self.heard[w as usize] {
                        self.send_hello(w, false);
                    }
                }
                self.probe = Probe::Peers {
                    next_at: now + self.cfg.probe_interval_ns,
                };
            }
        }
    }

    fn send_probe(&mut self) {
        let mut s = Repr::new(PacketType::Ack);
        s.worker_id = self.view.worker;
        s.dst_id = PROBE_DST;
        s.src_id = self.view.worker as u32;
        self.emit(TrafficClass::Control, self.ip, s, None);
    }

    pub(super) fn send_hello(&mut self, to: u16, answer: bool) {
        let mut s = Repr::new(PacketType::Ack);
        s.worker_id = self.view.worker;
        s.dst_id = PEER_HELLO;
        s.src_id = to as u32;
        s.segment = answer as u16;
        self.emit(TrafficClass::Control, worker_ip(to), s, None);
    }

    /// When the next health probe is due: in SwitchGNN mode, after the start-up probe, while
    /// a block has made no progress for two advance timeouts, at most once per probe
    /// interval.
    pub(super) fn health_probe_due(&self) -> Option<u64> {
        let stalled_block = matches!(self.phase, Phase::Block(_));
        (self.cfg.mode == Mode::SwitchGnn
            && self.cfg.probe
            && matches!(self.probe, Probe::Done)
            && stalled_block)
            .then(|| (self.last_progress + 2 * self.cfg.advance_timeout_ns).max(self.health_at))
    }

    /// Sends a health probe when one is due; an error when too many went unanswered.
    pub(super) fn health_probe_timer(&mut self, now: u64) -> Result<(), TransportError> {
        if self.health_probe_due().is_some_and(|h| now >= h) {
            if self.health_unanswered >= HEALTH_PROBES_UNANSWERED {
                return Err(ProtocolError::SwitchUnanswered {
                    probes: self.health_unanswered,
                    secs: (self.health_unanswered as u64 * self.cfg.probe_interval_ns) as f64
                        * 1e-9,
                }
                .into());
            }
            self.health_at = now + self.cfg.probe_interval_ns;
            self.health_unanswered += 1;
            self.stats.health_probes += 1;
            // The first probe since the floor lapsed sets it; every probe keeps it for a
            // stall timeout more (its answer, or a duplicate, may come that late).
            let floor = match self.health_floor {
                Some((at, until)) if now < until => Some(at),
                _ => self.position(),
            };
            self.health_floor = floor.map(|at| (at, now + self.cfg.stall_timeout_ns));
            self.send_probe();
        }
        Ok(())
    }

    pub(super) fn handle_probe(&mut self, now: u64, s: &Repr) {
        if s.worker_id != self.view.worker {
            self.fatal.get_or_insert(
                ProtocolError::WrongPort {
                    probe_of: s.worker_id,
                    worker: self.view.worker,
                }
                .into(),
            );
            return;
        }
        // The switch wrote the tag of the plan its tables hold into src_id. The baseline
        // only needs forwarding, so only SwitchGNN mode insists on the same plan.
        let starting = matches!(self.probe, Probe::Pending { .. });
        self.health_unanswered = 0;
        if starting {
            // The switch wrote its job value into the answer (sgnn_switch::admission): every
            // frame of this worker carries it from now on.
            match self.cfg.job {
                Some(j) if j != s.job => {
                    self.fatal.get_or_insert(
                        ProtocolError::JobMismatch {
                            switch_job: s.job,
                            job: j,
                        }
                        .into(),
                    );
                    return;
                }
                _ => self.job = s.job,
            }
        }
        if self.cfg.mode == Mode::SwitchGnn && !starting {
            self.check_switch_mid_run(now, s);
            return;
        }
        if self.cfg.mode == Mode::SwitchGnn && s.src_id != self.view.plan_tag {
            let e = if s.src_id == 0 {
                ProtocolError::NoPlanOnSwitch {
                    plan_tag: self.view.plan_tag,
                }
            } else {
                ProtocolError::OtherPlanOnSwitch {
                    switch_tag: s.src_id,
                    plan_tag: self.view.plan_tag,
                }
            };
            self.fatal.get_or_insert(e.into());
            return;
        }
        // The switch wrote the block it is at into round and block_id. Before this daemon's
        // first Data frame every worker is still probing or waiting for its peers, so a
        // switch past round 0, block 0 holds an earlier job's synchronisation: its BlockDones
        // would be stale and the layer would hang until the stall timeout.
        if self.cfg.mode == Mode::SwitchGnn
            && matches!(self.probe, Probe::Pending { .. })
            && (s.round, s.block_id) != (0, 0)
        {
            self.fatal.get_or_insert(
                ProtocolError::StaleSwitch {
                    round: s.round,
                    block: s.block_id,
                }
                .into(),
            );
            return;
        }
        if matches!(self.probe, Probe::Pending { .. }) {
            self.probe = if self.cfg.peer_barrier {
                Probe::Peers { next_at: now }
            } else {
                Probe::Done
            };
            self.last_progress = now;
            self.queues[TrafficClass::Control.index()].retain(|q| !q.sgnn.is_probe());
            self.check_peers(now);
        }
    }

    /// The (round, block) this worker is at, in a block.
    fn position(&self) -> Option<(u16, u16)> {
        match &self.phase {
            Phase::Block(bs) => Some((self.cur_round(), bs.b as u16)),
            _ => None,
        }
    }

    /// A health probe's answer (sent while a block makes no progress): a switch that lost
    /// this plan's tables, or whose synchronisation is behind the block this worker was at
    /// when it sent the oldest probe that may still be answering (`health_floor`), restarted
    /// (or was reloaded) mid-run; the partial sums it held are gone, so the job stops with a
    /// message instead of stalling. Not behind this worker's current block: the answer may
    /// have been delayed, overtaken or duplicated on the way while this worker moved on (it
    /// moves on only after the switch did).
    fn check_switch_mid_run(&mut self, now: u64, s: &Repr) {
        let mine = self.position();
        let floor = self
            .health_floor
            .and_then(|(at, until)| (now < until).then_some(at));
        // A switch loaded again has a new job value (unless the same was given again).
        let tag_lost = s.src_id != self.view.plan_tag || s.job != self.job;
        // Rounds wrap at 2^16: "behind" is up to half the range behind.
        let behind = floor.is_some_and(|(r, b)| {
            let d = r.wrapping_sub(s.round);
            (d != 0 && d < 0x8000) || (d == 0 && s.block_id < b)
        });
        if !(tag_lost || behind) {
            return;
        }
        let holds = if s.src_id == self.view.plan_tag && s.job != self.job {
            SwitchHolds::SamePlanOtherJob {
                job: s.job,
                ours: self.job,
            }
        } else if s.src_id == self.view.plan_tag {
            SwitchHolds::SamePlan
        } else if s.src_id == 0 {
            SwitchHolds::NoPlan
        } else {
            SwitchHolds::OtherPlan {
                tag: s.src_id,
                ours: self.view.plan_tag,
            }
        };
        self.fatal.get_or_insert(
            ProtocolError::SwitchRestarted {
                holds,
                round: s.round,
                block: s.block_id,
                worker_at: mine,
            }
            .into(),
        );
    }

    /// A peer's hello (segment 0, answered) or its answer (segment 1): the peer is up.
    pub(super) fn handle_hello(&mut self, now: u64, s: &Repr) {
        let w = s.worker_id as usize;
        if w >= self.heard.len() || w == self.view.worker as usize {
            self.stats.unexpected += 1;
            return;
        }
        self.stats.peer_hellos += 1;
        if s.segment == 0 {
            // Always answered, also after our own barrier: a peer that starts late must hear
            // from us.
            self.send_hello(w as u16, true);
        }
        if !self.heard[w] {
            self.heard[w] = true;
            self.check_peers(now);
        }
    }

    /// Ends the start barrier once every peer was heard from.
    fn check_peers(&mut self, now: u64) {
        if matches!(self.probe, Probe::Peers { .. }) && self.heard.iter().all(|&h| h) {
            self.probe = Probe::Done;
            self.last_progress = now;
            self.queues[TrafficClass::Control.index()].retain(|q| {
                let s = &q.sgnn;
                !(s.dst_id == PEER_HELLO && s.packet_type == PacketType::Ack && s.segment == 0)
            });
        }
    }
}
