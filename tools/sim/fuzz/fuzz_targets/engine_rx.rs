//! Fuzzes a worker's transport engine on its receive path, in the middle of a round of the
//! paper's or the `auto` plan: arbitrary sequences of frames (from the switch or a peer) and
//! time steps. It must never panic, and every frame it then sends must parse.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use sgnn_transport::engine::{Engine, EngineConfig, Layer, Mode};
use sgnn_transport::WorkerView;
use sgnn_wire::addressing::worker_ip;

#[path = "common.rs"]
mod common;

fuzz_target!(|input: (bool, bool, Vec<common::Op>)| {
    let (which, host_based, ops) = input;
    let plan = &common::plans()[which as usize];
    // Worker 1's view of each plan, built once.
    static VIEWS: OnceLock<[Arc<WorkerView>; 2]> = OnceLock::new();
    let views = VIEWS.get_or_init(|| {
        let p = common::plans();
        let v = |p: &sgnn_plan::Plan| Arc::new(WorkerView::new(p, 1, None).expect("view"));
        [v(&p[0]), v(&p[1])]
    });
    let view = views[which as usize].clone();
    let cfg = EngineConfig {
        mode: if host_based {
            Mode::HostBased
        } else {
            Mode::SwitchGnn
        },
        probe: false,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(view.clone(), cfg, 0);
    let dim = 64;
    let x = vec![0.25f32; view.num_local() * dim];
    e.start_round(0, Layer::forward(0), dim, &x).expect("a round starts");
    let mut now = 0u64;
    for op in ops.iter().take(512) {
        now += op.wait as u64 * 64_000;
        let from = if op.port & 1 == 0 {
            None
        } else {
            Some((op.port as u16 / 2) % 3)
        };
        if let Some(frame) = op.frame(plan, from, worker_ip(1)) {
            e.handle_frame(now, &frame);
        }
        let _ = e.handle_timeout(now);
        while let Some((_, f)) = e.poll_transmit(now) {
            sgnn_wire::FrameRepr::parse(&f).expect("a sent frame parses");
        }
        if e.take_sums().is_some() {
            let _ = e.start_round(now, Layer::forward(1), dim, &x);
        }
    }
});
