//! The sans-IO state machine of one worker.
//!
//! The engine never touches a socket or a clock: it is fed frames ([`Engine::handle_frame`])
//! and time ([`Engine::handle_timeout`]), and hands out the frames it wants sent
//! ([`Engine::poll_transmit`]) and the time it next wants to be woken
//! ([`Engine::poll_timeout`]). Any datapath (UDP, AF_PACKET, DPDK) or a simulation drives it
//! the same way. Times are nanoseconds from an arbitrary origin.
//!
//! The protocol (block sequencing, send and reception bitmaps, acks, the raw-contribution
//! cache, fetch, resend, pacing) is described with its state diagram and its exactness
//! argument in `docs/host.md`.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::codec::accumulate;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, ACK_ALL_SEGMENTS, LANES};

use crate::class::{DscpMap, TrafficClass};
use crate::rate::{RateConfig, RateController};
use crate::stats::{RoundStats, Stats};
use crate::view::WorkerView;
use crate::TransportError;

/// `dst_id` of the baseline's feature frames and the switch's replicas: "every neighbour of
/// `src` on the receiver".
pub use sgnn_wire::ALL_NEIGHBOURS;
use sgnn_wire::PEER_HELLO;
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

/// Direction of a propagation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Forward pass: features.
    Forward,
    /// Backward pass: gradients (the same propagation over the same undirected graph).
    Backward,
}

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
    /// No progress on a block's incomplete cells for this long: fetch what is missing (ns).
    pub fetch_timeout_ns: u64,
    /// A source's send bitmap still incomplete this long after its block was sent: resend
    /// the unacknowledged passes with RESEND (ns).
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
    /// The switch's MAC address (Ethernet destination of every frame).
    pub switch_mac: [u8; 6],
    /// The switch's IPv4 address.
    pub switch_ip: [u8; 4],
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            mode: Mode::SwitchGnn,
            dscp: DscpMap::default(),
            rate: RateConfig::default(),
            fetch_timeout_ns: 20_000_000,
            resend_timeout_ns: 80_000_000,
            advance_timeout_ns: 20_000_000,
            max_backoff_ns: 1_000_000_000,
            stall_timeout_ns: 30_000_000_000,
            probe: true,
            probe_interval_ns: 100_000_000,
            peer_barrier: true,
            recovery_window: 256,
            early_buffer_frames: 1 << 16,
            switch_mac: SWITCH_MAC,
            switch_ip: SWITCH_IP,
        }
    }
}

/// A round's features and sums.
#[derive(Debug)]
struct RoundData {
    round: u16,
    layer: Layer,
    dim: usize,
    segs: u16,
    /// Encoded features, `local * segs + g`.
    enc: Vec<[i32; LANES]>,
    /// Sums, `local * segs + g`.
    acc: Vec<[i32; LANES]>,
    /// Raw contributions of remote sources received this round, by `(source, segment)`.
    raw: HashMap<(u32, u16), [i32; LANES]>,
    started_at: u64,
    sent_at_start: u64,
    received_at_start: u64,
    cells_by_result: u64,
    cells_by_raw: u64,
}

/// One cell: a destination's segment in a block.
#[derive(Debug, Clone, Copy, Default)]
struct Cell {
    done: bool,
    /// Sources whose raw contribution is not in the cache yet.
    missing: u32,
}

/// State of the block being exchanged (SwitchGNN mode).
#[derive(Debug)]
struct BlockState {
    b: usize,
    /// Next `(source index * segs + g)` to send.
    cursor: usize,
    /// `dest index * segs + g`.
    cells: Vec<Cell>,
    /// `raw_in index * segs + g`: replicated raw vertices received.
    raw_done: Vec<bool>,
    /// Cells not done plus replicated raw (vertex, segment)s not received.
    incomplete: usize,
    /// Send bitmap, `flat pass index * segs + g`: acknowledged.
    acked: Vec<bool>,
    unacked: usize,
    fetch_at: u64,
    fetch_backoff: u64,
    resend_at: Option<u64>,
    resend_backoff: u64,
    /// Set once BlockDone was sent: when to send it again.
    done_at: Option<u64>,
    advance_backoff: u64,
    done_sent: u32,
}

/// State of a baseline exchange.
#[derive(Debug)]
struct HostState {
    cursor: usize,
    /// `needs index * segs + g` still missing.
    missing: usize,
    fetch_at: u64,
    fetch_backoff: u64,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
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

/// How a frame's (round, block) relates to where this worker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Current,
    Next,
    Stale,
    Other,
}

/// One worker's protocol state machine.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    view: Arc<WorkerView>,
    mac: [u8; 6],
    ip: [u8; 4],
    stats: Stats,
    rate: RateController,
    queues: [VecDeque<Vec<u8>>; 5],
    t0: u64,
    probe: Probe,
    /// When to probe the switch again while a block makes no progress (a switch that
    /// restarted mid-layer lost its tables and registers: the answer says so).
    health_at: u64,
    /// Health probes sent since the switch last answered one.
    health_unanswered: u32,
    /// The round running, or the next one when idle.
    round: u16,
    phase: Phase,
    cur: Option<RoundData>,
    prev: Option<RoundData>,
    early: Vec<Vec<u8>>,
    sums: Option<Vec<f32>>,
    last_progress: u64,
    last_heard: Vec<Option<u64>>,
    /// Start barrier: which workers this one heard a hello from (itself included).
    heard: Vec<bool>,
    fatal: Option<TransportError>,
}

fn succ(round: u16, block: usize, blocks: usize) -> (u16, usize) {
    if block + 1 < blocks {
        (round, block + 1)
    } else {
        (round.wrapping_add(1), 0)
    }
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
            rate,
            queues: Default::default(),
            t0: now,
            probe,
            health_at: 0,
            health_unanswered: 0,
            round: 0,
            phase: Phase::Idle,
            cur: None,
            prev: None,
            early: Vec::new(),
            sums: None,
            last_progress: now,
            last_heard: vec![None; workers],
            heard: (0..workers).map(|p| p == w as usize).collect(),
            fatal: None,
            cfg,
            view,
        }
    }

    /// The worker's view of the plan.
    pub fn view(&self) -> &WorkerView {
        &self.view
    }

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

    /// Before the start checks are done only Control frames leave.
    fn probing(&self) -> bool {
        matches!(self.probe, Probe::Pending { .. } | Probe::Peers { .. })
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
            return Err(TransportError::State(
                "a round is already running (or the worker finished); wait for its sums first"
                    .into(),
            ));
        }
        if self.sums.is_some() {
            return Err(TransportError::State(
                "the previous round's sums were not taken".into(),
            ));
        }
        let view = self.view.clone();
        let segs = view.segments_for(dim)?;
        let n = view.num_local();
        if features.len() != n * dim {
            return Err(TransportError::BadInput(format!(
                "expected {n} x {dim} = {} feature values for worker {}'s {n} vertices, got {}",
                n * dim,
                view.worker,
                features.len()
            )));
        }
        let s = segs as usize;
        let mut enc = vec![[0i32; LANES]; n * s];
        let mut clamped = 0usize;
        for i in 0..n {
            let row = &features[i * dim..(i + 1) * dim];
            for g in 0..s {
                let lo = g * LANES;
                let hi = (lo + LANES).min(dim);
                clamped += view
                    .fixed
                    .encode(&row[lo..hi], &mut enc[i * s + g][..hi - lo]);
            }
        }
        self.stats.clamped_values += clamped as u64;
        // Local neighbours never use the network: sum them now.
        let mut acc = vec![[0i32; LANES]; n * s];
        let mut sat = 0usize;
        for i in 0..n {
            for &j in view.local_neighbors(i) {
                for g in 0..s {
                    let x = enc[j as usize * s + g];
                    sat += accumulate(&mut acc[i * s + g], &x);
                }
            }
        }
        self.stats.saturated_lanes += sat as u64;
        let sent = self.stats.sent.total().wire_bytes;
        let received = self.stats.received.total().wire_bytes;
        self.prev = self.cur.take();
        self.cur = Some(RoundData {
            round: self.round,
            layer,
            dim,
            segs,
            enc,
            acc,
            raw: HashMap::new(),
            started_at: now,
            sent_at_start: sent,
            received_at_start: received,
            cells_by_result: 0,
            cells_by_raw: 0,
        });
        self.last_progress = now;
        match self.cfg.mode {
            Mode::SwitchGnn => {
                if view.blocks.is_empty() {
                    self.complete_round(now);
                } else {
                    self.enter_block(now, 0);
                }
            }
            Mode::HostBased => {
                let missing = view.host_based.needs.len() * s;
                self.phase = Phase::Host(HostState {
                    cursor: 0,
                    missing,
                    fetch_at: now + self.cfg.fetch_timeout_ns,
                    fetch_backoff: self.cfg.fetch_timeout_ns,
                });
                self.check_host_complete(now);
            }
        }
        // Frames of this round that came before it started.
        for f in std::mem::take(&mut self.early) {
            self.handle_frame(now, &f);
        }
        Ok(())
    }

    /// Ends the session. SwitchGNN finishes at once (every round ended with a switch
    /// barrier); the baseline runs one barrier through the switch so no worker leaves while
    /// a peer may still fetch from it.
    pub fn finish(&mut self, now: u64) -> Result<(), TransportError> {
        if !matches!(self.phase, Phase::Idle) {
            return Err(TransportError::State(
                "finish() called while a round is running".into(),
            ));
        }
        match self.cfg.mode {
            Mode::SwitchGnn => self.phase = Phase::Finished,
            Mode::HostBased => {
                self.last_progress = now;
                self.send_block_done(0, 0);
                self.phase = Phase::Finishing {
                    at: now + self.cfg.advance_timeout_ns,
                    backoff: self.cfg.advance_timeout_ns,
                    sent: 1,
                };
            }
        }
        Ok(())
    }

    // ----- frame building -------------------------------------------------------------

    fn emit(
        &mut self,
        class: TrafficClass,
        dst_ip: [u8; 4],
        s: Repr,
        lanes: Option<&[i32; LANES]>,
    ) {
        let repr = FrameRepr {
            eth: ethernet::Repr {
                dst: self.cfg.switch_mac,
                src: self.mac,
                ethertype: ethernet::ETHERTYPE_IPV4,
            },
            ip: ipv4::Repr {
                src: self.ip,
                dst: dst_ip,
                ttl: 64,
                dscp: self.cfg.dscp.get(class),
                ..Default::default()
            },
            sgnn: s,
        };
        let mut buf = vec![0u8; repr.frame_len()];
        repr.emit(lanes, &mut buf)
            .expect("the engine only builds well-formed frames");
        self.queues[class.index()].push_back(buf);
    }

    fn header(&self, t: PacketType, block: usize, segment: u16) -> Repr {
        let mut s = Repr::new(t);
        s.worker_id = self.view.worker;
        s.block_id = block as u16;
        s.round = self.round;
        s.segment = segment;
        s.frac_bits = self.view.fixed.frac_bits;
        s
    }

    fn send_block_done(&mut self, round: u16, block: usize) {
        let mut s = Repr::new(PacketType::BlockDone);
        s.worker_id = self.view.worker;
        s.block_id = block as u16;
        s.round = round;
        self.emit(TrafficClass::Control, self.cfg.switch_ip, s, None);
    }

    fn send_probe(&mut self) {
        let mut s = Repr::new(PacketType::Ack);
        s.worker_id = self.view.worker;
        s.dst_id = PROBE_DST;
        s.src_id = self.view.worker as u32;
        self.emit(TrafficClass::Control, self.ip, s, None);
    }

    // ----- transmit -------------------------------------------------------------------

    /// The next frame to send at `now`, if pacing allows one; queued control, result and
    /// recovery frames go before new data.
    pub fn poll_transmit(&mut self, now: u64) -> Option<(TrafficClass, Vec<u8>)> {
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
        for class in TrafficClass::ALL {
            if class == TrafficClass::Data {
                break;
            }
            let Some(len) = self.queues[class.index()].front().map(|f| f.len()) else {
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
            let f = self.queues[class.index()]
                .pop_front()
                .expect("front exists");
            self.stats.sent.get_mut(class).add(f.len());
            return Some((class, f));
        }
        if self.probing() {
            return None;
        }
        if self.queues[TrafficClass::Data.index()].is_empty() {
            self.generate_data();
        }
        let len = self.queues[TrafficClass::Data.index()].front()?.len();
        if !self.rate.try_send(now, sgnn_wire::wire_bytes(len)) {
            return None;
        }
        let f = self.queues[TrafficClass::Data.index()].pop_front()?;
        self.stats.sent.data.add(f.len());
        // The resend timer of a block runs from its last first transmission.
        let segs = self.segs();
        if let Phase::Block(bs) = &mut self.phase {
            if bs.cursor == self.view.blocks[bs.b].sources.len() * segs {
                bs.resend_at = Some(now + bs.resend_backoff);
            }
        }
        self.after_send(now);
        Some((TrafficClass::Data, f))
    }

    fn segs(&self) -> usize {
        self.cur.as_ref().map_or(0, |c| c.segs as usize)
    }

    /// Queues the next first-transmission frame of the running exchange, if any.
    fn generate_data(&mut self) {
        let view = self.view.clone();
        let Some(cur) = self.cur.as_ref() else { return };
        let s = cur.segs as usize;
        match &mut self.phase {
            Phase::Block(bs) => {
                let block = &view.blocks[bs.b];
                if bs.cursor >= block.sources.len() * s {
                    return;
                }
                let (i, g) = (bs.cursor / s, bs.cursor % s);
                bs.cursor += 1;
                let src = block.sources[i];
                let (lanes, sat) = view
                    .contribution(&cur.enc, s, src.vertex, g)
                    .expect("the view lists only sources this worker sends");
                self.stats.saturated_lanes += sat as u64;
                let mut h = self.header(PacketType::Data, self.block_index(), g as u16);
                h.src_id = src.vertex;
                h.count = src.pass_len as u16;
                self.emit(TrafficClass::Data, self.cfg.switch_ip, h, Some(&lanes));
            }
            Phase::Host(hs) => {
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
            _ => {}
        }
    }

    fn block_index(&self) -> usize {
        match &self.phase {
            Phase::Block(bs) => bs.b,
            _ => 0,
        }
    }

    /// Whether the running exchange still has first transmissions to make.
    fn data_pending(&self) -> bool {
        if !self.queues[TrafficClass::Data.index()].is_empty() {
            return true;
        }
        let s = self.segs();
        match &self.phase {
            Phase::Block(bs) => bs.cursor < self.view.blocks[bs.b].sources.len() * s,
            Phase::Host(hs) => hs.cursor < self.view.host_based.sends.len() * s,
            _ => false,
        }
    }

    /// After the last first transmission a block may be done.
    fn after_send(&mut self, now: u64) {
        match self.phase {
            Phase::Block(_) => self.check_block_done(now),
            Phase::Host(_) => self.check_host_complete(now),
            _ => {}
        }
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
            .find_map(|c| self.queues[c.index()].front().map(|f| f.len()))
            .or_else(|| (!probing && self.data_pending()).then_some(sgnn_wire::DATA_FRAME_LEN));
        if let Some(len) = next_len {
            at(self.rate.ready_at(now, sgnn_wire::wire_bytes(len)));
        }
        match &self.phase {
            Phase::Block(bs) => {
                if bs.incomplete > 0 {
                    at(bs.fetch_at);
                }
                if bs.unacked > 0 {
                    if let Some(r) = bs.resend_at {
                        at(r);
                    }
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
        t
    }

    /// When the next health probe is due: in SwitchGNN mode, after the start-up probe, while
    /// a block has made no progress for two advance timeouts, at most once per probe
    /// interval.
    fn health_probe_due(&self) -> Option<u64> {
        let stalled_block = matches!(self.phase, Phase::Block(_));
        (self.cfg.mode == Mode::SwitchGnn
            && self.cfg.probe
            && matches!(self.probe, Probe::Done)
            && stalled_block)
            .then(|| (self.last_progress + 2 * self.cfg.advance_timeout_ns).max(self.health_at))
    }

    // ----- timers ---------------------------------------------------------------------

    /// Fires every timer due at `now`. An error means the worker cannot go on (it is also
    /// kept for [`Engine::take_error`]).
    pub fn handle_timeout(&mut self, now: u64) -> Result<(), TransportError> {
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        if self.busy() && now >= self.last_progress + self.cfg.stall_timeout_ns {
            return Err(TransportError::Stalled(self.stall_message(now)));
        }
        if self.health_probe_due().is_some_and(|h| now >= h) {
            if self.health_unanswered >= HEALTH_PROBES_UNANSWERED {
                return Err(TransportError::Protocol(format!(
                    "the switch answered none of {} probes sent over {:.1} s while this worker's block made no progress: it is down, or it restarted and lost its tables (it cannot route the probe back). Restart it, reload it with `switch-ctl load --plan DIR --target ADDR`, and start the job again",
                    self.health_unanswered,
                    (self.health_unanswered as u64 * self.cfg.probe_interval_ns) as f64 * 1e-9
                )));
            }
            self.health_at = now + self.cfg.probe_interval_ns;
            self.health_unanswered += 1;
            self.stats.health_probes += 1;
            self.send_probe();
        }
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
        Ok(())
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

    // ----- block sequencing -----------------------------------------------------------

    fn enter_block(&mut self, now: u64, b: usize) {
        let view = self.view.clone();
        let block = &view.blocks[b];
        let cur = self.cur.as_ref().expect("round running");
        let s = cur.segs as usize;
        let mut cells = vec![Cell::default(); block.dests.len() * s];
        for d in 0..block.dests.len() {
            for g in 0..s {
                let missing = block
                    .sources_of(d)
                    .iter()
                    .filter(|src| !cur.raw.contains_key(&(src.vertex, g as u16)))
                    .count() as u32;
                cells[d * s + g] = Cell {
                    done: false,
                    missing,
                };
            }
        }
        let acked = vec![false; block.passes.len() * s];
        let raw_done = vec![false; block.raw_in.len() * s];
        self.phase = Phase::Block(BlockState {
            b,
            cursor: 0,
            incomplete: cells.len() + raw_done.len(),
            cells,
            raw_done,
            unacked: acked.len(),
            acked,
            fetch_at: now + self.cfg.fetch_timeout_ns,
            fetch_backoff: self.cfg.fetch_timeout_ns,
            resend_at: None,
            resend_backoff: self.cfg.resend_timeout_ns,
            done_at: None,
            advance_backoff: self.cfg.advance_timeout_ns,
            done_sent: 0,
        });
        // Raw copies cached in earlier blocks of this round may already complete cells.
        let ready: Vec<usize> = match &self.phase {
            Phase::Block(bs) => bs
                .cells
                .iter()
                .enumerate()
                .filter(|(_, c)| c.missing == 0)
                .map(|(k, _)| k)
                .collect(),
            _ => unreachable!(),
        };
        for k in ready {
            self.complete_cell_raw(now, k);
        }
        self.check_block_done(now);
    }

    fn check_block_done(&mut self, now: u64) {
        if self.data_pending() {
            return;
        }
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        if bs.incomplete == 0 && bs.done_at.is_none() {
            bs.done_at = Some(now + self.cfg.advance_timeout_ns);
            bs.done_sent = 1;
            let b = bs.b;
            self.send_block_done(self.round, b);
        }
    }

    /// The switch advanced the current block.
    fn advance(&mut self, now: u64) {
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let b = bs.b;
        self.last_progress = now;
        tracing::info!(
            "worker {}: block {b} of round {} advanced by the switch",
            self.view.worker,
            self.round
        );
        if b + 1 < self.view.blocks.len() {
            self.enter_block(now, b + 1);
        } else {
            self.complete_round(now);
        }
    }

    fn complete_round(&mut self, now: u64) {
        let cur = self.cur.as_ref().expect("round running");
        let view = &self.view;
        let (n, s, dim) = (view.num_local(), cur.segs as usize, cur.dim);
        let mut sums = vec![0f32; n * dim];
        for i in 0..n {
            for g in 0..s {
                let lo = g * LANES;
                let hi = (lo + LANES).min(dim);
                view.fixed.decode(
                    &cur.acc[i * s + g][..hi - lo],
                    &mut sums[i * dim + lo..i * dim + hi],
                );
            }
        }
        let st = RoundStats {
            round: cur.round,
            layer: cur.layer.index,
            direction: match cur.layer.direction {
                Direction::Forward => "forward".into(),
                Direction::Backward => "backward".into(),
            },
            dim,
            seconds: now.saturating_sub(cur.started_at) as f64 * 1e-9,
            sent_wire_bytes: self.stats.sent.total().wire_bytes - cur.sent_at_start,
            received_wire_bytes: self.stats.received.total().wire_bytes - cur.received_at_start,
            cells_by_result: cur.cells_by_result,
            cells_by_raw: cur.cells_by_raw,
        };
        self.stats.rounds.push(st);
        self.sums = Some(sums);
        self.round = self.round.wrapping_add(1);
        self.phase = Phase::Idle;
        // Leftover first transmissions of a finished exchange are never needed.
        self.queues[TrafficClass::Data.index()].clear();
    }

    fn check_host_complete(&mut self, now: u64) {
        if self.data_pending() {
            return;
        }
        if let Phase::Host(hs) = &self.phase {
            if hs.missing == 0 {
                self.complete_round(now);
            }
        }
    }

    // ----- receive --------------------------------------------------------------------

    fn relation(&self, round: u16, block: u16) -> Relation {
        let block = block as usize;
        let blocks = self.view.blocks.len();
        match (&self.phase, self.cfg.mode) {
            (Phase::Block(bs), _) => {
                if round == self.round && block == bs.b {
                    Relation::Current
                } else if (round, block) == succ(self.round, bs.b, blocks) {
                    Relation::Next
                } else if (round == self.round && block < bs.b)
                    || round == self.round.wrapping_sub(1)
                {
                    Relation::Stale
                } else {
                    Relation::Other
                }
            }
            (Phase::Host(_), _) => {
                if round == self.round {
                    Relation::Current
                } else if round == self.round.wrapping_add(1) {
                    Relation::Next
                } else if round == self.round.wrapping_sub(1) {
                    Relation::Stale
                } else {
                    Relation::Other
                }
            }
            (Phase::Idle, _) => {
                if round == self.round && (block == 0 || self.cfg.mode == Mode::HostBased) {
                    Relation::Next
                } else if round == self.round.wrapping_sub(1) {
                    Relation::Stale
                } else {
                    Relation::Other
                }
            }
            (Phase::Finishing { .. } | Phase::Finished, _) => Relation::Stale,
        }
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
        let ecn = s.flags.ecn || repr.ip.ecn == 3;
        let class = match s.packet_type {
            PacketType::Data => TrafficClass::Data,
            PacketType::Result | PacketType::Ack => TrafficClass::Result,
            PacketType::FetchReq | PacketType::Bypass => TrafficClass::Recovery,
            PacketType::BlockDone | PacketType::BlockAdvance => TrafficClass::Control,
        };
        self.stats.received.get_mut(class).add(repr.frame_len());
        if matches!(s.packet_type, PacketType::Result | PacketType::Ack) && ecn {
            self.stats.ecn_marks += 1;
            self.rate.on_congestion(now);
        }
        if lanes.is_some() && s.frac_bits != self.view.fixed.frac_bits {
            self.stats.unexpected += 1;
            return;
        }
        if matches!(
            s.packet_type,
            PacketType::Ack | PacketType::FetchReq | PacketType::Bypass
        ) {
            if let Some(h) = self.last_heard.get_mut(s.worker_id as usize) {
                *h = Some(now);
            }
        }
        if s.packet_type == PacketType::Ack && s.dst_id == PROBE_DST {
            return self.handle_probe(now, &s);
        }
        if s.packet_type == PacketType::Ack && s.dst_id == PEER_HELLO {
            return self.handle_hello(now, &s);
        }
        if s.packet_type == PacketType::BlockAdvance
            && self.cfg.mode == Mode::HostBased
            && matches!(self.phase, Phase::Finishing { .. })
        {
            if (s.round, s.block_id) == (0, 0) {
                self.last_progress = now;
                self.phase = Phase::Finished;
            }
            return;
        }
        if s.packet_type == PacketType::BlockAdvance
            && self.cfg.mode == Mode::SwitchGnn
            && s.block_id as usize >= self.view.blocks.len()
        {
            // No block of this plan: a stray or forged frame (one UDP datagram from anywhere
            // must not end a job). A switch that runs another plan is caught by the plan tag
            // of the start-up probe, not here.
            self.stats.stale += 1;
            return;
        }
        self.route(now, frame, &s, lanes.as_ref());
    }

    /// Acts on a parsed, counted frame according to where it belongs.
    fn route(&mut self, now: u64, frame: &[u8], s: &Repr, lanes: Option<&[i32; LANES]>) {
        let raw_here = s.packet_type == PacketType::Bypass
            && s.round == self.cur_round()
            && matches!(self.phase, Phase::Block(_));
        match self.relation(s.round, s.block_id) {
            Relation::Current => self.dispatch(now, s, lanes),
            Relation::Next => {
                let waiting = matches!(&self.phase, Phase::Block(bs) if bs.done_at.is_some());
                if waiting {
                    // The switch only produces or forwards next-block traffic after it
                    // advanced: our BlockAdvance was lost.
                    self.stats.implicit_advances += 1;
                    self.advance(now);
                    self.route(now, frame, s, lanes);
                } else if matches!(self.phase, Phase::Idle | Phase::Host(_)) {
                    if s.packet_type == PacketType::BlockAdvance {
                        self.stats.stale += 1;
                    } else if self.early.len() < self.cfg.early_buffer_frames {
                        self.stats.early_buffered += 1;
                        self.early.push(frame.to_vec());
                    }
                } else {
                    self.stats.unexpected += 1;
                }
            }
            // A peer may still fetch from the previous round (baseline), and a raw
            // contribution of this round is useful whatever block it is tagged with.
            Relation::Stale if s.packet_type == PacketType::FetchReq => self.serve_fetch(s),
            Relation::Stale | Relation::Other if raw_here => self.dispatch(now, s, lanes),
            Relation::Stale | Relation::Other => self.stats.stale += 1,
        }
    }

    fn cur_round(&self) -> u16 {
        self.cur.as_ref().map_or(u16::MAX, |c| c.round)
    }

    fn handle_probe(&mut self, now: u64, s: &Repr) {
        if s.worker_id != self.view.worker {
            self.fatal.get_or_insert(TransportError::Protocol(format!(
                "the switch delivered worker {}'s start-up probe to worker {}: its --worker list does not match the workers' ids (worker w must be the w-th --worker address)",
                s.worker_id, self.view.worker
            )));
            return;
        }
        // The switch wrote the tag of the plan its tables hold into src_id. The baseline
        // only needs forwarding, so only SwitchGNN mode insists on the same plan.
        let starting = matches!(self.probe, Probe::Pending { .. });
        self.health_unanswered = 0;
        if self.cfg.mode == Mode::SwitchGnn && !starting {
            self.check_switch_mid_run(s);
            return;
        }
        if self.cfg.mode == Mode::SwitchGnn && s.src_id != self.view.plan_tag {
            let msg = if s.src_id == 0 {
                format!(
                    "the switch holds no plan (it answered the start-up probe with plan tag 0), and this daemon's plan has tag {:08x}: load it first with `switch-ctl load --plan DIR --target ADDR` (or start the software switch with --plan DIR)",
                    self.view.plan_tag
                )
            } else {
                format!(
                    "the switch holds the plan with tag {:08x}, but this daemon's plan has tag {:08x}: the switch was loaded with another plan (or the plan was made again after loading). Load this plan with `switch-ctl load --plan DIR`, or start the daemon with the plan the switch holds (`switch-ctl plan` and `sgnn-hostd` print a plan's tag)",
                    s.src_id, self.view.plan_tag
                )
            };
            self.fatal.get_or_insert(TransportError::Protocol(msg));
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
            self.fatal.get_or_insert(TransportError::Protocol(format!(
                "the switch is at round {} block {}: it still holds the state of an earlier run of this plan (or a worker of this job restarted after it began). Reload it with `switch-ctl load --plan DIR --target ADDR` (or restart the software switch) and start every worker again",
                s.round, s.block_id
            )));
            return;
        }
        if matches!(self.probe, Probe::Pending { .. }) {
            self.probe = if self.cfg.peer_barrier {
                Probe::Peers { next_at: now }
            } else {
                Probe::Done
            };
            self.last_progress = now;
            self.queues[TrafficClass::Control.index()].retain(|f| {
                !matches!(FrameRepr::parse(f), Ok((r, _)) if r.sgnn.dst_id == PROBE_DST && r.sgnn.packet_type == PacketType::Ack)
            });
            self.check_peers(now);
        }
    }

    /// A health probe's answer (sent while a block makes no progress): a switch that lost
    /// this plan's tables, or whose synchronisation is behind this worker's block, restarted
    /// (or was reloaded) mid-run; the partial sums it held are gone, so the job stops with a
    /// message instead of stalling.
    fn check_switch_mid_run(&mut self, s: &Repr) {
        let mine = match &self.phase {
            Phase::Block(bs) => Some((self.cur_round(), bs.b as u16)),
            _ => None,
        };
        let tag_lost = s.src_id != self.view.plan_tag;
        // Rounds wrap at 2^16: "behind" is up to half the range behind.
        let behind = mine.is_some_and(|(r, b)| {
            let d = r.wrapping_sub(s.round);
            (d != 0 && d < 0x8000) || (d == 0 && s.block_id < b)
        });
        if !(tag_lost || behind) {
            return;
        }
        let holds = if s.src_id == self.view.plan_tag {
            "it holds this plan again".to_string()
        } else if s.src_id == 0 {
            "it holds no plan".to_string()
        } else {
            format!(
                "it holds the plan with tag {:08x}, not this worker's {:08x}",
                s.src_id, self.view.plan_tag
            )
        };
        let at = mine.map_or(String::new(), |(r, b)| {
            format!(" while this worker is at round {r} block {b}")
        });
        self.fatal.get_or_insert(TransportError::Protocol(format!(
            "the switch restarted or was reloaded mid-run: {holds} but is at round {} block {}{at}, so the partial sums it held are lost. Reload it with `switch-ctl load --plan DIR --target ADDR` and start the job again",
            s.round, s.block_id
        )));
    }

    /// A peer's hello (segment 0, answered) or its answer (segment 1): the peer is up.
    fn handle_hello(&mut self, now: u64, s: &Repr) {
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
            self.queues[TrafficClass::Control.index()].retain(|f| {
                !matches!(FrameRepr::parse(f), Ok((r, _)) if r.sgnn.dst_id == PEER_HELLO && r.sgnn.packet_type == PacketType::Ack && r.sgnn.segment == 0)
            });
        }
    }

    fn send_hello(&mut self, to: u16, answer: bool) {
        let mut s = Repr::new(PacketType::Ack);
        s.worker_id = self.view.worker;
        s.dst_id = PEER_HELLO;
        s.src_id = to as u32;
        s.segment = answer as u16;
        self.emit(TrafficClass::Control, worker_ip(to), s, None);
    }

    fn dispatch(&mut self, now: u64, s: &Repr, lanes: Option<&[i32; LANES]>) {
        match s.packet_type {
            PacketType::Result => {
                if let Some(l) = lanes {
                    self.on_result(now, s, l)
                }
            }
            PacketType::Bypass => {
                if let Some(l) = lanes {
                    self.on_raw(now, s, l)
                }
            }
            PacketType::Ack => self.on_ack(now, s),
            PacketType::FetchReq => self.serve_fetch(s),
            PacketType::BlockAdvance => self.on_advance(now),
            PacketType::Data | PacketType::BlockDone => self.stats.unexpected += 1,
        }
    }

    fn on_advance(&mut self, now: u64) {
        match &self.phase {
            Phase::Block(bs) if bs.done_at.is_some() => self.advance(now),
            Phase::Block(bs) => {
                let b = bs.b;
                self.fatal.get_or_insert(TransportError::Protocol(format!(
                    "the switch advanced block {b} of round {} before worker {} reported it done: another process uses worker id {}, or the switch was restarted mid-run",
                    self.round, self.view.worker, self.view.worker
                )));
            }
            _ => self.stats.stale += 1,
        }
    }

    fn on_result(&mut self, now: u64, s: &Repr, lanes: &[i32; LANES]) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            self.stats.unexpected += 1;
            return;
        };
        let segs = self.segs();
        let block = &view.blocks[bs.b];
        let Some(&d) = block.dest_index.get(&s.dst_id) else {
            self.stats.unexpected += 1;
            return;
        };
        if s.segment as usize >= segs || s.count as u32 != block.dests[d as usize].expected {
            self.stats.unexpected += 1;
            return;
        }
        let k = d as usize * segs + s.segment as usize;
        if bs.cells[k].done {
            self.stats.results_ignored += 1;
            return;
        }
        self.stats.results_used += 1;
        self.finish_cell(now, k, lanes, true);
    }

    /// A raw contribution: a switch Bypass, a fetch reply, or a baseline frame.
    fn on_raw(&mut self, now: u64, s: &Repr, lanes: &[i32; LANES]) {
        let view = self.view.clone();
        let segs = self.segs();
        let g = s.segment;
        if g as usize >= segs {
            self.stats.unexpected += 1;
            return;
        }
        let src = s.src_id;
        if !view.host_based.consumers.contains_key(&src) && !view.partials_in.contains(&src) {
            // Not a remote neighbour of any vertex here, nor a partial for one.
            self.stats.unexpected += 1;
            return;
        }
        let Some(cur) = self.cur.as_mut() else {
            self.stats.unexpected += 1;
            return;
        };
        match self.cfg.mode {
            Mode::SwitchGnn if s.dst_id == ALL_NEIGHBOURS => self.on_replica(now, s, lanes),
            Mode::SwitchGnn => {
                // Only remote sources that feed some destination here in some block are ours
                // to cache (validated against the current block below).
                if let Entry::Vacant(slot) = cur.raw.entry((src, g)) {
                    slot.insert(*lanes);
                    self.stats.raw_cached += 1;
                    self.last_progress = now;
                    if let Phase::Block(bs) = &mut self.phase {
                        let block = &view.blocks[bs.b];
                        if let Some(ds) = block.feeds.get(&src) {
                            let mut ready = Vec::new();
                            for &d in ds {
                                let k = d as usize * segs + g as usize;
                                let c = &mut bs.cells[k];
                                if !c.done {
                                    c.missing -= 1;
                                    if c.missing == 0 {
                                        ready.push(k);
                                    }
                                }
                            }
                            if !ready.is_empty() {
                                bs.fetch_at = now + self.cfg.fetch_timeout_ns;
                                bs.fetch_backoff = self.cfg.fetch_timeout_ns;
                            }
                            for k in ready {
                                self.complete_cell_raw(now, k);
                            }
                        }
                    }
                } else {
                    self.stats.raw_duplicate += 1;
                }
                // A RESEND copy of a contribution to a cell we already have means its sender
                // missed our ack: acknowledge again.
                if s.flags.resend {
                    if let Phase::Block(bs) = &self.phase {
                        let block = &view.blocks[bs.b];
                        if let Some(&d) = block.dest_index.get(&s.dst_id) {
                            let k = d as usize * segs + g as usize;
                            let owner = block
                                .sources_of(d as usize)
                                .iter()
                                .find(|r| r.vertex == src)
                                .map(|r| r.worker);
                            if bs.cells[k].done {
                                if let Some(w) = owner {
                                    let (b, dst) = (bs.b, s.dst_id);
                                    self.send_ack(b, dst, g, w);
                                }
                            }
                        }
                    }
                }
            }
            Mode::HostBased => {
                let consumers = &view.host_based.consumers[&src];
                if cur.raw.contains_key(&(src, g)) {
                    self.stats.raw_duplicate += 1;
                    return;
                }
                cur.raw.insert((src, g), *lanes);
                self.stats.raw_cached += 1;
                let sg = segs;
                let mut sat = 0;
                for &i in consumers {
                    sat += accumulate(&mut cur.acc[i as usize * sg + g as usize], lanes);
                }
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
        }
    }

    fn complete_cell_raw(&mut self, now: u64, k: usize) {
        let view = self.view.clone();
        let Phase::Block(bs) = &self.phase else {
            return;
        };
        let cur = self.cur.as_ref().expect("round running");
        let segs = cur.segs as usize;
        let (d, g) = (k / segs, (k % segs) as u16);
        let mut sum = [0i32; LANES];
        let mut sat = 0;
        for src in view.blocks[bs.b].sources_of(d) {
            let x = cur.raw.get(&(src.vertex, g)).expect("cell complete");
            sat += accumulate(&mut sum, x);
        }
        self.stats.saturated_lanes += sat as u64;
        self.finish_cell(now, k, &sum, false);
    }

    /// A replicated raw vertex (the switch's copy, or its owner's answer to a fetch): added
    /// once per segment into every local neighbour of it.
    fn on_replica(&mut self, now: u64, s: &Repr, lanes: &[i32; LANES]) {
        let view = self.view.clone();
        let segs = self.segs();
        let Phase::Block(bs) = &mut self.phase else {
            self.stats.stale += 1;
            return;
        };
        let Some(&i) = view.blocks[bs.b].raw_in_index.get(&s.src_id) else {
            // Not replicated to this worker in this block: a late copy of an earlier block's
            // (already added) or a stray frame.
            self.stats.stale += 1;
            return;
        };
        let k = i as usize * segs + s.segment as usize;
        if bs.raw_done[k] {
            self.stats.raw_duplicate += 1;
            return;
        }
        bs.raw_done[k] = true;
        bs.incomplete -= 1;
        bs.fetch_at = now + self.cfg.fetch_timeout_ns;
        bs.fetch_backoff = self.cfg.fetch_timeout_ns;
        let cur = self.cur.as_mut().expect("round running");
        let g = s.segment as usize;
        let mut sat = 0;
        for &j in &view.host_based.consumers[&s.src_id] {
            sat += accumulate(&mut cur.acc[j as usize * segs + g], lanes);
        }
        self.stats.saturated_lanes += sat as u64;
        self.stats.replicas_used += 1;
        self.last_progress = now;
        self.check_block_done(now);
    }

    /// Adds a cell's value (a Result or the sum of its raw contributions, never both) into
    /// the destination's sum, marks it done and acknowledges it to its sources' workers.
    fn finish_cell(&mut self, now: u64, k: usize, value: &[i32; LANES], by_result: bool) {
        let view = self.view.clone();
        let Phase::Block(bs) = &mut self.phase else {
            return;
        };
        let cur = self.cur.as_mut().expect("round running");
        let segs = cur.segs as usize;
        let (d, g) = (k / segs, k % segs);
        debug_assert!(!bs.cells[k].done);
        bs.cells[k].done = true;
        bs.incomplete -= 1;
        bs.fetch_at = now + self.cfg.fetch_timeout_ns;
        bs.fetch_backoff = self.cfg.fetch_timeout_ns;
        let block = &view.blocks[bs.b];
        let dest = block.dests[d];
        let sat = accumulate(&mut cur.acc[dest.local as usize * segs + g], value);
        self.stats.saturated_lanes += sat as u64;
        if by_result {
            cur.cells_by_result += 1;
            self.stats.cells_by_result += 1;
        } else {
            cur.cells_by_raw += 1;
            self.stats.cells_by_raw += 1;
        }
        self.last_progress = now;
        // Reception bitmap of the destination full (every segment): one ack for all its
        // segments to every worker owning a source of it.
        if bs.cells[d * segs..(d + 1) * segs].iter().all(|c| c.done) {
            let mut owners: Vec<u16> = block.sources_of(d).iter().map(|r| r.worker).collect();
            owners.sort_unstable();
            owners.dedup();
            let b = bs.b;
            let seg = if segs == 1 { 0 } else { ACK_ALL_SEGMENTS };
            for w in owners {
                self.send_ack(b, dest.vertex, seg, w);
            }
        }
        self.check_block_done(now);
    }

    fn send_ack(&mut self, b: usize, dst: u32, g: u16, to: u16) {
        let mut h = self.header(PacketType::Ack, b, g);
        h.dst_id = dst;
        self.stats.acks_sent += 1;
        self.emit(TrafficClass::Result, worker_ip(to), h, None);
    }

    fn on_ack(&mut self, now: u64, s: &Repr) {
        let view = self.view.clone();
        let segs = self.segs();
        let Phase::Block(bs) = &mut self.phase else {
            self.stats.stale += 1;
            return;
        };
        let Some(passes) = view.blocks[bs.b].acked_by.get(&s.dst_id) else {
            self.stats.unexpected += 1;
            return;
        };
        let segments = if s.segment == ACK_ALL_SEGMENTS {
            0..segs
        } else if (s.segment as usize) < segs {
            s.segment as usize..s.segment as usize + 1
        } else {
            self.stats.unexpected += 1;
            return;
        };
        let mut used = false;
        for &p in passes {
            for g in segments.clone() {
                let bit = &mut bs.acked[p as usize * segs + g];
                if !*bit {
                    *bit = true;
                    bs.unacked -= 1;
                    used = true;
                }
            }
        }
        if used {
            self.stats.acks_used += 1;
            self.last_progress = now;
            // The resend timer measures silence, not age: while acks keep coming the
            // receivers are progressing (merely slow, e.g. on a loaded machine), and a
            // premature resend would release aggregators and force every receiver of those
            // sources onto the raw path.
            if let Some(r) = bs.resend_at.as_mut() {
                *r = (*r).max(now + self.cfg.resend_timeout_ns);
            }
        }
    }

    /// Answers a FetchReq from the round's features: the raw contribution, as a Bypass with
    /// RESEND, straight to the requester (the switch forwards it by IPv4).
    fn serve_fetch(&mut self, s: &Repr) {
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

    // ----- diagnostics ----------------------------------------------------------------

    fn stall_message(&self, now: u64) -> String {
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
                let cur = self.cur.as_ref().expect("round running");
                let mut owners: Vec<u16> = self
                    .view
                    .host_based
                    .needs
                    .iter()
                    .filter(|n| (0..cur.segs).any(|g| !cur.raw.contains_key(&(n.vertex, g))))
                    .map(|n| n.worker)
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
                "round {} block {}: {} cells left, {} passes unacked, done sent {}",
                self.round, bs.b, bs.incomplete, bs.unacked, bs.done_sent
            ),
            Phase::Host(hs) => format!("round {}: {} segments missing", self.round, hs.missing),
            Phase::Finishing { sent, .. } => format!("final barrier, BlockDone sent {sent}"),
            Phase::Finished => "finished".into(),
        }
    }
}
