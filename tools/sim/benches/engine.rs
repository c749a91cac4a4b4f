//! Per-core rates of the transport engine (`sgnn-transport`) with a null datapath (issue 32):
//! no socket, no clock, one core. Here, beside the simulator's harness, because it plans with
//! the planner and loads the software switch: the transport itself depends on nothing of
//! switch-ctl's, even for benches. Frames the engine emits are counted and dropped; frames fed to it were
//! built beforehand.
//!
//! The graph is the README's main command's (R-MAT 2^12, edge factor 8, 4 workers, 64 values
//! per vertex: 2 segments), planned with 4 MB of switch memory (the testbed's default). Worker 0 is measured.
//!
//! - `send/*`: a fresh engine that has started a round gives every frame it wants to send
//!   (`poll_transmit` until it has none): build (header and lanes into a frame), number
//!   (`SEQ_VALID | n`), pace (the rate controller, set far above any rate reached here so it
//!   never holds a frame back) and queue. `switchgnn-data`: the paper plan's Data frames of
//!   its first block (then the engine waits for the switch) and the block's tail probe;
//!   `host-based-bypass`: the baseline's Bypass frames. Starting the round (encoding the
//!   features, summing local neighbours) is set-up, not timed.
//! - `receive/*`: a fresh engine that has started the round and sent its frames (set-up, not
//!   timed) takes every frame worker 0 received in that round of an in-memory run of the
//!   four engines and the software switch's pipeline (captured once, below): parse, route,
//!   accumulate into the cells, bitmaps, complete the round (decode the sums). What it sends
//!   meanwhile (BlockDone, the barrier) is taken and dropped, timed. A plan of several blocks
//!   is fed its first block's frames up to its BlockAdvance (so no Data is sent in the timed
//!   part; the round's end, decoding the sums, is then not in it). `switchgnn-result`: the
//!   paper plan's first block (every remote sum a Result, plus the switch's control frames);
//!   `auto-result-and-replica`: the `auto` plan (Results, and multicast replicas: Bypass
//!   frames carrying a peer's Data); `host-based-bypass`: the baseline.
//!
//! Throughput is frames; `ns per frame` is the time over the frames.
//!
//! ```sh
//! cargo bench -p sgnn-sim --bench engine -- --measurement-time 3 --warm-up-time 1
//! ```

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sgnn_graph::Features;
use sgnn_plan::model::PlanConfig;
use sgnn_plan::AggregateMode;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_transport::engine::{Engine, EngineConfig, Layer, Mode};
use sgnn_transport::rate::{Pacing, RateConfig};
use sgnn_transport::WorkerView;
use sgnn_wire::addressing::{worker_ip, worker_mac};
use sgnn_wire::{FrameRepr, PacketType};
use softswitch::{Pipeline, SwitchConfig, Tables, WorkerPort};

const WORKERS: u32 = 4;
const DIM: usize = 64;

fn plan(aggregate: AggregateMode) -> Plan {
    let g = sgnn_graph::load_graph("rmat:scale=12,edge_factor=8,seed=1").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: WORKERS,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 4 << 20,
            agg_bytes: sgnn_wire::PAYLOAD_LEN as u32,
            feature_dim: DIM as u32,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 256,
            leaves: 1,
            aggregate: AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    // As `sgnn testbed` plans: the paper's plan, then the delivery.
    let (plan, mut report) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    let profile = sgnn_plan::profile::SwitchProfile::named("default").unwrap();
    sgnn_planner::planner::apply_delivery(plan, &mut report, aggregate, &profile).unwrap()
}

/// No probe, no start barrier, no planned pacing, and a rate no run here reaches: the engine
/// alone decides what leaves.
fn config(mode: Mode) -> EngineConfig {
    EngineConfig {
        mode,
        probe: false,
        peer_barrier: false,
        pacing: Pacing::Off,
        rate: RateConfig {
            initial_mbps: 1e9,
            max_mbps: 1e9,
            burst_bytes: 1 << 40,
            ..RateConfig::default()
        },
        ..EngineConfig::default()
    }
}

/// One worker's features of the round.
fn features(view: &WorkerView, global: &[f32]) -> Vec<f32> {
    view.local_vertices
        .iter()
        .flat_map(|&v| global[v as usize * DIM..(v as usize + 1) * DIM].to_vec())
        .collect()
}

/// Everything the bench needs of one plan and mode.
struct Case {
    views: Vec<Arc<WorkerView>>,
    cfg: EngineConfig,
    global: Vec<f32>,
    /// What worker 0 received during round 0, in order: the first block's frames up to its
    /// BlockAdvance if the plan has several.
    received: Vec<Vec<u8>>,
    /// Whether `received` is the whole round.
    whole_round: bool,
}

impl Case {
    /// Runs round 0 of every worker through the software switch in memory, with no loss and
    /// in order, and keeps what worker 0 received.
    fn new(plan: &Plan, mode: Mode) -> Case {
        let views: Vec<Arc<WorkerView>> = (0..WORKERS)
            .map(|w| Arc::new(WorkerView::new(plan, w, None).unwrap()))
            .collect();
        let cfg = config(mode);
        let global = Features::random(plan.graph.num_vertices(), DIM, 7).data;
        let ports: Vec<WorkerPort> = (0..WORKERS as u16)
            .map(|w| WorkerPort {
                port: w,
                mac: worker_mac(w),
                ip: worker_ip(w),
            })
            .collect();
        let mut sw = Pipeline::new(
            SwitchConfig {
                workers: WORKERS as u16,
                ..SwitchConfig::for_plan(plan)
            },
            Tables::from_plan(plan, &ports),
        );
        let mut engines: Vec<Engine> = views
            .iter()
            .map(|v| Engine::new(v.clone(), cfg.clone(), 0))
            .collect();
        for (w, e) in engines.iter_mut().enumerate() {
            e.start_round(0, Layer::forward(0), DIM, &features(&views[w], &global))
                .unwrap();
        }
        let mut received = Vec::new();
        let mut done = vec![false; WORKERS as usize];
        let mut now = 0u64;
        let mut out = Vec::new();
        while !done.iter().all(|&d| d) {
            now += 1_000;
            assert!(now < 10_000_000_000, "the round did not finish");
            for w in 0..WORKERS as usize {
                engines[w].handle_timeout(now).unwrap();
                while let Some((_, f)) = engines[w].poll_transmit(now) {
                    out.clear();
                    sw.process(w as u16, &f, &mut out);
                    for e in out.drain(..) {
                        if e.port == 0 {
                            received.push(e.frame.clone());
                        }
                        engines[e.port as usize].handle_frame(now, &e.frame);
                    }
                }
                if engines[w].take_sums().is_some() {
                    done[w] = true;
                }
            }
        }
        let whole_round = mode == Mode::HostBased || views[0].blocks.len() <= 1;
        if !whole_round {
            let end = received
                .iter()
                .position(|f| {
                    let s = FrameRepr::parse(f).unwrap().0.sgnn;
                    s.packet_type == PacketType::BlockAdvance && s.block_id == 0
                })
                .expect("block 0 advanced");
            received.truncate(end + 1);
        }
        Case {
            views,
            cfg,
            global,
            received,
            whole_round,
        }
    }

    /// Worker 0 at the start of round 0 (set-up: not timed).
    fn started(&self) -> Engine {
        let mut e = Engine::new(self.views[0].clone(), self.cfg.clone(), 0);
        e.start_round(
            0,
            Layer::forward(0),
            DIM,
            &features(&self.views[0], &self.global),
        )
        .unwrap();
        e
    }

    /// Worker 0 at the start of round 0, its frames sent (set-up: not timed).
    fn sent(&self) -> Engine {
        let mut e = self.started();
        while e.poll_transmit(0).is_some() {}
        e
    }

    /// Frames worker 0 sends in the round, and how many are of type `t`.
    fn sends(&self, t: PacketType) -> (u64, u64) {
        let mut e = self.started();
        let (mut all, mut of) = (0, 0);
        while let Some((_, f)) = e.poll_transmit(0) {
            all += 1;
            if FrameRepr::parse(&f).unwrap().0.sgnn.packet_type == t {
                of += 1;
            }
        }
        (all, of)
    }

    /// How many of the received frames are of type `t`.
    fn received_of(&self, t: PacketType) -> usize {
        self.received
            .iter()
            .filter(|f| FrameRepr::parse(f).unwrap().0.sgnn.packet_type == t)
            .count()
    }
}

fn send(c: &mut Criterion, name: &str, case: &Case, t: PacketType) {
    let (all, of) = case.sends(t);
    eprintln!("send/{name}: {all} frames, {of} of them {t:?}");
    assert!(of * 10 >= all * 9, "mostly {t:?}");
    let mut g = c.benchmark_group("send");
    g.throughput(Throughput::Elements(all));
    g.bench_function(name, |b| {
        b.iter_batched(
            || case.started(),
            |mut e| {
                let mut n = 0u64;
                while let Some((_, f)) = e.poll_transmit(0) {
                    black_box(&f);
                    n += 1;
                    // As `Session` does once the datapath sent it.
                    e.recycle(f);
                }
                assert_eq!(n, all);
                e
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn receive(c: &mut Criterion, name: &str, case: &Case, types: &[PacketType]) {
    let all = case.received.len();
    let counts: Vec<String> = types
        .iter()
        .map(|&t| format!("{} {t:?}", case.received_of(t)))
        .collect();
    eprintln!(
        "receive/{name}: {all} frames ({}), {}",
        if case.whole_round {
            "the whole round"
        } else {
            "block 0 of the round"
        },
        counts.join(", ")
    );
    let of: usize = types.iter().map(|&t| case.received_of(t)).sum();
    assert!(of * 10 >= all * 9, "mostly {types:?}");
    let mut g = c.benchmark_group("receive");
    g.throughput(Throughput::Elements(all as u64));
    g.bench_function(name, |b| {
        b.iter_batched(
            || case.sent(),
            |mut e| {
                for f in &case.received {
                    e.handle_frame(0, f);
                    while let Some(f) = e.poll_transmit(0) {
                        black_box(&f);
                    }
                }
                if case.whole_round {
                    assert!(e.take_sums().is_some(), "the round completed");
                } else {
                    assert_eq!(e.block(), Some(1), "block 0 advanced");
                }
                e
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    let paper = plan(AggregateMode::Paper);
    let auto = plan(AggregateMode::Auto);
    let sg = Case::new(&paper, Mode::SwitchGnn);
    let hb = Case::new(&paper, Mode::HostBased);
    let au = Case::new(&auto, Mode::SwitchGnn);
    send(c, "switchgnn-data", &sg, PacketType::Data);
    send(c, "host-based-bypass", &hb, PacketType::Bypass);
    receive(c, "switchgnn-result", &sg, &[PacketType::Result]);
    receive(
        c,
        "auto-result-and-replica",
        &au,
        &[PacketType::Result, PacketType::Bypass],
    );
    receive(c, "host-based-bypass", &hb, &[PacketType::Bypass]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
