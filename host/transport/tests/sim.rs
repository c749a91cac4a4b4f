//! The engines of N workers and the software switch's pipeline in one process, in virtual
//! time, over a seeded channel that drops, delays (reorders) and duplicates frames. Every
//! worker's sums must equal the single-process reference, bit for bit, and lie within the
//! codec's error bound of the real sums.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sgnn_graph::Features;
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_transport::engine::{Engine, EngineConfig, Layer, Mode};
use sgnn_transport::reference::{next_layer, reference_sums};
use sgnn_transport::{TransportError, WorkerView};
use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::{FrameRepr, PacketType};
use softswitch::{Pipeline, SwitchConfig, Tables, WorkerPort};

fn plan(scale: u32, workers: u32, mem: u64, dim: u32) -> Plan {
    let g = sgnn_graph::load_graph(&format!("rmat:scale={scale},edge_factor=8,seed=3")).unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: mem,
            agg_bytes: 128,
            feature_dim: dim,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 256,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat".into(),
        max_abs_value: 8.0,
    };
    make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0
}

/// What the channel does to frames.
#[derive(Clone, Copy)]
struct Channel {
    drop: f64,
    dup: f64,
    /// Uniform extra delay in ns (queueing). A link delivers in the order it was given
    /// frames, as a cable does, unless `reorder` lets a frame overtake.
    jitter: u64,
    /// Probability that a frame ignores its link's order (delivered `LATENCY` + jitter after
    /// it was sent, ahead of frames still queued): reordering as a multi-queue NIC or a
    /// multipath fabric makes it.
    reorder: f64,
    seed: u64,
}

/// A channel that loses, duplicates and delays nothing.
const QUIET: Channel = Channel {
    drop: 0.0,
    dup: 0.0,
    jitter: 0,
    reorder: 0.0,
    seed: 1,
};

const LATENCY: u64 = 2_000;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum To {
    /// The switch, entering on this port (worker w's is port w; [`STRAY_PORT`] is no
    /// worker's).
    Switch(u16),
    Host(u16),
}

/// The switch port a frame from nowhere enters on (no worker's).
const STRAY_PORT: u16 = 511;

/// A frame put on the network by the test, and where it goes.
type Injected = (To, Vec<u8>);

/// (delivery time, sequence number, destination, frame).
type Event = (u64, u64, To, Vec<u8>);

struct Sim {
    plan: Plan,
    sw: Pipeline,
    engines: Vec<Engine>,
    alive: Vec<bool>,
    chan: Channel,
    rng: ChaCha8Rng,
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
    now: u64,
    /// Per link (by destination: each worker's access link into the switch, the switch's
    /// link to each worker), when its last frame is delivered.
    link_free: BTreeMap<To, u64>,
    /// Drop this many BlockAdvances to this worker (tests the implicit advance and the
    /// BlockDone resend).
    drop_advances_to: Option<(u16, usize)>,
    /// Frames injected (from nowhere: forged or stray) when this round starts.
    inject: Option<(usize, Vec<Injected>)>,
    /// Worker w's daemon starts at this virtual time: before it, it is not polled and frames
    /// to it are lost (a port that is not up yet).
    start_at: Vec<u64>,
    /// Types of the frames lost that way.
    lost_before_start: Vec<PacketType>,
}

/// A software switch loaded with `plan` (workers on ports 0..M), as `switch-ctl load` leaves
/// it: registers fresh, at round 0 block 0.
fn loaded_switch(plan: &Plan) -> Pipeline {
    let workers = plan.workers() as u16;
    let ports: Vec<WorkerPort> = (0..workers)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect();
    Pipeline::new(
        SwitchConfig {
            workers,
            ..SwitchConfig::for_plan(plan)
        },
        Tables::from_plan(plan, &ports),
    )
}

impl Sim {
    fn new(plan: Plan, cfg: EngineConfig, chan: Channel) -> Sim {
        let workers = plan.workers() as u16;
        let sw = loaded_switch(&plan);
        let engines = (0..workers as u32)
            .map(|w| {
                let view = Arc::new(WorkerView::new(&plan, w, None).unwrap());
                Engine::new(view, cfg.clone(), 0)
            })
            .collect();
        Sim {
            plan,
            sw,
            engines,
            alive: vec![true; workers as usize],
            rng: ChaCha8Rng::seed_from_u64(chan.seed),
            chan,
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            link_free: BTreeMap::new(),
            drop_advances_to: None,
            inject: None,
            start_at: vec![0; workers as usize],
            lost_before_start: Vec::new(),
        }
    }

    fn up(&self, w: usize) -> bool {
        self.alive[w] && self.now >= self.start_at[w]
    }

    fn send(&mut self, to: To, frame: Vec<u8>) {
        if self.rng.gen::<f64>() < self.chan.drop {
            return;
        }
        // Any frame may be duplicated, first transmissions of Data included: the switch drops
        // a second first-pass copy (`src_seen`, docs/switch-interface.md).
        let copies = if self.rng.gen::<f64>() < self.chan.dup {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut at = self.now + LATENCY + self.rng.gen_range(0..=self.chan.jitter);
            let fifo = self.rng.gen::<f64>() >= self.chan.reorder;
            let free = self.link_free.entry(to).or_insert(0);
            if fifo {
                at = at.max(*free);
            }
            *free = (*free).max(at);
            self.seq += 1;
            self.heap.push(Reverse((at, self.seq, to, frame.clone())));
        }
    }

    /// Runs until `until` says stop (checked after every step); returns the first engine error.
    fn run(
        &mut self,
        limit: u64,
        mut step: impl FnMut(&mut Sim) -> bool,
    ) -> Result<(), (u16, TransportError)> {
        loop {
            // Transmit and fire timers at `now`.
            for w in 0..self.engines.len() {
                if !self.up(w) {
                    continue;
                }
                if let Err(e) = self.engines[w].handle_timeout(self.now) {
                    return Err((w as u16, e));
                }
                while let Some((_, f)) = self.engines[w].poll_transmit(self.now) {
                    self.send(To::Switch(w as u16), f);
                }
                if let Some(e) = self.engines[w].take_error() {
                    return Err((w as u16, e));
                }
            }
            if step(self) {
                return Ok(());
            }
            let mut next = self.heap.peek().map(|Reverse((t, ..))| *t);
            for w in 0..self.engines.len() {
                if self.up(w) {
                    if let Some(t) = self.engines[w].poll_timeout(self.now) {
                        next = Some(next.map_or(t, |n: u64| n.min(t)));
                    }
                } else if self.alive[w] {
                    let t = self.start_at[w];
                    next = Some(next.map_or(t, |n: u64| n.min(t)));
                }
            }
            let next = next.expect("something to wait for");
            assert!(
                next <= limit,
                "virtual time limit reached: nothing finished"
            );
            self.now = self.now.max(next);
            while let Some(Reverse((t, ..))) = self.heap.peek() {
                if *t > self.now {
                    break;
                }
                let Reverse((_, _, to, frame)) = self.heap.pop().unwrap();
                match to {
                    To::Switch(port) => {
                        let mut out = Vec::new();
                        self.sw.process(port, &frame, &mut out);
                        for e in out {
                            if let Some((w, left)) = self.drop_advances_to.as_mut() {
                                if e.port == *w
                                    && *left > 0
                                    && matches!(FrameRepr::parse(&e.frame), Ok((r, _)) if r.sgnn.packet_type == PacketType::BlockAdvance)
                                {
                                    *left -= 1;
                                    continue;
                                }
                            }
                            self.send(To::Host(e.port), e.frame);
                        }
                    }
                    To::Host(w) => {
                        if self.up(w as usize) {
                            self.engines[w as usize].handle_frame(self.now, &frame);
                        } else if self.alive[w as usize] {
                            if let Ok((r, _)) = FrameRepr::parse(&frame) {
                                self.lost_before_start.push(r.sgnn.packet_type);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Runs `rounds` rounds (chained like the daemon's stand-alone mode) and checks every
/// worker's sums against the reference. Returns the engines' stats.
fn run_and_check(
    plan: Plan,
    cfg: EngineConfig,
    chan: Channel,
    dim: usize,
    rounds: usize,
) -> (Vec<sgnn_transport::Stats>, Sim) {
    run_and_check_with(plan, cfg, chan, dim, rounds, |_| {})
}

/// [`run_and_check`], with `setup` applied to the simulation before the first round.
fn run_and_check_with(
    plan: Plan,
    cfg: EngineConfig,
    chan: Channel,
    dim: usize,
    rounds: usize,
    setup: impl FnOnce(&mut Sim),
) -> (Vec<sgnn_transport::Stats>, Sim) {
    let n = plan.graph.num_vertices();
    let mut global = Features::random(n, dim, 7).data;
    // A few values beyond the plan's range: clamped identically everywhere.
    global[3] = 100.0;
    let mut sim = Sim::new(plan, cfg, chan);
    setup(&mut sim);
    let views: Vec<Arc<WorkerView>> = (0..sim.engines.len())
        .map(|w| Arc::new(sim.engines[w].view().clone()))
        .collect();
    let fixed = views[0].fixed;
    let degrees: Vec<u32> = (0..n as u32)
        .map(|v| sim.plan.graph.degree(v) as u32)
        .collect();
    for r in 0..rounds {
        let want = reference_sums(&sim.plan.graph, fixed, dim, &global);
        let layer = Layer::forward(r as u32);
        let now = sim.now;
        if sim.inject.as_ref().is_some_and(|(at, _)| *at == r) {
            for (to, f) in sim.inject.take().unwrap().1 {
                sim.seq += 1;
                sim.heap.push(Reverse((now + LATENCY, sim.seq, to, f)));
            }
        }
        for (w, e) in sim.engines.iter_mut().enumerate() {
            let x: Vec<f32> = views[w]
                .local_vertices
                .iter()
                .flat_map(|&v| global[v as usize * dim..(v as usize + 1) * dim].to_vec())
                .collect();
            e.start_round(now, layer, dim, &x).unwrap();
        }
        let mut got: Vec<Option<Vec<f32>>> = vec![None; views.len()];
        let limit = sim.now + 600_000_000_000;
        sim.run(limit, |s| {
            for (w, e) in s.engines.iter_mut().enumerate() {
                if let Some(x) = e.take_sums() {
                    got[w] = Some(x);
                }
            }
            got.iter().all(|g| g.is_some())
        })
        .unwrap_or_else(|(w, e)| panic!("worker {w}: {e}"));
        let mut sums = vec![0f32; n * dim];
        for (w, g) in got.into_iter().enumerate() {
            let g = g.unwrap();
            for (i, &v) in views[w].local_vertices.iter().enumerate() {
                sums[v as usize * dim..(v as usize + 1) * dim]
                    .copy_from_slice(&g[i * dim..(i + 1) * dim]);
            }
        }
        // Independent check: f64 sums of the real features, within the codec's bound.
        for v in 0..n {
            let nb = sim.plan.graph.neighbors(v as u32);
            let bound = fixed.error_bound(nb.len() as u32) as f64;
            for k in 0..dim {
                let exact: f64 = nb
                    .iter()
                    .map(|&u| global[u as usize * dim + k] as f64)
                    .sum();
                let got = sums[v * dim + k] as f64;
                if global[3] == 100.0 && nb.contains(&0) && k == 3 {
                    continue; // the clamped value: compared bitwise below
                }
                assert!(
                    (got - exact).abs() <= bound,
                    "round {r} vertex {v} lane {k}: {got} vs {exact} (bound {bound})"
                );
            }
        }
        for (i, (a, b)) in sums.iter().zip(&want).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "round {r}: vertex {} value {}: got {a}, reference {b}",
                i / dim,
                i % dim
            );
        }
        global = next_layer(&sums, &degrees, dim);
    }
    let stats = sim.engines.iter().map(|e| e.stats()).collect();
    (stats, sim)
}

/// Starts forward layer 0 with `dim` random values per vertex on every engine of `sim`;
/// returns the features (row-major, all vertices).
fn start_layer(sim: &mut Sim, dim: usize) -> Vec<f32> {
    let n = sim.plan.graph.num_vertices();
    let x = Features::random(n, dim, 1).data;
    for e in sim.engines.iter_mut() {
        let f: Vec<f32> = e
            .view()
            .local_vertices
            .iter()
            .flat_map(|&v| x[v as usize * dim..(v as usize + 1) * dim].to_vec())
            .collect();
        e.start_round(0, Layer::forward(0), dim, &f).unwrap();
    }
    x
}

/// A control frame as anyone on the network could send it.
fn forged(t: PacketType, worker: u16, round: u16, block: u16, to: To) -> (To, Vec<u8>) {
    let mut s = sgnn_wire::sgnn::Repr::new(t);
    s.worker_id = worker;
    s.round = round;
    s.block_id = block;
    let (dst_mac, dst_ip) = match to {
        To::Switch(_) => (SWITCH_MAC, SWITCH_IP),
        To::Host(w) => (worker_mac(w), worker_ip(w)),
    };
    let r = FrameRepr {
        eth: sgnn_wire::ethernet::Repr {
            dst: dst_mac,
            src: [2, 0, 0, 0, 0x66, 0x66],
            ethertype: 0x0800,
        },
        ip: sgnn_wire::ipv4::Repr {
            src: [10, 66, 66, 66],
            dst: dst_ip,
            protocol: sgnn_wire::IP_PROTO_SWITCHGNN,
            payload_len: 0,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 0,
        },
        sgnn: s,
    };
    let mut buf = vec![0u8; r.frame_len()];
    let lanes = t.has_lanes().then_some(&[1i32; sgnn_wire::LANES]);
    r.emit(lanes, &mut buf).unwrap();
    (to, buf)
}

/// One datagram from anywhere must not end a job (issues 14 and 31): a BlockDone for a block
/// from the past, from no worker's port or from another worker's, and a Bypass from no
/// worker's port, are dropped by the switch (counted `drop_wrong_port`, never answered or
/// summed, `sgnn_switch::admission`); a BlockAdvance for a block the plan does not have, sent
/// straight to worker 1 with the job, is counted as stale and ignored; frames sent straight to
/// worker 1 without the job (a BlockAdvance of its current block, a Bypass) are dropped unread
/// (`foreign_job`). The daemons learned the switch's job from their probes; every sum stays
/// exact.
#[test]
fn forged_control_frames_are_counted_and_ignored() {
    let plan = small_plan();
    let blocks = plan.blocks.len() as u16;
    const JOB: u16 = 0x77;
    let with_job = |(to, mut f): (To, Vec<u8>)| {
        f[sgnn_wire::ETHERNET_HEADER_LEN + sgnn_wire::IPV4_HEADER_LEN + 22..][..2]
            .copy_from_slice(&JOB.to_be_bytes());
        (to, f)
    };
    let (stats, sim) = run_and_check_with(plan, quick_cfg(), QUIET, 40, 3, |sim| {
        sim.sw.config.job = JOB;
        sim.inject = Some((
            1,
            vec![
                with_job(forged(
                    PacketType::BlockDone,
                    0,
                    0,
                    blocks + 4,
                    To::Switch(STRAY_PORT),
                )),
                with_job(forged(PacketType::BlockDone, 0, 1, 0, To::Switch(2))),
                with_job(forged(PacketType::Bypass, 0, 0, 0, To::Switch(STRAY_PORT))),
                with_job(forged(
                    PacketType::BlockAdvance,
                    1,
                    1,
                    blocks + 9,
                    To::Host(1),
                )),
                forged(PacketType::BlockAdvance, 1, 0, 0, To::Host(1)),
                forged(PacketType::Bypass, 0, 0, 0, To::Host(1)),
            ],
        ));
    });
    assert_eq!(
        sim.sw.counters.drop_wrong_port, 3,
        "both forged BlockDones and the stranger's Bypass"
    );
    assert_eq!(
        sim.sw.counters.block_done_stale, 0,
        "the switch answered no forged BlockDone"
    );
    assert!(stats[1].stale >= 1, "worker 1 counted the forged advance");
    assert_eq!(stats[1].foreign_job, 2, "the two frames without the job");
    assert!(
        sim.engines.iter().all(|e| e.job() == JOB),
        "every daemon learned the job from its probe"
    );
}

/// A switch that still holds an earlier run's synchronisation (a second job started without
/// reloading it) answers the start-up probe with its round and block: every daemon stops at
/// once with a message saying to reload, before any data, instead of hanging until the stall
/// timeout.
#[test]
fn a_switch_left_mid_run_by_an_earlier_job_is_refused_before_any_data() {
    let mut sim = Sim::new(small_plan(), quick_cfg(), QUIET);
    sim.sw.regs.sync_round = 3;
    sim.sw.regs.sync_block = 1;
    let (_, err) = first_error(&mut sim);
    let msg = err.to_string();
    assert!(msg.contains("round 3 block 1"), "{msg}");
    assert!(msg.contains("switch-ctl load"), "{msg}");
    assert_eq!(sim.sw.counters.data, 0, "no data left a daemon");
    assert!(
        sim.now < quick_cfg().stall_timeout_ns / 10,
        "refused at the probe, not by the stall timeout"
    );
}

/// A switch that restarts mid-layer and comes back empty (no tables, no plan) cannot even
/// route the health probes the stalled workers send: they stop after
/// `HEALTH_PROBES_UNANSWERED` of them, long before the stall timeout, saying the switch is
/// down or lost its tables.
#[test]
fn a_switch_that_restarts_empty_mid_layer_stops_the_workers_with_a_clear_error() {
    let mut sim = Sim::new(small_plan(), quick_cfg(), QUIET);
    start_layer(&mut sim, 32);
    let mut restarted = false;
    let (_, err) = sim
        .run(60_000_000_000, |sim| {
            if !restarted && sim.sw.counters.aggregated > 50 {
                sim.sw = Pipeline::new(SwitchConfig::default(), Tables::default());
                restarted = true;
            }
            false
        })
        .expect_err("the workers must stop");
    let msg = err.to_string();
    assert!(restarted);
    assert!(msg.contains("answered none of 10 probes"), "{msg}");
    assert!(msg.contains("switch-ctl load"), "{msg}");
    assert!(
        sim.now < quick_cfg().stall_timeout_ns / 2,
        "stopped by the health probes, not the stall timeout"
    );
}

/// A switch that restarts mid-layer and is reloaded (tables and plan tag back, registers at
/// round 0 block 0) lost the block's partial sums: the stalled workers' health probes find it
/// behind their block and every worker stops, saying so.
#[test]
fn a_switch_reloaded_mid_layer_stops_the_workers_with_a_clear_error() {
    let plan = small_plan();
    assert!(plan.blocks.len() > 1);
    let mut sim = Sim::new(plan.clone(), quick_cfg(), QUIET);
    start_layer(&mut sim, 32);
    let mut restarted = false;
    let (_, err) = sim
        .run(60_000_000_000, |sim| {
            if !restarted && sim.sw.regs.sync_block == 1 && sim.sw.counters.aggregated > 0 {
                sim.sw = loaded_switch(&plan);
                restarted = true;
            }
            false
        })
        .expect_err("the workers must stop");
    let msg = err.to_string();
    assert!(restarted);
    assert!(
        msg.contains("restarted or was reloaded mid-run")
            && msg.contains("at round 0 block 0 while this worker is at round 0 block 1"),
        "{msg}"
    );
    assert!(
        sim.now < quick_cfg().stall_timeout_ns / 2,
        "stopped by a health probe, not the stall timeout"
    );
}

/// `f` summed over every worker's stats.
fn total(stats: &[sgnn_transport::Stats], f: fn(&sgnn_transport::Stats) -> u64) -> u64 {
    stats.iter().map(f).sum()
}

fn small_plan() -> Plan {
    // 2 segments, 64 destinations per block: several blocks.
    plan(8, 4, 16 << 10, 64)
}

fn quick_cfg() -> EngineConfig {
    EngineConfig {
        fetch_timeout_ns: 2_000_000,
        resend_timeout_ns: 8_000_000,
        advance_timeout_ns: 2_000_000,
        max_backoff_ns: 50_000_000,
        stall_timeout_ns: 5_000_000_000,
        ..EngineConfig::default()
    }
}

#[test]
fn lossless_run_is_exact_and_uses_the_switch_only() {
    let p = small_plan();
    assert!(p.blocks.len() >= 2, "the test wants several blocks");
    let chan = QUIET;
    // Per round and block: a tail probe from every worker (at its block's start if it sends
    // nothing in it) and one all-sent notice to every worker; nothing else beyond the Data,
    // Results and BlockDone.
    let blocks = p.blocks.len() as u64;
    let workers = p.workers() as u64;
    assert!(
        p.manifest.segments >= 2,
        "the test wants several segments per vertex"
    );
    let (stats, sim) = run_and_check(p, quick_cfg(), chan, 64, 3);
    assert_eq!(total(&stats, |s| s.tail_probes), 3 * blocks * workers);
    assert_eq!(total(&stats, |s| s.all_sent), 3 * blocks * workers);
    assert_eq!(sim.sw.counters.all_sent, 3 * blocks);
    assert_eq!(
        total(&stats, |s| s.acks_sent),
        total(&stats, |s| s.tail_probes)
    );
    assert_eq!(total(&stats, |s| s.nacks + s.pulls), 0);
    for s in &stats {
        assert_eq!(s.cells_by_raw, 0, "nothing lost, nothing raw");
        assert_eq!(s.fetches_sent + s.retransmissions, 0);
        assert_eq!(s.rounds.len(), 3);
    }
    assert_eq!(sim.sw.counters.bypassed, 0);
    assert!(sim.sw.counters.results > 0);
}

#[test]
fn lossy_reordering_duplicating_channel_still_gives_exact_sums() {
    for seed in 1..=3 {
        let chan = Channel {
            drop: 0.05,
            dup: 0.05,
            jitter: 30_000,
            reorder: 0.05,
            seed,
        };
        let (stats, _) = run_and_check(small_plan(), quick_cfg(), chan, 64, 3);
        let resent = total(&stats, |s| s.retransmissions);
        let nacks = total(&stats, |s| s.nacks);
        let pulls = total(&stats, |s| s.pulls);
        assert!(
            resent > 0 && nacks > 0 && pulls > 0,
            "5% loss must need recovery"
        );
    }
}

#[test]
fn heavy_loss_and_odd_feature_sizes() {
    let chan = Channel {
        drop: 0.25,
        dup: 0.1,
        jitter: 100_000,
        reorder: 0.0,
        seed: 9,
    };
    // 40 values: the second segment is partly padding.
    let (stats, _) = run_and_check(small_plan(), quick_cfg(), chan, 40, 2);
    let resent = total(&stats, |s| s.retransmissions);
    assert!(resent > 0, "lost Data frames are NACKed and sent again");
}

#[test]
fn lost_block_advances_are_recovered() {
    let p = small_plan();
    let chan = QUIET;
    let mut sim = Sim::new(p, quick_cfg(), chan);
    sim.drop_advances_to = Some((2, 4));
    let dim = 32;
    let _ = start_layer(&mut sim, dim);
    let mut done = [false; 4];
    sim.run(60_000_000_000, |s| {
        for (w, e) in s.engines.iter_mut().enumerate() {
            done[w] |= e.take_sums().is_some();
        }
        done.iter().all(|&d| d)
    })
    .unwrap_or_else(|(w, e)| panic!("worker {w}: {e}"));
    let s = sim.engines[2].stats();
    assert!(s.implicit_advances + s.block_done_resent > 0);
}

#[test]
fn ecn_marks_halve_the_rate_and_sums_stay_exact() {
    let p = small_plan();
    let chan = QUIET;
    let mut sim = Sim::new(p.clone(), quick_cfg(), chan);
    // Every egress queue looks congested.
    sim.sw.config.ecn_threshold = 0;
    sim.sw.queue_depth = vec![10; 4];
    let dim = 32;
    let x = start_layer(&mut sim, dim);
    let mut got = vec![None; 4];
    sim.run(60_000_000_000, |s| {
        for (w, e) in s.engines.iter_mut().enumerate() {
            if let Some(g) = e.take_sums() {
                got[w] = Some(g);
            }
        }
        got.iter().all(|g| g.is_some())
    })
    .unwrap_or_else(|(w, e)| panic!("worker {w}: {e}"));
    let want = reference_sums(&p.graph, sim.engines[0].view().fixed, dim, &x);
    for (w, g) in got.iter().enumerate() {
        let view = sim.engines[w].view();
        for (i, &v) in view.local_vertices.iter().enumerate() {
            assert_eq!(
                &g.as_ref().unwrap()[i * dim..(i + 1) * dim],
                &want[v as usize * dim..(v as usize + 1) * dim]
            );
        }
        let s = sim.engines[w].stats();
        assert!(s.ecn_marks > 0);
        assert!(s.rate_decreases > 0);
        assert!(sim.engines[w].rate_mbps() < 1000.0);
    }
}

#[test]
fn host_based_baseline_is_exact_under_loss() {
    let cfg = EngineConfig {
        mode: Mode::HostBased,
        ..quick_cfg()
    };
    let chan = Channel {
        drop: 0.05,
        dup: 0.05,
        jitter: 30_000,
        reorder: 0.0,
        seed: 4,
    };
    let (stats, mut sim) = run_and_check(small_plan(), cfg, chan, 64, 3);
    for s in &stats {
        assert_eq!(s.cells_by_result, 0, "the baseline never uses aggregators");
    }
    // Final barrier through the switch.
    let now = sim.now;
    for e in sim.engines.iter_mut() {
        e.finish(now).unwrap();
    }
    sim.run(sim.now + 60_000_000_000, |s| {
        s.engines.iter().all(|e| e.finished())
    })
    .unwrap_or_else(|(w, e)| panic!("worker {w}: {e}"));
    assert_eq!(sim.sw.counters.aggregated, 0);
}

/// A worker dead from the start: the others wait at their start barrier (a daemon may start
/// late) and name it after the stall timeout.
#[test]
fn a_worker_dead_from_the_start_is_named_after_the_stall_timeout() {
    let p = small_plan();
    let chan = QUIET;
    let cfg = EngineConfig {
        stall_timeout_ns: 1_000_000_000,
        ..quick_cfg()
    };
    let mut sim = Sim::new(p, cfg, chan);
    sim.alive[3] = false;
    let dim = 32;
    let _ = start_layer(&mut sim, dim);
    let err = sim.run(60_000_000_000, |_| false).unwrap_err();
    let msg = err.1.to_string();
    assert!(matches!(err.1, TransportError::Stalled(_)), "{msg}");
    assert!(msg.contains("worker 3"), "{msg}");
    assert!(sim.now < 10_000_000_000, "gave up after the stall timeout");
}

/// A worker that dies mid-layer (issue 31): the survivors' liveness hellos go unanswered and
/// the first to give up names it within about a second (`liveness_ns`, 1 s), long before the
/// 20 s stall timeout. Virtual time: deterministic.
#[test]
fn a_worker_dead_mid_layer_is_named_within_a_second() {
    for victim in [3usize, 0] {
        let cfg = EngineConfig {
            stall_timeout_ns: 20_000_000_000,
            ..quick_cfg()
        };
        let mut sim = Sim::new(small_plan(), cfg, QUIET);
        let _ = start_layer(&mut sim, 32);
        // Until the switch has aggregated some of the layer: every daemon is past its start.
        sim.run(60_000_000_000, |s| s.sw.counters.aggregated > 20)
            .unwrap_or_else(|(w, e)| panic!("worker {w}: {e}"));
        sim.alive[victim] = false;
        let killed_at = sim.now;
        let (w, err) = sim.run(60_000_000_000, |_| false).unwrap_err();
        let msg = err.to_string();
        assert_ne!(w as usize, victim);
        match err {
            TransportError::PeerSilent { worker, .. } => assert_eq!(worker as usize, victim),
            e => panic!("worker {w}: {e}"),
        }
        assert!(
            msg.contains(&format!("worker {victim} is not answering")),
            "{msg}"
        );
        let took = sim.now - killed_at;
        assert!(
            took <= 1_500_000_000,
            "named {:.2} s after the kill (virtual time)",
            took as f64 * 1e-9
        );
        assert!(sim.engines[w as usize].stats().liveness_hellos > 0);
    }
}

#[test]
fn views_refuse_what_does_not_fit() {
    let p = small_plan();
    let e = WorkerView::new(&p, 4, None).unwrap_err().to_string();
    assert!(e.contains("worker id 4 is not in this plan"), "{e}");
    let v = WorkerView::new(&p, 0, None).unwrap();
    let e = v.segments_for(65).unwrap_err().to_string();
    assert!(e.contains("re-plan"), "{e}");
    assert_eq!(v.segments_for(64).unwrap(), 2);
    // The schedule files must match the blocks.
    let mut s = p.worker_schedule(1);
    assert!(WorkerView::new(&p, 1, Some(&s)).is_ok());
    s.receives.pop();
    let e = WorkerView::new(&p, 1, Some(&s)).unwrap_err().to_string();
    assert!(e.contains("receives.npy"), "{e}");
}

/// Starts a layer on every engine of `sim` and runs until the first error.
fn first_error(sim: &mut Sim) -> (u16, TransportError) {
    start_layer(sim, 32);
    sim.run(60_000_000_000, |_| false)
        .expect_err("a switch with another plan must stop the daemons")
}

#[test]
fn a_switch_loaded_with_another_plan_or_none_is_refused_before_any_data() {
    let chan = QUIET;
    let p = small_plan();
    let tag = p.tag();
    let other = plan(8, 4, 32 << 10, 64);
    assert_ne!(other.tag(), tag, "different plans have different tags");
    let mut sim = Sim::new(p.clone(), quick_cfg(), chan);
    sim.sw.config.plan_tag = other.tag();
    let (_, err) = first_error(&mut sim);
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("{:08x}", other.tag())) && msg.contains(&format!("{tag:08x}")),
        "{msg}"
    );
    assert!(msg.contains("switch-ctl load --plan"), "{msg}");
    assert_eq!(sim.sw.counters.data, 0, "no data left a daemon");

    let mut sim = Sim::new(p, quick_cfg(), chan);
    sim.sw.config.plan_tag = 0;
    let msg = first_error(&mut sim).1.to_string();
    assert!(msg.contains("holds no plan"), "{msg}");
}

#[test]
fn one_timeout_sends_at_most_a_window_and_heavy_loss_still_ends_exact() {
    let chan = Channel {
        drop: 0.25,
        dup: 0.1,
        jitter: 100_000,
        reorder: 0.0,
        seed: 11,
    };
    let cfg = EngineConfig {
        recovery_window: 4,
        ..quick_cfg()
    };
    let (stats, _) = run_and_check(small_plan(), cfg, chan, 64, 2);
    for (w, s) in stats.iter().enumerate() {
        assert!(
            s.pulls <= 4 * s.fetch_timeouts,
            "worker {w}: {} pulls in {} timeouts",
            s.pulls,
            s.fetch_timeouts
        );
    }
    let pulled = total(&stats, |s| s.pulls);
    assert!(pulled > 0, "25% loss loses Results, which are pulled");
}

/// [`small_plan`] re-planned with delivery `mode` (`switch-ctl plan --aggregate MODE`), with
/// the same memory.
fn delivery_plan(mode: sgnn_plan::AggregateMode) -> Plan {
    let prof = sgnn_plan::profile::SwitchProfile::named("default").unwrap();
    let (p, _) = sgnn_plan::lower::deliver(&small_plan(), mode, &prof).unwrap();
    sgnn_plan::verify(&p).unwrap();
    p
}

/// Every pair pre-aggregated: several blocks of destination rows.
fn partials_plan() -> Plan {
    delivery_plan(sgnn_plan::AggregateMode::Partials)
}

#[test]
fn multicast_and_auto_plans_are_exact_lossless_and_under_loss() {
    use sgnn_plan::AggregateMode;
    for mode in [AggregateMode::Multicast, AggregateMode::Auto] {
        let p = delivery_plan(mode);
        assert!(!p.replicate.is_empty(), "{mode:?} replicates");
        // Replicas each worker must receive per round: its raw_in over all blocks.
        let want: u64 = (0..p.workers())
            .map(|w| {
                let v = WorkerView::new(&p, w, None).unwrap();
                v.blocks.iter().map(|b| b.raw_in.len() as u64).sum::<u64>()
            })
            .sum();
        assert!(want > 0);
        let (stats, sim) = run_and_check(p.clone(), quick_cfg(), QUIET, 64, 2);
        let used = total(&stats, |s| s.replicas_used);
        assert_eq!(
            used,
            want * 2 * 2,
            "{mode:?}: every replica, 2 segments, 2 rounds"
        );
        assert_eq!(
            total(&stats, |s| s.fetches_sent),
            0,
            "{mode:?}: nothing lost, nothing fetched"
        );
        assert_eq!(sim.sw.counters.delivered, want * 2 * 2);
        let chan = Channel {
            drop: 0.05,
            dup: 0.05,
            jitter: 30_000,
            reorder: 0.0,
            seed: 4,
        };
        let (stats, _) = run_and_check(p, quick_cfg(), chan, 64, 2);
        assert!(
            total(&stats, |s| s.fetches_answered) > 0,
            "{mode:?}: lost replicas are fetched from their owners"
        );
    }
}

#[test]
fn partials_plans_are_exact_with_one_pass_per_partial() {
    let p = partials_plan();
    assert!(p.blocks.len() >= 2, "the test wants several blocks");
    assert!(!p.partials.is_empty());
    let n = p.graph.num_vertices() as u32;
    // Every source is a partial, fed into one row: no recirculation at all.
    for b in &p.blocks {
        assert!(b.sources.iter().all(|&s| s >= n));
        assert_eq!(b.fanout.len(), b.sources.len());
    }
    let partials = p.partials.len() as u64;
    let (stats, sim) = run_and_check(p, quick_cfg(), QUIET, 64, 3);
    for s in &stats {
        assert_eq!(s.cells_by_raw, 0, "nothing lost, nothing raw");
        assert_eq!(s.fetches_sent + s.retransmissions, 0);
    }
    assert_eq!(sim.sw.counters.recirculated, 0);
    // Every partial's two segments, three rounds, summed once each.
    assert_eq!(sim.sw.counters.aggregated, partials * 2 * 3);
}

#[test]
fn partials_plans_stay_exact_under_loss_duplication_and_reordering() {
    for seed in 1..=2 {
        let chan = Channel {
            drop: 0.05,
            dup: 0.05,
            jitter: 30_000,
            reorder: 0.05,
            seed,
        };
        let (stats, _) = run_and_check(partials_plan(), quick_cfg(), chan, 64, 3);
        let resent = total(&stats, |s| s.retransmissions);
        let pulls = total(&stats, |s| s.pulls);
        assert!(
            resent > 0 && pulls > 0,
            "5% loss must need recovery: lost partials sent again, lost Results pulled"
        );
    }
}

#[test]
fn the_start_barrier_sends_no_data_to_a_daemon_that_is_not_up() {
    // Worker 2 starts 30 ms after the others (its port is down until then).
    let run = |cfg: EngineConfig| {
        run_and_check_with(small_plan(), cfg, QUIET, 64, 2, |sim| {
            sim.start_at[2] = 30_000_000;
        })
    };
    // With the barrier only hellos reach the dead port, and nothing needs recovery.
    let (stats, sim) = run(quick_cfg());
    assert!(
        !sim.lost_before_start.is_empty()
            && sim.lost_before_start.iter().all(|&t| t == PacketType::Ack),
        "{:?}",
        sim.lost_before_start
    );
    assert!(stats
        .iter()
        .all(|s| s.fetches_sent + s.pulls == 0 && s.peer_hellos >= 3));
    // Without it the others exchange into the dead port, and round 0 must recover.
    let (stats, sim) = run(EngineConfig {
        peer_barrier: false,
        ..quick_cfg()
    });
    assert!(
        sim.lost_before_start.iter().any(|&t| t != PacketType::Ack),
        "{:?}",
        sim.lost_before_start
    );
    assert!(total(&stats, |s| s.fetches_sent + s.pulls) > 0);
}

/// A property over random fault schedules: for every seed, a random loss, duplication and
/// reordering rate, the paper's plan and the auto plan end exact (checked by
/// `run_and_check`) and leave no aggregator busy with the block the switch is at.
#[test]
fn random_fault_schedules_end_exact_with_no_busy_aggregator() {
    let plans = [small_plan(), delivery_plan(sgnn_plan::AggregateMode::Auto)];
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    for seed in 1..=12u64 {
        let chan = Channel {
            drop: rng.gen_range(0.0..0.2),
            dup: rng.gen_range(0.0..0.1),
            jitter: rng.gen_range(0..100_000),
            reorder: rng.gen_range(0.0..0.05),
            seed,
        };
        let p = plans[seed as usize % 2].clone();
        let (_, sim) = run_and_check(p, quick_cfg(), chan, 40, 2);
        let (busy, _stale) = sim.sw.aggregators_in_use();
        assert_eq!(
            busy, 0,
            "seed {seed}: drop {:.3}, dup {:.3}, jitter {}, reorder {:.3}",
            chan.drop, chan.dup, chan.jitter, chan.reorder
        );
    }
}

/// The switch's seq check expects a worker's frames in the order they left (one access link);
/// a frame that overtakes others reads as a gap there. That costs retransmissions (the
/// overtaken frames, dropped as duplicates by `src_seen` when they arrive) but never
/// exactness, and the run ends however much the link reorders (docs/host.md, "Reordering").
#[test]
fn reordering_on_the_access_link_costs_retransmissions_not_exactness() {
    let mut per_frame = Vec::new();
    for reorder in [0.1, 0.5] {
        let chan = Channel {
            drop: 0.0,
            dup: 0.0,
            jitter: 30_000,
            reorder,
            seed: 5,
        };
        let (stats, sim) = run_and_check(small_plan(), quick_cfg(), chan, 64, 3);
        let (data, retx, nacks) = (
            total(&stats, |s| s.sent.data.packets),
            total(&stats, |s| s.retransmissions),
            total(&stats, |s| s.nacks),
        );
        assert!(nacks > 0 && retx > 0, "reorder {reorder}: nothing NACKed");
        assert!(
            sim.sw.counters.drop_duplicate > 0,
            "the late frames are duplicates"
        );
        assert_eq!(sim.sw.aggregators_in_use().0, 0);
        per_frame.push(retx as f64 / data as f64);
    }
    assert!(
        per_frame[0] < per_frame[1],
        "more reordering, more retransmissions: {per_frame:?}"
    );
}

/// A worker that missed two NACKs in a row and then hears its tail probe's answer (which
/// repeats the last gap in both fields: the switch keeps only the last) resends everything
/// after the last gap it knew. Every contribution reaches its aggregate, so no cell is given
/// up once every feeder said the switch holds its frames.
#[test]
fn lost_nacks_before_a_probe_answer_lose_no_contribution() {
    for seed in 1..=4 {
        let chan = Channel {
            drop: 0.2,
            dup: 0.0,
            jitter: 2_000,
            reorder: 0.0,
            seed,
        };
        let (stats, sim) = run_and_check(small_plan(), quick_cfg(), chan, 64, 3);
        let given_up = total(&stats, |s| s.given_up_after_all_sent);
        let nacks = total(&stats, |s| s.nacks);
        assert!(nacks > 100, "seed {seed}: the channel should cost NACKs");
        assert_eq!(given_up, 0, "seed {seed}");
        assert_eq!(sim.sw.aggregators_in_use().0, 0);
    }
}
