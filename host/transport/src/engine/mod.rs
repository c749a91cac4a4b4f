//! The sans-IO state machine of one worker.
//!
//! The engine never touches a socket or a clock: it is fed frames ([`Engine::handle_frame`])
//! and time ([`Engine::handle_timeout`]), and hands out the frames it wants sent
//! ([`Engine::poll_transmit`]) and the time it next wants to be woken
//! ([`Engine::poll_timeout`]). Any datapath (UDP, AF_PACKET, DPDK) or a simulation drives it
//! the same way. Times are nanoseconds from an arbitrary origin.
//!
//! The protocol (block sequencing, cells, numbered Data frames and the switch's NACKs, the
//! tail probe, send-done notices, pulls from the switch, the raw-contribution cache, fetch,
//! pacing) is described with its state diagrams and its exactness argument in
//! `docs/host.md`.
//!
//! The engine is split by concern, each an `impl Engine` block of its own:
//!
//! - this module: the configuration, the [`Engine`] state and its public API;
//! - `round`: a round's data (features encoded in, local neighbours summed, sums decoded
//!   out);
//! - `block`: SwitchGNN's blocks (send schedule, block sequencing, BlockDone and advance);
//! - `host`: the host-based baseline (its send schedule, raw sums and final barrier);
//! - `transmit`: building frames and choosing what leaves next;
//! - `receive`: what a received frame does, by packet type and by where it belongs;
//! - `recovery`: loss recovery (NACKs and retransmissions, the tail probe, send-done notices,
//!   pulls and their answers, resend requests), the pull, tail and BlockDone timers, and
//!   answering peers' fetches;
//! - `startup`: the start-up probe, the start barrier and health probes;
//! - `diagnostics`: statistics, `describe` and the stall message.

mod block;
mod congestion;
mod diagnostics;
mod host_based;
mod liveness;
mod receive;
mod recovery;
mod round;
mod startup;
mod transmit;

use std::collections::VecDeque;
use std::sync::Arc;

use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::{FrameRepr, PacketType};

use crate::class::{DscpMap, TrafficClass};
use crate::error::WrongState;
use crate::rate::{Pacing, RateConfig, RateController};
use crate::stats::Stats;
use crate::view::WorkerView;
use crate::TransportError;

use block::BlockState;
use host_based::HostState;
use round::RoundData;
use startup::Probe;
use transmit::Queued;

/// `dst_id` of the baseline's feature frames and the switch's replicas: "every neighbour of
/// `src` on the receiver".
pub use sgnn_wire::ALL_NEIGHBOURS;
/// `dst_id` of the start-up probe (an Ack a worker sends to itself through the switch, which
/// answers with its plan tag in `src_id`).
pub use sgnn_wire::PROBE_DST;

/// Health probes (sent while a block makes no progress, one per probe interval) the switch
/// may leave unanswered before the worker stops: the switch is down or lost its tables. At
/// 20% loss ten in a row are lost once in ten million stalls.
pub const HEALTH_PROBES_UNANSWERED: u32 = 10;

/// How vertex features cross the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// In-network aggregation by the plan's blocks (SwitchGNN).
    SwitchGnn,
    /// Baseline: every boundary vertex unicast to every remote worker that needs it, summed
    /// at the receiver; the switch only forwards by IPv4.
    HostBased,
}

pub use sgnn_ipc::Direction;

/// Which layer a round belongs to (for statistics; the wire only carries the round number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layer {
    /// Layer index in the model.
    pub index: u32,
    /// Direction.
    pub direction: Direction,
}

impl Layer {
    /// Forward layer `index`.
    pub fn forward(index: u32) -> Layer {
        Layer {
            index,
            direction: Direction::Forward,
        }
    }

    /// Backward layer `index`.
    pub fn backward(index: u32) -> Layer {
        Layer {
            index,
            direction: Direction::Backward,
        }
    }
}

/// Protocol parameters.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// SwitchGNN or the host-based baseline.
    pub mode: Mode,
    /// DSCP per traffic class.
    pub dscp: DscpMap,
    /// Pacing and rate control.
    pub rate: RateConfig,
    /// No progress on a block's incomplete cells for this long: pull them from the switch
    /// (and fetch what must come raw) (ns).
    pub fetch_timeout_ns: u64,
    /// The switch has not answered this worker's tail probe for this long: probe again (ns).
    /// The probe follows the block's last Data frame and asks the switch which of them it
    /// misses.
    pub resend_timeout_ns: u64,
    /// No BlockAdvance this long after BlockDone: send BlockDone again (ns).
    pub advance_timeout_ns: u64,
    /// Exponential backoff of the three timers stops at this (ns).
    pub max_backoff_ns: u64,
    /// Nothing advanced this worker for this long: give up with an error naming what it
    /// waited for (ns).
    pub stall_timeout_ns: u64,
    /// Send a probe to ourselves through the switch before any data, to check the switch
    /// routes this worker's address to it.
    pub probe: bool,
    /// Interval between probe attempts (ns).
    pub probe_interval_ns: u64,
    /// After the switch answered the probe, hear from every peer daemon (a hello through the
    /// switch, `sgnn_wire::PEER_HELLO`) before sending any data: the start barrier, so no
    /// frame of the first round goes to a daemon that is not running or whose port is not up.
    pub peer_barrier: bool,
    /// Most fetch requests, and most resent frames, one timer firing sends. A timeout on a
    /// loaded machine is more often a slow peer than a loss: requesting everything missing
    /// at once duplicates what is still in flight, loads the peers further and feeds a
    /// retransmission storm. The rest follows at the next firing (the timers re-arm on
    /// progress), so a real loss of many frames is recovered window by window.
    pub recovery_window: usize,
    /// Most frames of the next round kept until it starts.
    pub early_buffer_frames: usize,
    /// Planned pacing (SwitchGNN mode; docs/host.md, "Planned pacing"): each block's Data
    /// leaves at the share of line rate (`rate.max_mbps`) the plan gives this worker
    /// ([`crate::WorkerView::pace`]), so that the plan's own traffic builds no queue that
    /// the rate control would take for congestion. Off, Data leaves at the controlled rate.
    pub pacing: Pacing,
    /// This worker's switch is a leaf of a leaf-spine fabric (`sgnn_switch::fabric`). On a
    /// star the switch sends or forwards a block's traffic only after it has advanced to it,
    /// so such a frame reaching a worker that waits for that advance proves the advance was
    /// lost, and the worker advances without it. Under a leaf the other leaves and the
    /// spines run ahead of this worker's own leaf, which may still wait for the root's
    /// advance: the worker waits for its leaf's BlockAdvance (asking again on
    /// `advance_timeout_ns`) and keeps such frames for the next block.
    pub under_leaf: bool,
    /// The switch's MAC address (Ethernet destination of every frame).
    pub switch_mac: [u8; 6],
    /// The switch's IPv4 address.
    pub switch_ip: [u8; 4],
    /// The job value (`sgnn_wire::sgnn::Repr::job`, `sgnn_switch::admission`) this worker
    /// must find in the switch's answer to its start-up probe (`sgnn-hostd --job`); `None`
    /// adopts the switch's. Every frame this worker sends carries the job, and a frame of
    /// another job is dropped (counted `foreign_job`). Without a probe the job is this value,
    /// or 0.
    pub job: Option<u16>,
    /// A peer that answers none of the liveness hellos this worker sends it while waiting,
    /// for this long, is named dead ([`TransportError::PeerSilent`]; engine/liveness.rs).
    /// 0: off (the stall timeout still ends a hung job).
    pub liveness_ns: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            mode: Mode::SwitchGnn,
            dscp: DscpMap::default(),
            rate: RateConfig::default(),
            fetch_timeout_ns: 20_000_000,
            resend_timeout_ns: 10_000_000,
            advance_timeout_ns: 20_000_000,
            max_backoff_ns: 1_000_000_000,
            stall_timeout_ns: 30_000_000_000,
            probe: true,
            probe_interval_ns: 100_000_000,
            peer_barrier: true,
            recovery_window: 256,
            early_buffer_frames: 1 << 16,
            pacing: Pacing::Planned,
            under_leaf: false,
            switch_mac: SWITCH_MAC,
            switch_ip: SWITCH_IP,
            job: None,
            liveness_ns: 1_000_000_000,
        }
    }
}

#[derive(Debug)]
enum Phase {
    /// No round running; the next one is `Engine::round`.
    Idle,
    /// SwitchGNN: exchanging a block.
    Block(BlockState),
    /// Baseline: exchanging features.
    Host(HostState),
    /// Baseline: final barrier through the switch.
    Finishing { at: u64, backoff: u64, sent: u32 },
    /// Nothing left to do.
    Finished,
}

/// One worker's protocol state machine.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    view: Arc<WorkerView>,
    mac: [u8; 6],
    ip: [u8; 4],
    stats: Stats,
    /// Frame buffers given back by the datapath, reused by `emit`.
    spare: Vec<Vec<u8>>,
    /// The job value this worker's frames carry and received frames must carry: the pinned
    /// one, or 0 until the switch's answer to the start-up probe tells it.
    job: u16,
    rate: RateController,
    /// Per traffic class, the frames waiting to leave, each beside its header.
    queues: [VecDeque<Queued>; 5],
    t0: u64,
    probe: Probe,
    /// When to probe the switch again while a block makes no progress (a switch that
    /// restarted mid-layer lost its tables and registers: the answer says so).
    health_at: u64,
    /// Health probes sent since the switch last answered one.
    health_unanswered: u32,
    /// The (round, block) this worker was at when it sent the oldest health probe whose
    /// answer (or a late duplicate of it) may still arrive, and until when that may be: an
    /// answer shows the switch at or after the position its probe was sent from, so only a
    /// switch behind this floor went back (`check_switch_mid_run`).
    health_floor: Option<((u16, u16), u64)>,
    /// The round running, or the next one when idle.
    round: u16,
    phase: Phase,
    cur: Option<RoundData>,
    prev: Option<RoundData>,
    early: Vec<Vec<u8>>,
    sums: Option<Vec<f32>>,
    last_progress: u64,
    last_heard: Vec<Option<u64>>,
    /// Liveness: per peer, when this worker first asked it without an answer since.
    asked: Vec<Option<u64>>,
    /// `last_progress` when the current asks began (progress starts them afresh).
    asked_epoch: u64,
    /// When the next liveness hellos are due.
    liveness_at: u64,
    /// Start barrier: which workers this one heard a hello from (itself included).
    heard: Vec<bool>,
    fatal: Option<TransportError>,
    /// Per peer: when this worker last sent it a congestion notification.
    last_cnp: Vec<Option<u64>>,
    /// The number the next Data frame carries (`sgnn_wire::recovery::SEQ_VALID`), counting
    /// every Data frame this worker sent, mod 2^16.
    seq: u16,
    /// NACKs from the switch whose ranges this worker knows, mod 2^16 (the switch counts the
    /// gaps it found in this worker's frames; a jump of more than one means NACKs were lost).
    nacks_known: u16,
    /// The last number of the last gap this worker knows of.
    nack_hi: Option<u16>,
}

impl Engine {
    /// A worker at `now`, before its first round.
    pub fn new(view: Arc<WorkerView>, cfg: EngineConfig, now: u64) -> Engine {
        let w = view.worker;
        let workers = view.workers as usize;
        let rate = RateController::new(cfg.rate, now);
        let probe = if cfg.probe {
            Probe::Pending { next_at: now }
        } else {
            Probe::Off
        };
        Engine {
            mac: worker_mac(w),
            ip: worker_ip(w),
            stats: Stats::default(),
            spare: Vec::new(),
            job: cfg.job.unwrap_or(0),
            rate,
            queues: Default::default(),
            t0: now,
            probe,
            health_at: 0,
            health_unanswered: 0,
            health_floor: None,
            round: 0,
            phase: Phase::Idle,
            cur: None,
            prev: None,
            early: Vec::new(),
            sums: None,
            last_progress: now,
            last_heard: vec![None; workers],
            asked: vec![None; workers],
            asked_epoch: now,
            liveness_at: 0,
            heard: (0..workers).map(|p| p == w as usize).collect(),
            last_cnp: vec![None; workers],
            fatal: None,
            seq: 0,
            nacks_known: 0,
            nack_hi: None,
            cfg,
            view,
        }
    }

    /// The job value this worker's frames carry (`EngineConfig::job`; learned from the
    /// switch's answer to the start-up probe).
    pub fn job(&self) -> u16 {
        self.job
    }

    /// The worker's view of the plan.
    pub fn view(&self) -> &WorkerView {
        &self.view
    }

    /// Current sending rate, Mbit/s.
    pub fn rate_mbps(&self) -> f64 {
        self.rate.rate_mbps()
    }

    /// The round the next [`Engine::start_round`] runs (or the one running).
    pub fn round(&self) -> u16 {
        self.round
    }

    /// The block being exchanged (SwitchGNN, while a round runs); `None` between rounds and
    /// in the host-based mode.
    pub fn block(&self) -> Option<usize> {
        match &self.phase {
            Phase::Block(bs) => Some(bs.b),
            _ => None,
        }
    }

    /// Whether the switch answered the start-up probe (or the probe is disabled). Data waits
    /// for the start barrier too ([`Engine::peers_ready`]).
    pub fn connected(&self) -> bool {
        !matches!(self.probe, Probe::Pending { .. })
    }

    /// Whether the start barrier is over: every peer daemon was heard from (or the barrier
    /// or the probe is disabled).
    pub fn peers_ready(&self) -> bool {
        !self.probing()
    }

    /// Whether a round is running.
    pub fn busy(&self) -> bool {
        matches!(
            self.phase,
            Phase::Block(_) | Phase::Host(_) | Phase::Finishing { .. }
        ) || self.probing()
    }

    /// A fatal error, once: the worker cannot go on.
    pub fn take_error(&mut self) -> Option<TransportError> {
        self.fatal.take()
    }

    /// The sums of the round that just completed (local vertices in ascending id order,
    /// `dim` values each), once.
    pub fn take_sums(&mut self) -> Option<Vec<f32>> {
        self.sums.take()
    }

    /// Whether [`Engine::finish`] completed.
    pub fn finished(&self) -> bool {
        matches!(self.phase, Phase::Finished)
    }

    /// Starts the next round with `features` (`num_local() * dim` values, local vertices in
    /// ascending id order).
    pub fn start_round(
        &mut self,
        now: u64,
        layer: Layer,
        dim: usize,
        features: &[f32],
    ) -> Result<(), TransportError> {
        if !matches!(self.phase, Phase::Idle) {
            return Err(WrongState::RoundRunning.into());
        }
        if self.sums.is_some() {
            return Err(WrongState::SumsNotTaken.into());
        }
        let s = self.begin_round(now, layer, dim, features)?;
        self.last_progress = now;
        match self.cfg.mode {
            Mode::SwitchGnn => self.start_blocks(now),
            Mode::HostBased => self.start_host(now, s),
        }
        // Frames of this round that came before it started.
        self.replay_early(now);
        Ok(())
    }

    /// Ends the session. SwitchGNN finishes at once (every round ended with a switch
    /// barrier); the baseline runs one barrier through the switch so no worker leaves while
    /// a peer may still fetch from it.
    pub fn finish(&mut self, now: u64) -> Result<(), TransportError> {
        if !matches!(self.phase, Phase::Idle) {
            return Err(WrongState::FinishDuringRound.into());
        }
        match self.cfg.mode {
            Mode::SwitchGnn => self.phase = Phase::Finished,
            Mode::HostBased => self.start_final_barrier(now),
        }
        Ok(())
    }

    /// The next frame to send at `now`, if pacing allows one; queued control, result and
    /// recovery frames go before new data.
    pub fn poll_transmit(&mut self, now: u64) -> Option<(TrafficClass, Vec<u8>)> {
        self.poll_probes(now);
        for class in TrafficClass::ALL {
            if class == TrafficClass::Data {
                break;
            }
            let Some(len) = self.queues[class.index()].front().map(|q| q.frame.len()) else {
                continue;
            };
            if self.probing() {
                // Until the switch answered and every peer was heard from, only the probe and
                // the hellos leave (Control frames).
                if class != TrafficClass::Control {
                    return None;
                }
            }
            if !self.rate.try_send(now, sgnn_wire::wire_bytes(len)) {
                return None;
            }
            let mut q = self.queues[class.index()]
                .pop_front()
                .expect("front exists");
            self.stats.sent.get_mut(class).add(q.frame.len());
            self.number_data(now, class, &mut q);
            return Some((class, q.frame));
        }
        if self.probing() {
            return None;
        }
        if self.queues[TrafficClass::Data.index()].is_empty() {
            self.generate_data();
        }
        let len = self.queues[TrafficClass::Data.index()].front()?.frame.len();
        if !self.rate.try_send(now, sgnn_wire::wire_bytes(len)) {
            return None;
        }
        let mut q = self.queues[TrafficClass::Data.index()].pop_front()?;
        self.stats.sent.data.add(q.frame.len());
        self.number_data(now, TrafficClass::Data, &mut q);
        self.after_first_transmission(now);
        Some((TrafficClass::Data, q.frame))
    }

    /// When the engine next needs [`Engine::handle_timeout`] or [`Engine::poll_transmit`].
    pub fn poll_timeout(&self, now: u64) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mut at = |x: u64| t = Some(t.map_or(x, |y: u64| y.min(x)));
        if let Probe::Pending { next_at } | Probe::Peers { next_at } = self.probe {
            at(next_at);
        }
        // The next frame to send.
        let probing = self.probing();
        let next_len = TrafficClass::ALL
            .iter()
            .filter(|c| !probing || **c == TrafficClass::Control)
            .find_map(|c| self.queues[c.index()].front().map(|q| q.frame.len()))
            .or_else(|| (!probing && self.data_pending()).then_some(sgnn_wire::DATA_FRAME_LEN));
        if let Some(len) = next_len {
            at(self.rate.ready_at(now, sgnn_wire::wire_bytes(len)));
        }
        match &self.phase {
            Phase::Block(bs) => {
                if bs.incomplete > 0 {
                    at(bs.fetch_at);
                }
                // The probe waits for the frames still to leave (they re-arm it).
                if let Some(p) = bs.probe_at.filter(|_| !self.sends_left()) {
                    at(p);
                }
                if let Some(d) = bs.done_at {
                    at(d);
                }
            }
            Phase::Host(hs) if hs.missing > 0 => at(hs.fetch_at),
            Phase::Finishing { at: a, .. } => at(*a),
            _ => {}
        }
        if self.busy() {
            at(self.last_progress + self.cfg.stall_timeout_ns);
        }
        if let Some(h) = self.health_probe_due() {
            at(h);
        }
        if let Some(l) = self.liveness_due() {
            at(l);
        }
        t
    }

    /// Fires every timer due at `now`. An error means the worker cannot go on (it is also
    /// kept for [`Engine::take_error`]).
    pub fn handle_timeout(&mut self, now: u64) -> Result<(), TransportError> {
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        if self.busy() && now >= self.last_progress + self.cfg.stall_timeout_ns {
            return Err(self.stall(now).into());
        }
        self.health_probe_timer(now)?;
        self.liveness_timer(now)?;
        self.recovery_timers(now);
        Ok(())
    }

    /// Feeds one received frame.
    pub fn handle_frame(&mut self, now: u64, frame: &[u8]) {
        let (repr, lanes) = match FrameRepr::parse(frame) {
            Ok(x) => x,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        let s = repr.sgnn;
        let ecn = s.flags.ecn || repr.ip.ecn == sgnn_wire::ipv4::ECN_CE;
        let class = match s.packet_type {
            PacketType::Data => TrafficClass::Data,
            PacketType::Result | PacketType::Ack => TrafficClass::Result,
            PacketType::FetchReq | PacketType::Bypass => TrafficClass::Recovery,
            PacketType::BlockDone | PacketType::BlockAdvance => TrafficClass::Control,
        };
        self.stats.received.get_mut(class).add(repr.frame_len());
        // Another job's frame (a stale run's, or a forged one): nothing of it is used. The
        // answer to this worker's start-up probe is how it learns the job, whatever it holds.
        if s.job != self.job && !s.is_probe() {
            self.stats.foreign_job += 1;
            return;
        }
        if ecn {
            self.stats.ecn_marks += 1;
            self.notify_congestion(now, &s);
        }
        if lanes.is_some() && s.frac_bits != self.view.fixed.frac_bits {
            self.stats.unexpected += 1;
            return;
        }
        self.receive(now, frame, &s, lanes.as_ref());
    }
}
