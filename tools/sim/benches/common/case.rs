//! The engine benches' workload, shared by `benches/engine.rs` (a null datapath) and
//! `examples/engine_memif.rs` (a real DPDK memif port): the README's graph and plan, and what
//! worker 0 received in round 0 of an in-memory run of the four engines and the software
//! switch's pipeline. See `benches/engine.rs` for what each case is.

use std::sync::Arc;

use sgnn_graph::Features;
use sgnn_plan::model::PlanConfig;
use sgnn_plan::AggregateMode;
use sgnn_plan::Plan;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_sim::harness::switch::loaded_switch;
use sgnn_transport::engine::{Engine, EngineConfig, Layer, Mode};
use sgnn_transport::rate::{Pacing, RateConfig};
use sgnn_transport::WorkerView;
use sgnn_wire::{FrameRepr, PacketType};

pub const WORKERS: u32 = 4;
pub const DIM: usize = 64;

pub fn plan(aggregate: AggregateMode) -> Plan {
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
pub fn config(mode: Mode) -> EngineConfig {
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

/// Round 0 of every worker of `plan` (`views`, each starting from its `local` features of
/// `dim` values) through the software switch's pipeline in memory, with no loss and in
/// order: what each worker received, in order.
pub fn record_round(
    plan: &Plan,
    views: &[Arc<WorkerView>],
    cfg: &EngineConfig,
    dim: usize,
    local: &[Vec<f32>],
) -> Vec<Vec<Vec<u8>>> {
    let workers = views.len();
    let mut sw = loaded_switch(plan);
    let mut engines: Vec<Engine> = views
        .iter()
        .map(|v| Engine::new(v.clone(), cfg.clone(), 0))
        .collect();
    for (w, e) in engines.iter_mut().enumerate() {
        e.start_round(0, Layer::forward(0), dim, &local[w]).unwrap();
    }
    let mut received = vec![Vec::new(); workers];
    let mut done = vec![false; workers];
    let (mut now, mut out) = (0u64, Vec::new());
    while !done.iter().all(|&d| d) {
        now += 1_000;
        assert!(now < 10_000_000_000, "the round did not finish");
        for w in 0..workers {
            engines[w].handle_timeout(now).unwrap();
            while let Some((_, f)) = engines[w].poll_transmit(now) {
                out.clear();
                sw.process(w as u16, &f, &mut out);
                for e in out.drain(..) {
                    received[e.port as usize].push(e.frame.clone());
                    engines[e.port as usize].handle_frame(now, &e.frame);
                }
            }
            if engines[w].take_sums().is_some() {
                done[w] = true;
            }
        }
    }
    received
}

/// Everything the bench needs of one plan and mode.
pub struct Case {
    pub views: Vec<Arc<WorkerView>>,
    pub cfg: EngineConfig,
    pub global: Vec<f32>,
    /// What worker 0 received during round 0, in order: the first block's frames up to its
    /// BlockAdvance if the plan has several.
    pub received: Vec<Vec<u8>>,
    /// Whether `received` is the whole round.
    pub whole_round: bool,
}

impl Case {
    /// Runs round 0 of every worker through the software switch in memory, with no loss and
    /// in order, and keeps what worker 0 received.
    pub fn new(plan: &Plan, mode: Mode) -> Case {
        let views: Vec<Arc<WorkerView>> = (0..WORKERS)
            .map(|w| Arc::new(WorkerView::new(plan, w, None).unwrap()))
            .collect();
        let cfg = config(mode);
        let global = Features::random(plan.graph.num_vertices(), DIM, 7).data;
        let local: Vec<Vec<f32>> = views.iter().map(|v| v.local_rows(&global, DIM)).collect();
        let mut received = record_round(plan, &views, &cfg, DIM, &local).swap_remove(0);
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
    pub fn started(&self) -> Engine {
        let mut e = Engine::new(self.views[0].clone(), self.cfg.clone(), 0);
        e.start_round(
            0,
            Layer::forward(0),
            DIM,
            &self.views[0].local_rows(&self.global, DIM),
        )
        .unwrap();
        e
    }

    /// Worker 0 at the start of round 0, its frames sent (set-up: not timed).
    pub fn sent(&self) -> Engine {
        let mut e = self.started();
        while e.poll_transmit(0).is_some() {}
        e
    }

    /// Frames worker 0 sends in the round, and how many are of type `t`.
    pub fn sends(&self, t: PacketType) -> (u64, u64) {
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
    pub fn received_of(&self, t: PacketType) -> usize {
        self.received
            .iter()
            .filter(|f| FrameRepr::parse(f).unwrap().0.sgnn.packet_type == t)
            .count()
    }
}
