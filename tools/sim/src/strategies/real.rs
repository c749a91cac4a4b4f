//! [`RealTraffic`]: the real code in simulated time. Every worker is `sgnn-transport`'s
//! sans-IO [`Engine`] (the daemon's protocol: block sequencing, pacing and rate control,
//! NACKs and retransmission, tail probes, the all-sent notice, pulls and fetches, BlockDone
//! and implicit advance, or the host-based baseline), and the
//! switch is the software switch's [`Pipeline`] (the P4 program's model: tables, registers,
//! recirculation, block synchronisation, the drop simulator), loaded with the plan as
//! `switch-ctl load` loads it. They exchange real frames (`sgnn-wire` bytes) over the
//! simulator's links and queues, as FoundationDB and TigerBeetle test their code: the same
//! seed gives the same run, event for event.
//!
//! What the simulator adds is time and the network:
//! - a frame takes the wire time of its bytes on every link ([`sgnn_wire::wire_bytes`]);
//! - the switch runs a packet's first pass on arrival, and every further pass (a source that
//!   feeds several aggregators) after the recirculation port has carried it: a FIFO server
//!   of its own rate (`--recirc-gbps`, one data frame time per pass) that a recirculated
//!   packet re-enters at the tail, behind the passes already waiting, as on the hardware;
//! - the switch's egress queues (per port, 8 strict priorities from the pipeline's
//!   `dscp_priority`, a shared buffer) drop what does not fit and mark CE above the ECN
//!   threshold: a marked frame reaches its worker with ECN CE in its IPv4 header, which the
//!   engine's rate control reacts to (the pipeline's own queue-depth marking is off);
//! - engine times are nanoseconds (the simulator's picoseconds, rounded down).
//!
//! The workers start the layer at time 0 (the daemons' start-up probe and start barrier are
//! off: a simulated switch is up before the first frame). The layer ends when every worker
//! holds its sums; [`RealTraffic::verify`] compares them with the single-process reference.

use std::collections::VecDeque;
use std::sync::Arc;

use sgnn_plan::Plan;
use sgnn_switch::fabric::{lower_block, Fabric, FabricBlock, FabricSwitch, ROOT_SPINE};
use sgnn_transport::engine::{Engine, EngineConfig, Layer, Mode};
use sgnn_transport::rate::{Pacing, RateConfig};
use sgnn_transport::WorkerView;
use sgnn_wire::codec::FixedPoint;
use sgnn_wire::frame::Frame;
use sgnn_wire::{wire_bytes, PacketType};
use softswitch::{Emitted, Pipeline, Recirculation, SwitchConfig, Tables};

use super::SwitchCounters;
use crate::daemons::DaemonCounters;
use crate::harness;
use crate::net::{tx_time, App, Gauges, Kind, Out, Pkt, Time, PS_PER_NS};
use crate::SimError;

/// How the run's workers and switch are set up.
#[derive(Debug, Clone)]
pub struct RealConfig {
    /// SwitchGNN (the plan's blocks through the switch) or the host-based baseline.
    pub mode: Mode,
    /// Rate control and pacing of every worker (`None`: none, the workers send at line rate:
    /// the paper's "SwitchGNN w/o CC").
    pub rate: Option<RateConfig>,
    /// Loss recovery: the engines' fetch and BlockDone timeout (`None`: never; a lost frame
    /// then leaves the layer incomplete).
    pub timeout: Option<Time>,
    /// The switch's recirculation port, bit/s.
    pub recirc_bps: u64,
    /// Extra passes on the recirculation port before each Result of an aggregate with more
    /// than one contribution ([`crate::SimConfig::harvest_passes`]; one more when the pass
    /// that completed it also went on to a next pass).
    pub harvest_passes: u32,
    /// The switch's drop simulator: the probability of dropping each SwitchGNN frame a host
    /// sends (the testbed's `--loss`).
    pub loss: f64,
    /// Seed of the features and of the drop simulator.
    pub seed: u64,
    /// Install every block's `agg_table` entries at the start, as `switch-ctl load` does.
    /// Off (the default), the switch is given each block's entries as it reaches it, which
    /// behaves the same in less memory ([`RealTraffic`]'s `follow_blocks`).
    pub all_blocks: bool,
    /// A leaf-spine fabric (`sgnn_switch::fabric`: two-level aggregation, every leaf and
    /// spine a software switch) instead of a star. A leaf drops `loss` of the frames its
    /// workers send, as a star's switch does; every switch drops `fabric_loss` of the frames
    /// another switch sends it. Each switch draws from its own seeded stream.
    pub fabric: Option<Fabric>,
    /// On a fabric: the probability of dropping each frame between two switches.
    pub fabric_loss: f64,
    /// Planned pacing of the SwitchGNN workers (the daemon's `--pace`).
    pub pacing: Pacing,
}

/// Frames in flight, by index (a [`Pkt`] carries the index in `a`).
#[derive(Debug, Default)]
struct Frames {
    slots: Vec<Vec<u8>>,
    free: Vec<u32>,
}

impl Frames {
    fn put(&mut self, f: Vec<u8>) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = f;
                i
            }
            None => {
                self.slots.push(f);
                self.slots.len() as u32 - 1
            }
        }
    }

    fn take(&mut self, i: u32) -> Vec<u8> {
        self.free.push(i);
        std::mem::take(&mut self.slots[i as usize])
    }
}

/// The simulator's [`Kind`] of a frame (for flow hashing and the reports), its block, and its
/// count (the contributions a Result sums).
fn kind_of(frame: &[u8]) -> (Kind, u32, u16) {
    match sgnn_wire::FrameRepr::parse(frame) {
        Ok((r, _)) => {
            let k = match r.sgnn.packet_type {
                PacketType::Data => Kind::Data,
                PacketType::Result => Kind::Result,
                PacketType::BlockDone => Kind::BlockDone,
                PacketType::BlockAdvance => Kind::BlockAdvance,
                PacketType::FetchReq => Kind::Fetch,
                PacketType::Ack => Kind::Ack,
                PacketType::Bypass => Kind::Raw,
            };
            (k, r.sgnn.block_id as u32, r.sgnn.count)
        }
        Err(_) => (Kind::Test, 0, 0),
    }
}

/// Features of vertex `v`, lane `d` (the harness's: [`crate::harness::feature`]).
pub use crate::harness::feature;

/// One simulated switch: its pipeline, its ports' neighbours and its recirculation port.
struct SimSwitch {
    pipeline: Pipeline,
    /// Its node in the topology.
    node: u32,
    /// Per port, the neighbour node it leads to.
    ports: Vec<u32>,
    /// Per neighbour node, the port (`u16::MAX`: none).
    port_of: Vec<u16>,
    /// Its place in a fabric (`None`: the star's switch).
    role: Option<FabricSwitch>,
    /// Passes on the recirculation port: (completion time, packet), completion ascending.
    recirc: VecDeque<(Time, Recirculation)>,
    recirc_free: Time,
    /// The block whose entries were installed last.
    installed: u16,
    active_peak: u64,
    /// Frames this switch drew a drop for (on a fabric: the index into its drop stream).
    drawn: u64,
}

/// The engines of every worker and the software switch's pipelines: one switch on a star,
/// every leaf and spine on a leaf-spine fabric.
pub struct RealTraffic<'p> {
    plan: &'p Plan,
    cfg: RealConfig,
    engines: Vec<Engine>,
    switches: Vec<SimSwitch>,
    /// Node id of switch 0 (the switches follow the hosts).
    first_switch: u32,
    /// Per worker, its switch's node.
    host_switch: Vec<u32>,
    frames: Frames,
    emitted: Vec<Emitted>,
    recirc_pass: Time,
    /// Per worker: when its sums were complete.
    done_at: Vec<Option<Time>>,
    sums: Vec<Option<Vec<f32>>>,
    /// Cells (destination, segment) all workers expect (progress).
    cells_total: u64,
    /// The first fatal engine error (a worker that cannot go on).
    pub error: Option<(u32, String)>,
    /// When the last worker's sums were complete.
    pub finish: Option<Time>,
    /// Switch counters as the simulator reports them.
    pub counters: SwitchCounters,
    /// The daemons' and the switch's Acks (beyond the planner's traffic model: tail probes,
    /// their answers and NACKs, all-sent notices): per host, wire bytes up and down, and
    /// frames sent by hosts.
    pub acks: crate::Overhead,
    /// The plan's replica groups, for installing blocks.
    groups: sgnn_plan::ReplicaGroups,
    /// Blocks lowered onto the fabric lately (a few: the switches are within one block).
    lowered: VecDeque<(usize, FabricBlock)>,
}

impl<'p> RealTraffic<'p> {
    /// Switch `si`'s `agg_table` holds the entries of the block it is at and of the block
    /// before it (a pass of that block may still be on the recirculation path when the last
    /// BlockDone advances the switch). Every other block's frames are dropped as stale before
    /// the table is looked up, so the pipeline behaves as with every block installed (`tests/
    /// strategies.rs` checks a run against one with every block installed). A spine, which
    /// does not gate partials by block, follows the root spine's block (a leaf sends a block's
    /// partials only after the root advanced to it, and the root advances past it only once
    /// every partial is in).
    fn follow_blocks(&mut self, si: usize) {
        if self.plan.blocks.is_empty() || self.cfg.all_blocks {
            return;
        }
        let at = match self.switches[si].role {
            Some(FabricSwitch::Spine(_)) => {
                let root = self.cfg.fabric.map_or(0, |f| f.leaves + ROOT_SPINE) as usize;
                self.switches[root].pipeline.regs.sync_block
            }
            _ => self.switches[si].pipeline.regs.sync_block,
        };
        let sw = &mut self.switches[si];
        if at == sw.installed {
            return;
        }
        let before = sw.installed;
        for b in 0..self.plan.blocks.len() as u16 {
            if b != at && b != before && sw.pipeline.tables.agg_table.has_block(b) {
                sw.pipeline.tables.agg_table.remove_block(b);
            }
        }
        if !sw.pipeline.tables.agg_table.has_block(at) {
            match sw.role {
                None => sw
                    .pipeline
                    .tables
                    .install_block(self.plan, at as usize, &self.groups),
                Some(role) => {
                    let fabric = self.cfg.fabric.expect("a fabric switch has its fabric");
                    let b = at as usize;
                    if !self.lowered.iter().any(|(lb, _)| *lb == b) {
                        if self.lowered.len() >= 3 {
                            self.lowered.pop_front();
                        }
                        let fb = lower_block(self.plan, &fabric, b, &self.groups);
                        self.lowered.push_back((b, fb));
                    }
                    let fb = &self
                        .lowered
                        .iter()
                        .find(|(lb, _)| *lb == b)
                        .expect("lowered")
                        .1;
                    self.switches[si]
                        .pipeline
                        .tables
                        .install_entries(fb.of(role));
                }
            }
        }
        self.switches[si].installed = at;
    }

    /// Workers on hosts `0..M`. On a star (`cfg.fabric` `None`) worker `w` is on port `w`
    /// of the switch at node `M`; on a fabric the leaves are nodes `M..M + leaves` and the
    /// spines follow them, ports as `sgnn_switch::fabric` numbers them (the simulator's
    /// `Topology::leaf_spine`).
    pub fn new(plan: &'p Plan, cfg: RealConfig) -> Result<RealTraffic<'p>, SimError> {
        let workers = plan.workers();
        let mut switches = Vec::new();
        let mut host_switch = vec![workers; workers as usize];
        let nodes = |n: usize| vec![u16::MAX; n];
        let groups;
        match cfg.fabric {
            None => {
                let ports = harness::worker_ports(workers as u16);
                let switch_cfg = SwitchConfig::for_plan(plan);
                // The switch's src_seen holds SEEN_CELLS (source, segment) pairs of a block,
                // as the P4 program's (more in a larger build for more aggregators:
                // SwitchConfig::for_plan). The baseline's switch only forwards: its plan's
                // blocks do not matter.
                if cfg.mode == Mode::SwitchGnn {
                    let have = u64::from(switch_cfg.seen_cells);
                    if let Some((block, cells)) =
                        sgnn_switch::aggregation::block_over_seen_cells(plan, have)
                    {
                        return Err(SimError::SeenCells { block, cells, have });
                    }
                }
                // The switch holds the entries of the block it is at and of the one before,
                // installed as it advances (RealTraffic::follow_blocks): the plan's every
                // block at once took more memory than the hosts' views at the speed-target
                // size (docs/benchmarks.md).
                let (mut tables, g) = Tables::without_blocks(plan, &ports);
                let blocks = if cfg.all_blocks {
                    0..plan.blocks.len()
                } else {
                    0..plan.blocks.len().min(1)
                };
                for b in blocks {
                    tables.install_block(plan, b, &g);
                }
                groups = g;
                let mut port_of = nodes(workers as usize + 1);
                for (w, p) in port_of.iter_mut().take(workers as usize).enumerate() {
                    *p = w as u16;
                }
                switches.push((switch_cfg, tables, None, (0..workers).collect(), port_of));
            }
            Some(fabric) => {
                if fabric.workers != workers {
                    return Err(SimError::HostCount {
                        hosts: fabric.workers,
                        workers,
                    });
                }
                let (nl, ns) = (fabric.leaves, fabric.spines);
                let total = (workers + nl + ns) as usize;
                let leaf_node = |l: u32| workers + l;
                let spine_node = |s: u32| workers + nl + s;
                for w in 0..workers {
                    host_switch[w as usize] = leaf_node(fabric.leaf_of(w));
                }
                groups = plan.replica_groups();
                // A leaf's src_seen holds its block's (source, segment) pairs, as a star's.
                let leaf_cells = SwitchConfig::for_plan(plan).seen_cells;
                if cfg.mode == Mode::SwitchGnn {
                    let have = u64::from(leaf_cells);
                    if let Some((block, cells)) =
                        sgnn_switch::aggregation::block_over_seen_cells(plan, have)
                    {
                        return Err(SimError::SeenCells { block, cells, have });
                    }
                }
                // The blocks every switch starts with, lowered once for all of them.
                let start: Vec<FabricBlock> = match cfg.mode {
                    Mode::SwitchGnn if cfg.all_blocks => (0..plan.blocks.len()).collect(),
                    Mode::SwitchGnn => (0..plan.blocks.len().min(1)).collect(),
                    Mode::HostBased => Vec::new(),
                }
                .into_iter()
                .map(|b: usize| lower_block(plan, &fabric, b, &groups))
                .collect();
                for role in (0..nl)
                    .map(FabricSwitch::Leaf)
                    .chain((0..ns).map(FabricSwitch::Spine))
                {
                    let mut sc = SwitchConfig::for_fabric(plan, &fabric, role);
                    let mut tables = Tables::for_fabric(&fabric, role, &groups);
                    let mut port_of = nodes(total);
                    let ports: Vec<u32> = match role {
                        FabricSwitch::Leaf(l) => fabric
                            .workers_of(l)
                            .chain((0..ns).map(spine_node))
                            .collect(),
                        FabricSwitch::Spine(_) => (0..nl).map(leaf_node).collect(),
                    };
                    for (p, &n) in ports.iter().enumerate() {
                        port_of[n as usize] = p as u16;
                    }
                    if matches!(role, FabricSwitch::Spine(_)) {
                        // A spine's src_seen: one cell per (partial, segment) of a block, at
                        // most every aggregator once per leaf.
                        sc.seen_cells = sc
                            .seen_cells
                            .max((plan.manifest.aggregators * u64::from(nl)).min(1 << 28) as u32);
                    }
                    for fb in &start {
                        tables.install_entries(fb.of(role));
                    }
                    switches.push((sc, tables, Some(role), ports, port_of));
                }
            }
        }
        let fabric = cfg.fabric.is_some();
        let switches: Vec<SimSwitch> = switches
            .into_iter()
            .enumerate()
            .map(|(i, (mut sc, mut tables, role, ports, port_of))| {
                // A star's switch drops what its hosts send with its own drop simulator; a
                // fabric's switches drop per link (`switch_recv`), which the pipeline's drop
                // simulator, blind to ports, cannot.
                sc.drop_probability = if fabric { 0.0 } else { cfg.loss };
                sc.drop_seed = cfg.seed;
                for &(_, dscp, queue) in &sgnn_wire::dscp::CLASSES {
                    tables.dscp_priority.insert(dscp, queue);
                }
                SimSwitch {
                    pipeline: Pipeline::new(sc, tables),
                    node: workers + i as u32,
                    ports,
                    port_of,
                    role,
                    recirc: VecDeque::new(),
                    recirc_free: 0,
                    installed: 0,
                    active_peak: 0,
                    drawn: 0,
                }
            })
            .collect();
        // No recovery: timers that never fire within any layer (11.6 simulated days), and no
        // sum that could overflow the engine's deadlines.
        const NEVER_NS: u64 = 1_000_000_000_000_000;
        let timeout_ns = cfg
            .timeout
            .map_or(NEVER_NS, |t| (t / PS_PER_NS).clamp(1, NEVER_NS));
        let engine_cfg = EngineConfig {
            mode: cfg.mode,
            rate: cfg.rate.unwrap_or(RateConfig {
                // No rate control: the floor is the ceiling, so a halving changes nothing.
                initial_mbps: 1e9,
                min_mbps: 1e9,
                max_mbps: 1e9,
                ..RateConfig::default()
            }),
            fetch_timeout_ns: timeout_ns,
            advance_timeout_ns: timeout_ns,
            resend_timeout_ns: timeout_ns.saturating_mul(4),
            // No recovery asks nothing again, of the switch or of the peers: no liveness
            // hellos and no BlockDone sent again with them (`Engine::ask_the_switch_again`).
            liveness_ns: if cfg.timeout.is_some() {
                EngineConfig::default().liveness_ns
            } else {
                0
            },
            // A simulated switch is up before the first frame: no start-up probe or barrier.
            probe: false,
            peer_barrier: false,
            under_leaf: cfg.fabric.is_some(),
            pacing: cfg.pacing,
            ..EngineConfig::default()
        };
        let mut engines = Vec::with_capacity(workers as usize);
        let mut cells_total = 0u64;
        for w in 0..workers {
            let view = Arc::new(
                WorkerView::new(plan, w, None).map_err(|e| SimError::Engine {
                    worker: w,
                    message: e.to_string(),
                })?,
            );
            let segs = view.segments as u64;
            cells_total += match cfg.mode {
                Mode::SwitchGnn => view
                    .blocks
                    .iter()
                    .map(|b| b.dests.len() as u64)
                    .sum::<u64>(),
                Mode::HostBased => view.host_based.needs.len() as u64,
            } * segs;
            let mut ec = engine_cfg.clone();
            // A worker's switch is its leaf on a fabric.
            let si = (host_switch[w as usize] - workers) as usize;
            ec.switch_ip = switches[si].pipeline.config.ip;
            engines.push(Engine::new(view, ec, 0));
        }
        let n = switches.len();
        Ok(RealTraffic {
            plan,
            recirc_pass: tx_time(wire_bytes(sgnn_wire::DATA_FRAME_LEN), cfg.recirc_bps.max(1)),
            cfg,
            engines,
            switches,
            first_switch: workers,
            host_switch,
            frames: Frames::default(),
            emitted: Vec::new(),
            done_at: vec![None; workers as usize],
            sums: vec![None; workers as usize],
            cells_total,
            error: None,
            finish: None,
            counters: SwitchCounters {
                peak_aggregators_per_switch: vec![0; n],
                ..Default::default()
            },
            acks: crate::Overhead {
                uplink: vec![0; workers as usize],
                downlink: vec![0; workers as usize],
                frames: 0,
            },
            groups,
            lowered: VecDeque::new(),
        })
    }

    /// The features of worker `w`'s vertices (ascending ids), `dim` values each.
    fn local_features(&self, w: usize) -> Vec<f32> {
        let dim = self.plan.manifest.config.feature_dim;
        let view = self.engines[w].view();
        let mut x = Vec::with_capacity(view.local_vertices.len() * dim as usize);
        for &v in &view.local_vertices {
            x.extend((0..dim).map(|d| feature(self.cfg.seed, v, d)));
        }
        x
    }

    /// The software switch as the run left it (a fabric's first leaf).
    pub fn switch(&self) -> &Pipeline {
        &self.switches[0].pipeline
    }

    /// Every switch as the run left it: the star's one, or a fabric's leaves then spines.
    pub fn switches(&self) -> impl Iterator<Item = &Pipeline> + '_ {
        self.switches.iter().map(|s| &s.pipeline)
    }

    /// The engines as the run left them.
    pub fn engines(&self) -> &[Engine] {
        &self.engines
    }

    /// What the workers did besides their first transmissions, summed over workers.
    pub fn host_counters(&self) -> DaemonCounters {
        let mut h = DaemonCounters::default();
        for e in &self.engines {
            let s = e.stats();
            h.fetch_timeouts += s.fetch_timeouts;
            h.fetch_requests += s.fetches_sent;
            h.fetch_replies += s.fetches_answered;
            h.block_done_resends += s.block_done_resent;
            h.duplicates += s.results_ignored + s.raw_duplicate;
            h.stale += s.stale;
            h.ecn_signals += s.ecn_marks;
            h.cnps_sent += s.cnps_sent;
            h.cnps_received += s.cnps_received;
            h.rate_decreases += s.rate_decreases;
            h.retransmissions += s.retransmissions;
            h.resend_timeouts += s.resend_timeouts;
            h.acks += s.acks_sent;
            h.pulls += s.pulls;
            h.cells_by_result += s.cells_by_result;
            h.cells_by_raw += s.cells_by_raw;
        }
        h
    }

    /// Every worker's sending rate over time, `(time, bit/s)`.
    pub fn rate_samples(&self) -> Vec<Vec<(Time, u64)>> {
        self.engines
            .iter()
            .map(|e| {
                e.stats()
                    .rate_mbps
                    .iter()
                    // The engine's samples are (seconds since its start, Mbit/s); Time is ps.
                    .map(|&(t_s, mbps)| ((t_s * 1e12).round() as Time, (mbps * 1e6) as u64))
                    .collect()
            })
            .collect()
    }

    /// Checks every worker's sums against the single-process reference (the plan's graph,
    /// the same features, the plan's fixed point): bit for bit, as the testbed does. Returns
    /// the number of values compared.
    pub fn verify(&self) -> Result<u64, SimError> {
        let dim = self.plan.manifest.config.feature_dim as usize;
        let n = self.plan.graph.num_vertices();
        let mut x = Vec::with_capacity(n * dim);
        for v in 0..n as u32 {
            x.extend((0..dim as u32).map(|d| feature(self.cfg.seed, v, d)));
        }
        let fixed: FixedPoint = self.engines[0].view().fixed;
        let want = sgnn_transport::reference::reference_sums(&self.plan.graph, fixed, dim, &x);
        let mut compared = 0u64;
        for (w, e) in self.engines.iter().enumerate() {
            let got = self.sums[w].as_ref().ok_or_else(|| SimError::Engine {
                worker: w as u32,
                message: "the layer did not complete".into(),
            })?;
            let vertices = &e.view().local_vertices;
            if let Some(vertex) = harness::invariants::first_wrong_sum(vertices, got, &want, dim) {
                return Err(SimError::WrongSums {
                    worker: w as u32,
                    vertex,
                });
            }
            compared += (vertices.len() * dim) as u64;
        }
        Ok(compared)
    }

    /// The engines' clock (ns) at simulated time `now` (ps), rounded up: an engine paces
    /// in whole ns, and a frame whose pacing deadline falls within the current ns is due now,
    /// as the core's own pacing (in ps) already says. Rounded down, about every second frame
    /// at line rate found its engine "not yet ready" by under a nanosecond and cost a wake-up
    /// event and a second poll.
    fn ns(now: Time) -> u64 {
        now.div_ceil(PS_PER_NS)
    }

    /// Runs worker `w`'s due timeouts and collects its sums and errors. Its next timeout is
    /// [`App::host_wake`]'s answer: the core asks the worker for a frame again then.
    fn service(&mut self, w: usize, now: Time) {
        let ns = Self::ns(now);
        let e = &mut self.engines[w];
        if e.poll_timeout(ns).is_some_and(|t| t <= ns) {
            if let Err(err) = e.handle_timeout(ns) {
                self.error.get_or_insert((w as u32, err.to_string()));
            }
        }
        self.collect(w, now);
    }

    fn collect(&mut self, w: usize, now: Time) {
        let e = &mut self.engines[w];
        if let Some(err) = e.take_error() {
            self.error.get_or_insert((w as u32, err.to_string()));
        }
        if let Some(s) = e.take_sums() {
            self.sums[w] = Some(s);
            self.done_at[w] = Some(now);
            if self.done_at.iter().all(Option::is_some) {
                self.finish = Some(now);
            }
        }
    }

    fn note_aggregators(&mut self, si: usize) {
        let sw = &mut self.switches[si];
        let active = sw.pipeline.aggregators_active();
        if active > sw.active_peak {
            sw.active_peak = active;
            self.counters.note_peak(si, active);
        }
    }

    /// Sends what switch `si` emitted at `t`. With harvest passes (a TNA switch), the Result
    /// of an aggregate of several contributions first takes them on the recirculation port:
    /// `cfg.harvest_passes`, and one more when the completing pass also `went_on` to a next
    /// pass (its mirror copy adds its lanes there, docs/tofino.md "Lane pairs"). A leaf's
    /// partial takes them too (it is the same harvest).
    fn emit(&mut self, si: usize, t: Time, out: &mut Out, went_on: bool) {
        // Taken and put back so the loop can use the recirculation port while the buffer
        // keeps its capacity.
        let mut emitted = std::mem::take(&mut self.emitted);
        let node = self.switches[si].node;
        let role = self.switches[si].role;
        let own_ip = self.switches[si].pipeline.config.ip;
        for e in emitted.drain(..) {
            let (kind, block, count) = kind_of(&e.frame);
            let mut at = t;
            // What this switch built (a leaf forwards the spines' Results too).
            let built = Frame::new_checked(&e.frame[..]).is_ok_and(|f| f.ipv4().src() == own_ip);
            // A switch builds Data only as a leaf's partial.
            let sum = built && (kind == Kind::Result || kind == Kind::Data);
            if sum && self.cfg.harvest_passes > 0 && count > 1 {
                let passes = self.cfg.harvest_passes + u32::from(went_on);
                at = self.occupy_recirc(si, t, passes);
                self.counters.harvest_passes += u64::from(passes);
            }
            match (kind, role) {
                _ if !built => {}
                (Kind::Data, _) => self.counters.leaf_partials += 1,
                (Kind::Result, Some(FabricSwitch::Spine(_))) => self.counters.spine_results += 1,
                (Kind::Result, Some(FabricSwitch::Leaf(_))) => self.counters.leaf_results += 1,
                // The star's Results are its pipeline's count (pull answers apart).
                _ => {}
            }
            let wire = wire_bytes(e.frame.len()) as u32;
            let slot = self.frames.put(e.frame);
            let dst = self.switches[si].ports[e.port as usize];
            out.emits.push((
                at,
                node,
                Pkt {
                    kind,
                    prio: e.queue,
                    ecn: false,
                    seg: 0,
                    wire,
                    src: node,
                    dst,
                    block,
                    a: slot,
                },
            ));
        }
        self.emitted = emitted;
    }

    /// Books `passes` pass times on switch `si`'s recirculation port from `now` (after what
    /// it already carries); returns when they end.
    /// On a fabric, whether switch `si` drops the frame that node `from` sent it: `loss` for
    /// a worker's frame, `fabric_loss` for another switch's, drawn from the switch's own
    /// stream (seeded by the run's seed and the switch's index).
    fn drops(&mut self, si: usize, from: u32) -> bool {
        let p = if from < self.first_switch {
            self.cfg.loss
        } else {
            self.cfg.fabric_loss
        };
        if p <= 0.0 {
            return false;
        }
        let sw = &mut self.switches[si];
        sw.drawn += 1;
        let x = crate::hash::draw_key(self.cfg.seed, 0x6c6f_7373_0000 + si as u64, sw.drawn);
        ((x >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn occupy_recirc(&mut self, si: usize, now: Time, passes: u32) -> Time {
        let sw = &mut self.switches[si];
        let start = sw.recirc_free.max(now);
        self.counters.max_recirc_backlog = self.counters.max_recirc_backlog.max(start - now);
        sw.recirc_free = start + self.recirc_pass * Time::from(passes);
        sw.recirc_free
    }

    fn recirculate_later(&mut self, si: usize, now: Time, r: Recirculation) {
        let done = self.occupy_recirc(si, now, 1);
        self.switches[si].recirc.push_back((done, r));
    }

    /// Runs every pass switch `si`'s recirculation port has delivered by `now`.
    fn serve_recirculation(&mut self, si: usize, now: Time, out: &mut Out) {
        while self.switches[si]
            .recirc
            .front()
            .is_some_and(|&(t, _)| t <= now)
        {
            let (t, r) = self.switches[si].recirc.pop_front().expect("checked");
            let next = self.switches[si].pipeline.recirculate(r, &mut self.emitted);
            self.emit(si, t, out, next.is_some());
            if let Some(r) = next {
                self.recirculate_later(si, t, r);
            }
        }
        self.note_aggregators(si);
    }

    fn finalize_counters(&mut self) {
        use sgnn_switch::counters::Event;
        let sum = |e: Event| -> u64 {
            self.switches
                .iter()
                .map(|s| s.pipeline.counters.get(e))
                .sum()
        };
        let c = &mut self.counters;
        c.contributions = sum(Event::Aggregated);
        c.recirculations = sum(Event::Recirculated) + c.harvest_passes;
        if self.cfg.fabric.is_none() {
            c.leaf_results = sum(Event::Results);
        }
        // Aggregates completed and sent down as Results (a leaf's partials are not).
        c.results = c.leaf_results + c.spine_results;
        c.spine_partials = self
            .switches
            .iter()
            .filter(|s| matches!(s.role, Some(FabricSwitch::Spine(_))))
            .map(|s| s.pipeline.counters.data)
            .sum();
        c.stale = sum(Event::DropStale);
        c.released = sum(Event::Reclaimed);
        c.advance_resends = sum(Event::BlockDoneStale);
        c.generation_conflicts = sum(Event::BypassedLate);
    }

    /// The switch counters at the end of the run.
    pub fn switch_counters(&mut self) -> SwitchCounters {
        self.finalize_counters();
        self.counters.clone()
    }

    /// The next pass any recirculation port delivers, and its switch.
    fn next_pass(&self) -> Option<(Time, usize)> {
        self.switches
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.recirc.front().map(|&(t, _)| (t, i)))
            .min()
    }
}

impl App for RealTraffic<'_> {
    fn start(&mut self, out: &mut Out) {
        let dim = self.plan.manifest.config.feature_dim as usize;
        for w in 0..self.engines.len() {
            let x = self.local_features(w);
            if let Err(e) = self.engines[w].start_round(0, Layer::forward(0), dim, &x) {
                self.error.get_or_insert((w as u32, e.to_string()));
            }
            self.collect(w, 0);
        }
        let _ = out;
    }

    fn host_next(&mut self, host: u32, now: Time) -> Option<Pkt> {
        let w = host as usize;
        if self.error.is_some() {
            return None;
        }
        self.service(w, now);
        let (_, frame) = self.engines[w].poll_transmit(Self::ns(now))?;
        let (kind, block, _) = kind_of(&frame);
        let wire = wire_bytes(frame.len()) as u32;
        if kind == Kind::Ack {
            self.acks.uplink[w] += wire as u64;
            self.acks.frames += 1;
        }
        let slot = self.frames.put(frame);
        Some(Pkt {
            kind,
            prio: 0,
            ecn: false,
            seg: 0,
            wire,
            src: host,
            dst: self.host_switch[w],
            block,
            a: slot,
        })
    }

    fn host_wake(&self, host: u32, now: Time) -> Option<Time> {
        if self.done() {
            return None;
        }
        self.engines[host as usize]
            .poll_timeout(Self::ns(now))
            .map(|t| t.saturating_mul(PS_PER_NS).max(now + 1))
    }

    fn host_recv(&mut self, host: u32, pkt: Pkt, now: Time, out: &mut Out) {
        let w = host as usize;
        if pkt.kind == Kind::Ack {
            self.acks.downlink[w] += pkt.wire as u64;
            self.acks.frames += 1;
        }
        let mut frame = self.frames.take(pkt.a);
        if pkt.ecn {
            // The egress queue was over the ECN threshold: CE, as an AQM marks.
            if let Ok(mut f) = Frame::new_checked(&mut frame[..]) {
                f.set_ecn_ce();
            }
        }
        if self.error.is_some() {
            return;
        }
        self.engines[w].handle_frame(Self::ns(now), &frame);
        self.service(w, now);
        out.kicks.push(host);
    }

    fn switch_recv(&mut self, sw: u32, pkt: Pkt, now: Time, out: &mut Out) {
        let si = (sw - self.first_switch) as usize;
        self.serve_recirculation(si, now, out);
        let frame = self.frames.take(pkt.a);
        // Before the frame: the block this switch (or, for a spine, the root) is at now.
        self.follow_blocks(si);
        let port = self.switches[si].port_of[pkt.src as usize];
        if self.cfg.fabric.is_some() && self.drops(si, pkt.src) {
            self.switches[si]
                .pipeline
                .dropped_at_ingress(port, frame.len());
            return;
        }
        let next = self.switches[si]
            .pipeline
            .ingress(port, &frame, &mut self.emitted);
        self.emit(si, now, out, next.is_some());
        if let Some(r) = next {
            self.recirculate_later(si, now, r);
        }
        self.note_aggregators(si);
    }

    fn next_internal(&self) -> Option<Time> {
        self.next_pass().map(|(t, _)| t)
    }

    fn run_internal(&mut self, now: Time, out: &mut Out) {
        for si in 0..self.switches.len() {
            self.serve_recirculation(si, now, out);
        }
    }

    fn progress(&self) -> (u64, u64) {
        if self.finish.is_some() || self.error.is_some() {
            return (self.cells_total, self.cells_total);
        }
        let done: u64 = self
            .engines
            .iter()
            .map(|e| {
                let s = e.stats();
                s.cells_by_result + s.cells_by_raw
            })
            .sum();
        (
            done.min(self.cells_total.saturating_sub(1)),
            self.cells_total,
        )
    }

    fn done(&self) -> bool {
        self.finish.is_some() || self.error.is_some()
    }

    fn gauges(&self, _now: Time) -> Gauges {
        Gauges {
            aggregators_in_use: self
                .switches
                .iter()
                .map(|s| s.pipeline.aggregators_active())
                .sum(),
            contributions: self
                .switches
                .iter()
                .map(|s| s.pipeline.counters.aggregated)
                .sum(),
        }
    }
}
