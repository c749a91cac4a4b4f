//! Background traffic: flows between random host pairs, Hadoop-like sizes, Poisson arrivals
//! (the paper's section 6.5 / Figure 19 setting), as a wrapper [`WithBackground`] around any
//! strategy's [`App`].
//!
//! **Flow sizes** follow [`HADOOP_CDF`], the Facebook Hadoop flow-size distribution of Roy et
//! al., "Inside the Social Network's (Datacenter) Network", SIGCOMM 2015, in the piecewise
//! linear form commonly circulated with datacenter congestion-control simulators (HPCC,
//! Li et al. SIGCOMM 2019, `traffic_gen/FbHdp_distribution.txt` of
//! github.com/alibaba-edu/High-Precision-Congestion-Control, also used for DCQCN
//! comparisons). These points are that approximation, not a fit we made to the paper's
//! figure. A size is drawn by inverting the CDF with linear interpolation between points; its
//! mean is [`HADOOP_MEAN_BYTES`].
//!
//! **Arrivals**: every host starts flows as a Poisson process of rate
//! `load * link_bps / (8 * mean size)`, so that on average it offers `load` of its link
//! capacity; the destination is uniform among the other hosts. Flow sizes count bytes on the
//! wire; a flow is sent as frames of [`BG_FRAME_WIRE`] bytes (the last one the remainder,
//! at least the 84-byte minimum frame) at priority 0 (DSCP CS1, the "background" class of
//! `docs/host.md`; [`BackgroundConfig::prio`] chooses another queue), without retransmission (a flow that lost a frame is reported incomplete).
//!
//! **Rate control** ([`BackgroundConfig::cc`]): `None` (the default) sends open loop, at the
//! NIC's pace. With `Some(cc)` every host has one [`RateControl`] of those parameters for its
//! background traffic: all its background flows share it (one DCQCN reaction point per host,
//! not per flow; since a host sends its flows one after the other in arrival order, the
//! controller mostly paces one flow at a time). Its frames are spaced by that rate. A
//! receiver that gets an ECN-marked background frame answers with a congestion notification
//! ([`Kind::Cnp`], a 64-byte frame, [`CNP_WIRE`] on the wire, priority [`PRIO_CNP`]) to the
//! frame's source, at most one per flow per [`CNP_INTERVAL`] (DCQCN's notification point);
//! the source's controller takes it as a congestion signal (halving at most once per its
//! decrease interval). CNPs go before anything else the receiver has to send and are not
//! paced.
//!
//! **Multiplexing**: a host's NIC alternates frame by frame between the strategy and its
//! background flows when both have one ready (the flows of one host are served in arrival
//! order); a background frame held back by its rate control lets the strategy's frames
//! through. Arrivals stop once the strategy is [`App::done`] (or at a fixed horizon).

use std::collections::VecDeque;

use sgnn_transport::rate::RateController;

use crate::cc::CcConfig;
use crate::hash::splitmix64;
use crate::net::{App, Kind, Out, Pkt, Time, PS_PER_NS, PS_PER_S, PS_PER_US};

/// `(bytes, cumulative percent)`: the Facebook Hadoop flow-size CDF (Roy et al., SIGCOMM
/// 2015) as circulated with the HPCC simulator (`traffic_gen/FbHdp_distribution.txt`).
pub const HADOOP_CDF: [(u64, f64); 20] = [
    (0, 0.0),
    (100, 1.0),
    (200, 2.0),
    (300, 5.0),
    (350, 15.0),
    (400, 20.0),
    (500, 30.0),
    (600, 40.0),
    (700, 50.0),
    (1_000, 60.0),
    (2_000, 67.0),
    (7_000, 70.0),
    (30_000, 72.0),
    (50_000, 82.0),
    (80_000, 87.0),
    (120_000, 90.0),
    (300_000, 95.0),
    (1_000_000, 97.5),
    (2_000_000, 99.0),
    (10_000_000, 100.0),
];

/// Mean of [`HADOOP_CDF`] with linear interpolation: `sum (p_i - p_{i-1}) (x_{i-1} + x_i) / 2`.
pub const HADOOP_MEAN_BYTES: f64 = 120_420.75;

/// Wire bytes of a full background frame (an MTU-sized frame).
pub const BG_FRAME_WIRE: u32 = 1500;
/// Smallest frame on the wire (64-byte frame, preamble, SFD, inter-frame gap).
pub const BG_MIN_WIRE: u32 = 84;
/// Priority queue of background frames (DSCP CS1).
pub const PRIO_BACKGROUND: u8 = 0;
/// Wire bytes of a congestion notification (a 64-byte frame, like RoCE's CNP).
pub const CNP_WIRE: u32 = BG_MIN_WIRE;
/// Priority queue of congestion notifications: the highest but one (block control, 7, is the
/// highest; RoCE deployments give CNPs a high strict priority too).
pub const PRIO_CNP: u8 = 6;
/// At most one CNP per background flow per this period (DCQCN's notification point: N = 50
/// us).
pub const CNP_INTERVAL: Time = 50 * PS_PER_US;
/// Timer tokens with this bit set belong to the background generator; a wrapped strategy
/// must not use it.
pub const BG_TOKEN: u64 = 1 << 63;

/// Mean of a piecewise-linear CDF given as `(value, cumulative percent)` points.
pub fn cdf_mean(cdf: &[(u64, f64)]) -> f64 {
    cdf.windows(2)
        .map(|w| (w[1].1 - w[0].1) / 100.0 * (w[0].0 + w[1].0) as f64 / 2.0)
        .sum()
}

/// SplitMix64 as a stream: a small, fast, deterministic generator (no dependency).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// Next 64 random bits: the SplitMix64 sequence, i.e. [`splitmix64`] of the state, which
    /// then advances by the same golden-ratio increment `splitmix64` adds.
    pub fn next_u64(&mut self) -> u64 {
        let z = splitmix64(self.0);
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Background traffic parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackgroundConfig {
    /// Offered load per host, as a fraction of its link capacity (0 = none).
    pub load: f64,
    /// Seed of arrivals, sizes and destinations.
    pub seed: u64,
    /// Stop starting flows at this time (`None`: once the strategy is done).
    pub until: Option<Time>,
    /// Rate control of the background flows (`None`: open loop). See the module doc.
    pub cc: Option<CcConfig>,
    /// Priority queue of the background frames (default [`PRIO_BACKGROUND`], below every
    /// strategy's frames; [`crate::strategies::PRIO_DATA`] puts them in the queue of the
    /// strategies' data, where they delay it).
    pub prio: u8,
}

impl Default for BackgroundConfig {
    fn default() -> Self {
        BackgroundConfig {
            load: 0.0,
            seed: 1,
            until: None,
            cc: None,
            prio: PRIO_BACKGROUND,
        }
    }
}

/// Draws flows: Poisson arrivals per host, Hadoop sizes, uniform destinations.
#[derive(Debug, Clone)]
pub struct FlowGen {
    rng: Rng,
    hosts: u32,
    /// Mean time between two arrivals at one host, ps (as f64).
    mean_gap: f64,
}

impl FlowGen {
    /// Flows among `hosts` hosts (at least 2) whose links run at `link_bps`, offering `load`
    /// of each link.
    pub fn new(hosts: u32, link_bps: u64, load: f64, seed: u64) -> FlowGen {
        assert!(hosts >= 2, "background traffic needs two hosts");
        assert!(load > 0.0 && load.is_finite(), "load must be positive");
        let flows_per_s = load * link_bps as f64 / (8.0 * HADOOP_MEAN_BYTES);
        FlowGen {
            rng: Rng::new(seed),
            hosts,
            mean_gap: PS_PER_S as f64 / flows_per_s,
        }
    }

    /// Time from one arrival at a host to its next (exponential), ps, at least 1.
    pub fn gap(&mut self) -> Time {
        let u = self.rng.unit();
        ((-(1.0 - u).ln() * self.mean_gap).round() as Time).max(1)
    }

    /// A flow size in wire bytes, drawn from [`HADOOP_CDF`] (at least 1).
    pub fn size(&mut self) -> u64 {
        let p = self.rng.unit() * 100.0;
        let i = HADOOP_CDF
            .partition_point(|&(_, c)| c <= p)
            .clamp(1, HADOOP_CDF.len() - 1);
        let (x0, p0) = HADOOP_CDF[i - 1];
        let (x1, p1) = HADOOP_CDF[i];
        let x = x0 as f64 + (x1 - x0) as f64 * (p - p0) / (p1 - p0);
        (x.round() as u64).max(1)
    }

    /// A destination for a flow from `src`: uniform among the other hosts.
    pub fn dst(&mut self, src: u32) -> u32 {
        let d = self.rng.below(self.hosts as u64 - 1) as u32;
        if d >= src {
            d + 1
        } else {
            d
        }
    }
}

/// One background flow.
#[derive(Debug, Clone, Copy)]
struct Flow {
    dst: u32,
    /// Wire bytes.
    size: u64,
    sent: u64,
    frames: u32,
    received: u32,
    start: Time,
    end: Option<Time>,
    /// Last CNP the receiver sent for this flow.
    last_cnp: Option<Time>,
}

/// Counters and completion times of the background flows of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackgroundReport {
    /// Requested load (fraction of each host link).
    pub load: f64,
    /// Flows started.
    pub flows: u64,
    /// Flows whose every frame arrived.
    pub completed: u64,
    /// Wire bytes of all flows started (offered).
    pub offered_bytes: u64,
    /// Frames sent.
    pub frames_sent: u64,
    /// Frames received.
    pub frames_received: u64,
    /// Time of the last arrival (the offered load is over `[0, last_arrival]`).
    pub last_arrival: Time,
    /// Mean flow completion time of completed flows, ps.
    pub fct_mean: Time,
    /// 99th percentile flow completion time of completed flows, ps.
    pub fct_p99: Time,
    /// Every flow: `(start, size in wire bytes, completion time if it completed)`.
    pub flow_list: Vec<(Time, u64, Option<Time>)>,
    /// Whether the flows ran with rate control ([`BackgroundConfig::cc`]).
    pub cc: bool,
    /// Background frames that arrived ECN-marked.
    pub ecn_marked: u64,
    /// Congestion notifications sent by receivers (left their NIC).
    pub cnps_sent: u64,
    /// Congestion notifications received by sources.
    pub cnps_received: u64,
    /// Halvings of the hosts' background rate controllers.
    pub rate_decreases: u64,
    /// Per host, its background sending rate over time: `(time, bit/s)` at the start and at
    /// every change (empty without rate control).
    pub rates: Vec<Vec<(Time, u64)>>,
}

/// Any strategy plus background flows on the same hosts.
pub struct WithBackground<A: App> {
    /// The wrapped strategy.
    pub inner: A,
    cfg: BackgroundConfig,
    gen: Option<FlowGen>,
    hosts: u32,
    flows: Vec<Flow>,
    /// Per host: flows waiting or being sent, in arrival order.
    queue: Vec<VecDeque<u32>>,
    /// Per host: whether the background goes first next time both have a frame.
    bg_turn: Vec<bool>,
    frames_sent: u64,
    frames_received: u64,
    last_arrival: Time,
    /// Per host, the controller of its background traffic (empty without rate control).
    rc: Vec<RateController>,
    /// Per host, congestion notifications waiting for its NIC.
    cnps: Vec<VecDeque<Pkt>>,
    ecn_marked: u64,
    cnps_sent: u64,
    cnps_received: u64,
}

impl<A: App> WithBackground<A> {
    /// `inner` on `hosts` hosts with links of `link_bps`, plus background flows per `cfg`
    /// (`cfg.load == 0`: none, and `inner` runs unchanged).
    pub fn new(inner: A, hosts: u32, link_bps: u64, cfg: BackgroundConfig) -> WithBackground<A> {
        let gen = (cfg.load > 0.0).then(|| FlowGen::new(hosts, link_bps, cfg.load, cfg.seed));
        WithBackground {
            inner,
            cfg,
            gen,
            hosts,
            flows: Vec::new(),
            queue: vec![VecDeque::new(); hosts as usize],
            bg_turn: vec![false; hosts as usize],
            frames_sent: 0,
            frames_received: 0,
            last_arrival: 0,
            rc: cfg.cc.map_or_else(Vec::new, |c| {
                let r = RateController::new(c.rate_config(link_bps, BG_FRAME_WIRE as u64), 0);
                vec![r; hosts as usize]
            }),
            cnps: vec![VecDeque::new(); hosts as usize],
            ecn_marked: 0,
            cnps_sent: 0,
            cnps_received: 0,
        }
    }

    fn arrivals_continue(&self, now: Time) -> bool {
        match self.cfg.until {
            Some(t) => now < t,
            None => !self.inner.done(),
        }
    }

    /// The next background frame of `host`, if one is waiting and its rate control lets it
    /// leave at `now`.
    /// `host`'s next waiting background frame: its flow, payload bytes and wire bytes.
    fn bg_front(&self, host: u32) -> Option<(u32, u32, u32)> {
        let &id = self.queue[host as usize].front()?;
        let f = &self.flows[id as usize];
        let chunk = (f.size - f.sent).min(BG_FRAME_WIRE as u64) as u32;
        Some((id, chunk, chunk.max(BG_MIN_WIRE)))
    }

    fn bg_next(&mut self, host: u32, now: Time) -> Option<Pkt> {
        let (id, chunk, wire) = self.bg_front(host)?;
        if let Some(r) = self.rc.get_mut(host as usize) {
            if !r.try_send(now / PS_PER_NS, wire as u64) {
                return None;
            }
        }
        let q = &mut self.queue[host as usize];
        let f = &mut self.flows[id as usize];
        f.sent += chunk as u64;
        if f.sent == f.size {
            q.pop_front();
        }
        self.frames_sent += 1;
        Some(Pkt {
            kind: Kind::Background,
            prio: self.cfg.prio,
            ecn: false,
            seg: 0,
            wire,
            src: host,
            dst: f.dst,
            block: 0,
            a: id,
        })
    }

    /// When `host`'s rate control lets its next waiting background frame leave, if one is
    /// waiting and held back at `now`.
    fn bg_wake(&self, host: u32, now: Time) -> Option<Time> {
        let (_, _, wire) = self.bg_front(host)?;
        let t = self
            .rc
            .get(host as usize)?
            .ready_at(now / PS_PER_NS, wire as u64)
            * PS_PER_NS;
        (t > now).then_some(t)
    }

    /// The background flows' counters and completion times.
    pub fn report(&self) -> BackgroundReport {
        let mut fct: Vec<Time> = self
            .flows
            .iter()
            .filter_map(|f| f.end.map(|e| e - f.start))
            .collect();
        fct.sort_unstable();
        let n = fct.len();
        BackgroundReport {
            load: self.cfg.load,
            flows: self.flows.len() as u64,
            completed: n as u64,
            offered_bytes: self.flows.iter().map(|f| f.size).sum(),
            frames_sent: self.frames_sent,
            frames_received: self.frames_received,
            last_arrival: self.last_arrival,
            fct_mean: if n == 0 {
                0
            } else {
                (fct.iter().map(|&t| t as u128).sum::<u128>() / n as u128) as Time
            },
            fct_p99: if n == 0 {
                0
            } else {
                fct[((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1]
            },
            flow_list: self
                .flows
                .iter()
                .map(|f| (f.start, f.size, f.end.map(|e| e - f.start)))
                .collect(),
            cc: self.cfg.cc.is_some(),
            ecn_marked: self.ecn_marked,
            cnps_sent: self.cnps_sent,
            cnps_received: self.cnps_received,
            rate_decreases: self.rc.iter().map(|r| r.decreases).sum(),
            rates: self
                .rc
                .iter()
                .map(|r| crate::cc::rate_samples(&r.samples))
                .collect(),
        }
    }
}

impl<A: App> App for WithBackground<A> {
    fn host_next(&mut self, host: u32, now: Time) -> Option<Pkt> {
        let h = host as usize;
        if let Some(p) = self.cnps[h].pop_front() {
            self.cnps_sent += 1;
            return Some(p);
        }
        if self.bg_turn[h] {
            if let Some(p) = self.bg_next(host, now) {
                self.bg_turn[h] = false;
                return Some(p);
            }
        }
        if let Some(p) = self.inner.host_next(host, now) {
            self.bg_turn[h] = true;
            return Some(p);
        }
        let p = self.bg_next(host, now)?;
        self.bg_turn[h] = false;
        Some(p)
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out) {
        match pkt.kind {
            Kind::Background => {}
            Kind::Cnp => {
                self.cnps_received += 1;
                self.rc[host as usize].on_congestion(now / PS_PER_NS);
                return;
            }
            _ => return self.inner.host_recv(host, pkt, now, out),
        }
        self.frames_received += 1;
        let f = &mut self.flows[pkt.a as usize];
        debug_assert_eq!(f.dst, host);
        f.received += 1;
        if f.received == f.frames {
            f.end = Some(now);
        }
        if pkt.ecn {
            self.ecn_marked += 1;
            if !self.rc.is_empty() && f.last_cnp.is_none_or(|t| now >= t + CNP_INTERVAL) {
                f.last_cnp = Some(now);
                self.cnps[host as usize].push_back(Pkt {
                    kind: Kind::Cnp,
                    prio: PRIO_CNP,
                    ecn: false,
                    seg: 0,
                    wire: CNP_WIRE,
                    src: host,
                    dst: pkt.src,
                    block: 0,
                    a: pkt.a,
                });
                out.kicks.push(host);
            }
        }
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out) {
        self.inner.switch_recv(sw, pkt, now, out)
    }

    fn next_internal(&self) -> Option<Time> {
        self.inner.next_internal()
    }

    fn run_internal(&mut self, now: Time, out: &mut Out) {
        self.inner.run_internal(now, out)
    }

    fn gauges(&self, now: Time) -> crate::net::Gauges {
        self.inner.gauges(now)
    }

    fn progress(&self) -> (u64, u64) {
        self.inner.progress()
    }

    fn done(&self) -> bool {
        self.inner.done()
    }

    fn start(&mut self, out: &mut Out) {
        self.inner.start(out);
        if let Some(g) = &mut self.gen {
            for h in 0..self.hosts {
                out.timers.push((g.gap(), h, BG_TOKEN));
            }
        }
    }

    fn host_wake(&self, host: u32, now: Time) -> Option<Time> {
        // The earlier of the strategy's own wake time and the background's: the core pulls
        // again then, and `host_next` serves whichever is ready (and names the next time
        // again if neither is).
        match (self.inner.host_wake(host, now), self.bg_wake(host, now)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn timer(&mut self, node: u32, token: u64, now: Time, out: &mut Out) {
        if token & BG_TOKEN == 0 {
            return self.inner.timer(node, token, now, out);
        }
        if !self.arrivals_continue(now) {
            return;
        }
        let g = self
            .gen
            .as_mut()
            .expect("background timers only with a generator");
        let size = g.size();
        let dst = g.dst(node);
        let gap = g.gap();
        let id = u32::try_from(self.flows.len()).expect("fewer than 2^32 background flows");
        self.flows.push(Flow {
            dst,
            size,
            sent: 0,
            frames: size.div_ceil(BG_FRAME_WIRE as u64) as u32,
            received: 0,
            start: now,
            end: None,
            last_cnp: None,
        });
        self.last_arrival = now;
        self.queue[node as usize].push_back(id);
        out.kicks.push(node);
        out.timers.push((now + gap, node, BG_TOKEN));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_constant_is_the_cdf_mean() {
        assert!((cdf_mean(&HADOOP_CDF) - HADOOP_MEAN_BYTES).abs() < 1e-6);
    }

    #[test]
    fn destinations_are_other_hosts_and_all_of_them() {
        let mut g = FlowGen::new(4, 100_000_000_000, 0.5, 7);
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            let d = g.dst(2);
            assert_ne!(d, 2);
            seen[d as usize] += 1;
        }
        assert_eq!(seen[2], 0);
        assert!(seen.iter().enumerate().all(|(i, &n)| i == 2 || n > 1000));
    }
}
