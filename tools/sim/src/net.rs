//! The discrete-event core: event queue, channels with strict-priority output queues, host
//! NICs with pacing, and the hooks through which a strategy ([`App`]) drives hosts and
//! switches.
//!
//! Time is in picoseconds ([`Time`]): a 210-byte frame takes 16.8 ns at 100 Gbit/s, so
//! nanoseconds would round. Packets are small `Copy` structs ([`Pkt`]) carried inside events
//! and queues; nothing is allocated per packet (queues and the heap grow to their peak and
//! are reused).
//!
//! Per hop a packet costs two events: the end of its serialisation on the channel
//! ([`Ev::TxDone`], which starts the next packet) and its arrival at the far end
//! ([`Ev::Arrive`], after the propagation delay). A switch is output-queued: an arriving
//! packet is forwarded (or handed to the switch logic) at once and enqueued on its egress
//! channel in the queue of its priority (0..8, 7 served first); a packet that would push the
//! channel's queued bytes over the buffer is dropped and counted; one enqueued while the
//! queue holds at least the ECN threshold is marked CE. A host's NIC pulls the next frame
//! from the host logic when its channel is idle and its pacing clock allows.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::topology::{flow_hash, Routes, Topology};
use crate::SimError;

mod series;
use series::Sampler;
pub use series::{Gauges, Sample, TOP_QUEUES};

/// Simulated time in picoseconds.
pub type Time = u64;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: Time = 1_000;
/// Picoseconds per microsecond.
pub const PS_PER_US: Time = 1_000_000;
/// Picoseconds per second.
pub const PS_PER_S: Time = 1_000_000_000_000;

/// Serialisation time of `bytes` at `bps`, rounded up to a picosecond (exact for every rate
/// that divides 8e12, e.g. 10, 25, 40, 100, 400 Gbit/s).
pub fn tx_time(bytes: u64, bps: u64) -> Time {
    (bytes as u128 * 8 * PS_PER_S as u128).div_ceil(bps as u128) as Time
}

/// Number of strict priority queues per channel (DSCP classes map onto 0..8, 7 first).
pub const PRIORITIES: usize = 8;

/// What a packet is (the strategies' frame types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A feature segment a worker sends to the switch for aggregation.
    Data,
    /// An aggregate the switch sends to a destination's worker.
    Result,
    /// Worker to switch: my part of the block is done.
    BlockDone,
    /// Switch to every worker: next block.
    BlockAdvance,
    /// Host-to-host feature segment (host-based baselines).
    Raw,
    /// Test traffic.
    Test,
    /// Host to host: please send me this contribution again (loss recovery).
    Fetch,
    /// Background traffic (other applications sharing the links).
    Background,
    /// Congestion notification: the receiver of an ECN-marked background frame to its source
    /// (background rate control).
    Cnp,
    /// Host to host: the receiver of a Result acknowledges the sources it summed (the
    /// daemon's send bitmaps, `docs/host.md`).
    Ack,
}

/// One packet. `Copy`, 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pkt {
    /// Frame type.
    pub kind: Kind,
    /// Priority queue, 0..8 (7 served first).
    pub prio: u8,
    /// Congestion experienced (set by a queue over the ECN threshold).
    pub ecn: bool,
    /// Segment index of a feature vector.
    pub seg: u16,
    /// Bytes on the wire (`sgnn_wire::wire_bytes` of the frame).
    pub wire: u32,
    /// Source node.
    pub src: u32,
    /// Destination node (a host, or a switch for frames the switch logic consumes).
    pub dst: u32,
    /// Block id (in-network strategies).
    pub block: u32,
    /// Strategy-specific: source index in the block, aggregator row, vertex id.
    pub a: u32,
}

impl Pkt {
    /// What identifies this packet's flow besides its ends, for the ECMP hash: a host-based
    /// vector or test frame belongs to its (src, dst) pair (0), a data frame or result to its
    /// (block, source or aggregator row), a fetch request to the (block, source) it asks
    /// for, a background frame or its congestion notification to its flow (`a`), a control
    /// frame to its block.
    pub fn flow_id(&self) -> u64 {
        match self.kind {
            Kind::Raw | Kind::Test | Kind::Ack => 0,
            Kind::Data | Kind::Result | Kind::Fetch => (self.block as u64) << 32 | self.a as u64,
            Kind::Background | Kind::Cnp => 1 << 63 | self.a as u64,
            Kind::BlockDone | Kind::BlockAdvance => self.block as u64,
        }
    }
}

/// Per-channel counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Frames transmitted.
    pub frames: u64,
    /// Wire bytes transmitted.
    pub bytes: u64,
    /// Frames dropped at the full queue.
    pub dropped_frames: u64,
    /// Wire bytes dropped.
    pub dropped_bytes: u64,
    /// Frames marked CE.
    pub ecn_marked: u64,
    /// Largest queue (bytes waiting, all priorities).
    pub max_queue_bytes: u64,
}

/// One direction of a link with its output queue (the queue is used on switch egress; a
/// host's NIC feeds its channel directly).
#[derive(Debug)]
pub struct Channel {
    /// Sending node.
    pub from: u32,
    /// Receiving node.
    pub to: u32,
    /// Bits per second.
    pub bps: u64,
    /// Propagation delay.
    pub delay: Time,
    queues: [VecDeque<Pkt>; PRIORITIES],
    queued_bytes: u64,
    busy: bool,
    /// Counters.
    pub stats: ChannelStats,
}

/// Switch buffers, ECN and host pacing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetConfig {
    /// Bytes each switch egress queue may hold (all priorities together).
    pub buffer_bytes: u64,
    /// Queue bytes at or above which an enqueued packet is ECN-marked.
    pub ecn_threshold_bytes: u64,
    /// Host pacing rate in bit/s; `None` = the host's link rate.
    pub pace_bps: Option<u64>,
    /// Time series ([`Sample`]): sample every this much simulated time; `None` = none.
    pub sample_every: Option<Time>,
    /// With `sample_every`: when the series reaches this many samples (rounded down to an
    /// even number, at least 2), pairs of samples merge and the interval doubles, so a run
    /// of any length ends with between half this and this many samples. `None` = fixed
    /// interval.
    pub max_samples: Option<usize>,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            buffer_bytes: 32_000_000,
            ecn_threshold_bytes: 100_000,
            pace_bps: None,
            sample_every: None,
            max_samples: None,
        }
    }
}

/// What host and switch logic hand back to the core.
#[derive(Debug, Default)]
pub struct Out {
    /// Packets a switch emits: `(time >= now, switch node, packet)`, routed by `dst`.
    pub emits: Vec<(Time, u32, Pkt)>,
    /// Hosts that may have something new to send.
    pub kicks: Vec<u32>,
    /// Timers: `(time >= now, node, token)`; at `time` the core calls
    /// [`App::timer`]`(node, token)` (host timeouts, background flow arrivals, ...).
    pub timers: Vec<(Time, u32, u64)>,
    /// New pacing rates: `(host, bit/s)` (rate control); capped at the host's link rate.
    pub rates: Vec<(u32, u64)>,
}

/// Host and switch logic of one strategy.
pub trait App {
    /// The next frame host `host` sends, if it has one now (called when its NIC is free).
    fn host_next(&mut self, host: u32, now: Time) -> Option<Pkt>;
    /// A packet reached its destination host.
    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out);
    /// A packet addressed to switch `sw` (its node id) reached it.
    fn switch_recv(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out);
    /// Work done and total, for progress reports (e.g. frames delivered of frames expected).
    fn progress(&self) -> (u64, u64);
    /// Switch state at `now`, read at every sample of the time series (default: zeros, for
    /// strategies without in-network aggregation).
    fn gauges(&self, now: Time) -> Gauges {
        let _ = now;
        Gauges::default()
    }
    /// A timer set through [`Out::timers`] fired (default: ignored).
    fn timer(&mut self, node: u32, token: u64, now: Time, out: &mut Out) {
        let _ = (node, token, now, out);
    }
    /// Called once at time 0, before any host is asked for a frame: first timers (default:
    /// nothing).
    fn start(&mut self, out: &mut Out) {
        let _ = out;
    }
    /// Host `host` just had nothing to send ([`App::host_next`] returned `None`): the time at
    /// which it will have (its own pacing, e.g. rate control), if it knows; the core pulls
    /// again then. Default: never (kicks and timers still wake it).
    fn host_wake(&self, host: u32, now: Time) -> Option<Time> {
        let _ = (host, now);
        None
    }
    /// Whether the strategy's work is over (default: [`App::progress`] reached its total);
    /// open-ended traffic next to it (background flows) stops then.
    fn done(&self) -> bool {
        let (d, t) = self.progress();
        d >= t
    }
    /// The time of the app's next internal event, if it has one (default: none): work the
    /// app keeps in its own time-ordered queue instead of the core's heap, such as a switch's
    /// recirculation passes, one per frame time. The core runs it with
    /// [`App::run_internal`] before any of its own events that come later.
    fn next_internal(&self) -> Option<Time> {
        None
    }
    /// Runs the app's internal events due at `now` (`now` is [`App::next_internal`]'s time).
    fn run_internal(&mut self, now: Time, out: &mut Out) {
        let _ = (now, out);
    }
}

/// Progress reported every few thousand events.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Simulated time.
    pub now: Time,
    /// Events processed.
    pub events: u64,
    /// [`App::progress`].
    pub done: u64,
    /// [`App::progress`].
    pub total: u64,
}

/// Totals of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Events processed.
    pub events: u64,
    /// Time of the last event.
    pub end: Time,
    /// Wire bytes put into the network (host NIC pulls and switch emissions; each multicast
    /// copy counts).
    pub injected_bytes: u64,
    /// Wire bytes that reached their destination (host or switch logic).
    pub consumed_bytes: u64,
    /// Wire bytes dropped at full queues.
    pub dropped_bytes: u64,
    /// Frames injected.
    pub injected_frames: u64,
    /// Frames consumed.
    pub consumed_frames: u64,
    /// Frames dropped.
    pub dropped_frames: u64,
    /// The app's internal events ([`App::next_internal`]: recirculation passes), not counted
    /// in `events`.
    pub internal_events: u64,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    TxDone {
        chan: u32,
    },
    Arrive {
        chan: u32,
        pkt: Pkt,
    },
    HostWake {
        host: u32,
    },
    AppWake {
        host: u32,
    },
    Emit {
        node: u32,
        pkt: Pkt,
    },
    Timer {
        node: u32,
        token: u64,
    },
    /// Take a [`Sample`] (not counted in [`NetStats::events`]).
    Sample,
}

/// Heap entry. At equal times, transmission ends run before everything else (a port that
/// frees at `t` takes a frame arriving at `t` without queueing it), then scheduling order;
/// samples run last (they see the state after every event at their time).
struct Entry {
    t: Time,
    /// `(rank << 62) | sequence`: rank 0 for `TxDone`, 2 for `Sample`, 1 for the rest.
    key: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.key) == (o.t, o.key)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Min-heap on (time, rank, sequence).
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.key).cmp(&(self.t, self.key))
    }
}

/// The network: topology state plus the event queue.
pub struct Net {
    topo: Topology,
    routes: Routes,
    cfg: NetConfig,
    /// Channels, indexed as in [`Topology::channel_ends`].
    pub channels: Vec<Channel>,
    pace_bps: Vec<u64>,
    pace_next: Vec<Time>,
    wake_pending: Vec<bool>,
    /// Earliest [`Ev::AppWake`] scheduled per host (`Time::MAX`: none).
    app_wake: Vec<Time>,
    heap: BinaryHeap<Entry>,
    seq: u64,
    now: Time,
    out: Out,
    sampler: Option<Sampler>,
    /// Totals.
    pub stats: NetStats,
}

impl Net {
    /// Builds the network of `topo`.
    pub fn new(topo: Topology, cfg: NetConfig) -> Result<Net, SimError> {
        let routes = topo.routes()?;
        let channels: Vec<Channel> = (0..2 * topo.links.len() as u32)
            .map(|c| {
                let (from, to) = topo.channel_ends(c);
                let l = &topo.links[(c / 2) as usize];
                Channel {
                    from,
                    to,
                    bps: l.bps,
                    delay: l.delay,
                    queues: Default::default(),
                    queued_bytes: 0,
                    busy: false,
                    stats: ChannelStats::default(),
                }
            })
            .collect();
        let pace_bps = routes
            .uplink
            .iter()
            .map(|&c| {
                let link = channels[c as usize].bps;
                cfg.pace_bps.map_or(link, |p| p.min(link))
            })
            .collect();
        let hosts = topo.hosts as usize;
        Ok(Net {
            topo,
            routes,
            cfg,
            channels,
            pace_bps,
            pace_next: vec![0; hosts],
            wake_pending: vec![false; hosts],
            app_wake: vec![Time::MAX; hosts],
            heap: BinaryHeap::with_capacity(1 << 16),
            seq: 0,
            now: 0,
            out: Out::default(),
            sampler: cfg
                .sample_every
                .map(|every| Sampler::new(every, cfg.max_samples)),
            stats: NetStats::default(),
        })
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The configuration.
    pub fn config(&self) -> &NetConfig {
        &self.cfg
    }

    fn schedule(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        let rank: u64 = match ev {
            Ev::TxDone { .. } => 0,
            Ev::Sample => 2,
            _ => 1,
        } << 62;
        self.heap.push(Entry {
            t,
            key: rank | self.seq,
            ev,
        });
    }

    /// Runs until no event is left: every host is kicked at time 0.
    pub fn run<A: App>(&mut self, app: &mut A, progress: &mut dyn FnMut(Progress)) -> NetStats {
        self.call(app, |app, out| app.start(out));
        for h in 0..self.topo.hosts {
            self.host_try_send(app, h);
        }
        if let Some(s) = &self.sampler {
            if !self.heap.is_empty() || app.next_internal().is_some() {
                self.schedule(s.every, Ev::Sample);
            }
        }
        loop {
            // The app's internal events (recirculation passes) come before the core's events
            // of a later time.
            if let Some(ti) = app.next_internal() {
                if self.heap.peek().is_none_or(|e| ti < e.t) {
                    debug_assert!(ti >= self.now);
                    self.now = ti;
                    self.stats.internal_events += 1;
                    self.call(app, |app, out| app.run_internal(ti, out));
                    continue;
                }
            }
            let Some(Entry { t, ev, .. }) = self.heap.pop() else {
                break;
            };
            debug_assert!(t >= self.now);
            if let Ev::Timer { .. } | Ev::AppWake { .. } = ev {
                if app.done() {
                    // The strategy's work is over: its leftover timeouts (lazily cancelled
                    // deadlines) and the wake-ups its hosts asked for neither run nor move
                    // the clock.
                    continue;
                }
            }
            if let Ev::Sample = ev {
                // Sample while the strategy works and anything else is pending (so later than
                // now: samples run after every other event of their time); the last sample is
                // taken at the end.
                if (!self.heap.is_empty() || app.next_internal().is_some()) && !app.done() {
                    self.now = t;
                    let next = self.take_sample(app);
                    self.schedule(next, Ev::Sample);
                }
                continue;
            }
            self.now = t;
            self.stats.events += 1;
            match ev {
                Ev::TxDone { chan } => self.tx_done(app, chan),
                Ev::Arrive { chan, pkt } => self.arrive(app, chan, pkt),
                Ev::HostWake { host } => {
                    self.wake_pending[host as usize] = false;
                    self.host_try_send(app, host);
                }
                Ev::AppWake { host } => {
                    if self.app_wake[host as usize] == self.now {
                        self.app_wake[host as usize] = Time::MAX;
                    }
                    self.host_try_send(app, host);
                }
                Ev::Emit { node, pkt } => self.forward(node, pkt),
                Ev::Timer { node, token } => {
                    let now = self.now;
                    self.call(app, |app, out| app.timer(node, token, now, out));
                }
                Ev::Sample => unreachable!("handled above"),
            }
            if self.stats.events & 0xffff == 0 {
                let (done, total) = app.progress();
                progress(Progress {
                    now: self.now,
                    events: self.stats.events,
                    done,
                    total,
                });
            }
        }
        self.stats.end = self.now;
        self.finish_series(app);
        let (done, total) = app.progress();
        progress(Progress {
            now: self.now,
            events: self.stats.events,
            done,
            total,
        });
        self.stats.clone()
    }

    fn start_tx(&mut self, chan: u32, pkt: Pkt) {
        let ch = &mut self.channels[chan as usize];
        debug_assert!(!ch.busy);
        ch.busy = true;
        ch.stats.frames += 1;
        ch.stats.bytes += pkt.wire as u64;
        let done = self.now + tx_time(pkt.wire as u64, ch.bps);
        let arrive = done + ch.delay;
        self.schedule(done, Ev::TxDone { chan });
        self.schedule(arrive, Ev::Arrive { chan, pkt });
    }

    fn tx_done<A: App>(&mut self, app: &mut A, chan: u32) {
        let ch = &mut self.channels[chan as usize];
        ch.busy = false;
        let from = ch.from;
        if !self.topo.is_switch(from) {
            self.host_try_send(app, from);
            return;
        }
        if let Some(pkt) = ch.queues.iter_mut().rev().find_map(|q| q.pop_front()) {
            ch.queued_bytes -= pkt.wire as u64;
            self.start_tx(chan, pkt);
        }
    }

    fn host_try_send<A: App>(&mut self, app: &mut A, host: u32) {
        let h = host as usize;
        let chan = self.routes.uplink[h];
        if self.channels[chan as usize].busy {
            return; // TxDone will call again
        }
        if self.now < self.pace_next[h] {
            if !self.wake_pending[h] {
                self.wake_pending[h] = true;
                self.schedule(self.pace_next[h], Ev::HostWake { host });
            }
            return;
        }
        let Some(pkt) = app.host_next(host, self.now) else {
            if let Some(t) = app.host_wake(host, self.now) {
                let w = &mut self.app_wake[h];
                if t > self.now && (t < *w || *w <= self.now) {
                    *w = t;
                    self.schedule(t, Ev::AppWake { host });
                }
            }
            return;
        };
        self.stats.injected_bytes += pkt.wire as u64;
        self.stats.injected_frames += 1;
        self.pace_next[h] = self.now + tx_time(pkt.wire as u64, self.pace_bps[h]);
        self.start_tx(chan, pkt);
    }

    fn arrive<A: App>(&mut self, app: &mut A, chan: u32, pkt: Pkt) {
        let node = self.channels[chan as usize].to;
        if !self.topo.is_switch(node) || pkt.dst == node {
            assert_eq!(
                pkt.dst, node,
                "packet for node {} reached host {node}",
                pkt.dst
            );
            self.stats.consumed_bytes += pkt.wire as u64;
            self.stats.consumed_frames += 1;
            if let Some(s) = &mut self.sampler {
                if !self.topo.is_switch(node) {
                    s.delivered_bytes += pkt.wire as u64;
                }
            }
            let (now, switch) = (self.now, self.topo.is_switch(node));
            self.call(app, |app, out| {
                if switch {
                    app.switch_recv(node, pkt, now, out);
                } else {
                    app.host_recv(node, pkt, now, out);
                }
            });
            return;
        }
        self.route(node, pkt);
    }

    /// Runs one call into the app with the core's (reused) output buffer, then carries out
    /// what it asked for.
    fn call<A: App>(&mut self, app: &mut A, f: impl FnOnce(&mut A, &mut Out)) {
        let mut out = std::mem::take(&mut self.out);
        f(app, &mut out);
        self.apply(app, &mut out);
        self.out = out;
    }

    fn apply<A: App>(&mut self, app: &mut A, out: &mut Out) {
        for (t, node, pkt) in out.emits.drain(..) {
            debug_assert!(t >= self.now);
            if t <= self.now {
                self.forward(node, pkt);
            } else {
                self.schedule(t, Ev::Emit { node, pkt });
            }
        }
        for (t, node, token) in out.timers.drain(..) {
            debug_assert!(t >= self.now);
            self.schedule(t.max(self.now), Ev::Timer { node, token });
        }
        for (h, bps) in out.rates.drain(..) {
            let link = self.channels[self.routes.uplink[h as usize] as usize].bps;
            self.pace_bps[h as usize] = bps.clamp(1, link);
        }
        for h in out.kicks.drain(..) {
            self.host_try_send(app, h);
        }
    }

    /// Current pacing rate of host `h`, bit/s.
    pub fn pace_bps(&self, h: u32) -> u64 {
        self.pace_bps[h as usize]
    }

    /// A switch injects a packet it built.
    fn forward(&mut self, node: u32, pkt: Pkt) {
        self.stats.injected_bytes += pkt.wire as u64;
        self.stats.injected_frames += 1;
        self.route(node, pkt);
    }

    fn route(&mut self, node: u32, pkt: Pkt) {
        let sw = node - self.topo.hosts;
        let chan = self
            .routes
            .next_hop(sw, pkt.dst, flow_hash(pkt.src, pkt.dst, pkt.flow_id()))
            .unwrap_or_else(|| panic!("switch {node} has no route to node {}", pkt.dst));
        self.enqueue(chan, pkt);
    }

    fn enqueue(&mut self, chan: u32, mut pkt: Pkt) {
        let ch = &mut self.channels[chan as usize];
        let wire = pkt.wire as u64;
        if !ch.busy {
            debug_assert_eq!(ch.queued_bytes, 0);
            self.start_tx(chan, pkt);
            return;
        }
        if ch.queued_bytes + wire > self.cfg.buffer_bytes {
            ch.stats.dropped_frames += 1;
            ch.stats.dropped_bytes += wire;
            self.stats.dropped_frames += 1;
            self.stats.dropped_bytes += wire;
            return;
        }
        if ch.queued_bytes >= self.cfg.ecn_threshold_bytes {
            pkt.ecn = true;
            ch.stats.ecn_marked += 1;
        }
        ch.queued_bytes += wire;
        ch.stats.max_queue_bytes = ch.stats.max_queue_bytes.max(ch.queued_bytes);
        if let Some(s) = &mut self.sampler {
            s.queue_peak = s.queue_peak.max(ch.queued_bytes);
        }
        ch.queues[(pkt.prio as usize).min(PRIORITIES - 1)].push_back(pkt);
    }
}
