//! One worker on one core against the same worker on two (issue 32; docs/host.md, "One
//! worker on several cores"): the work of worker 0's whole round, its engine alone with a
//! null datapath, done by one engine on the plan, and by two engines on two threads on the
//! plan split by columns (`switch-ctl plan --cores 2`; cores 0 and 1 of worker 0 are split
//! workers 0 and 1).
//!
//! The graph and plans are the engine bench's (the README's: R-MAT 2^12, edge factor 8,
//! 4 workers, 64 values per vertex, 4 MB of switch memory). For each, one lossless round of
//! every worker through the software switch's pipeline in memory records what each worker
//! received. A timed round of one worker is then all its engine does in the round: start it
//! (encode the features, sum the local neighbours), send every frame it has (`poll_transmit`
//! after each frame it takes, as the daemon's loop does), take every frame it received in
//! order (parse, route, accumulate, bitmaps) and end it (decode the sums). `1-core` times
//! worker 0's engine on the plan; `2-cores` times both cores of worker 0, each on its own
//! thread, from a common start until the later finishes. Throughput is the frames worker 0
//! sends and receives in a round on one core (the two cores move the same Data and Results,
//! and each its own control frames), so the two rates compare as work done per second.
//!
//! ```sh
//! cargo bench -p sgnn-sim --bench cores -- --measurement-time 5 --warm-up-time 1
//! ```

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sgnn_graph::Features;
use sgnn_plan::{AggregateMode, Plan};
use sgnn_transport::engine::{Engine, EngineConfig, Layer, Mode};
use sgnn_transport::WorkerView;

#[path = "common/case.rs"]
#[allow(dead_code)]
mod case;

/// One worker's round, ready to replay.
struct Round {
    view: Arc<WorkerView>,
    cfg: EngineConfig,
    dim: usize,
    features: Vec<f32>,
    received: Vec<Vec<u8>>,
}

impl Round {
    /// The whole round of this worker's engine; returns the frames it sent and took.
    fn run(&self) -> u64 {
        let mut e = Engine::new(self.view.clone(), self.cfg.clone(), 0);
        e.start_round(0, Layer::forward(0), self.dim, &self.features)
            .unwrap();
        let mut frames = self.received.len() as u64;
        let mut drain = |e: &mut Engine| {
            while let Some((_, f)) = e.poll_transmit(0) {
                black_box(&f);
                frames += 1;
                e.recycle(f);
            }
        };
        drain(&mut e);
        for f in &self.received {
            e.handle_frame(0, f);
            drain(&mut e);
        }
        assert!(e.take_sums().is_some(), "the round completed");
        frames
    }
}

/// Every worker's round of `plan` in `mode`: one lossless round through the software switch
/// in memory, recording what each worker received.
fn rounds(plan: &Plan, mode: Mode) -> Vec<Round> {
    let workers = plan.workers() as usize;
    let dim = plan.manifest.config.feature_dim as usize;
    let views: Vec<Arc<WorkerView>> = (0..workers as u32)
        .map(|w| Arc::new(WorkerView::new(plan, w, None).unwrap()))
        .collect();
    let cfg = case::config(mode);
    let (rows, cols) = plan.job_shape(dim);
    let global = plan.job_rows(Features::random(rows, cols, 7).data);
    let features: Vec<Vec<f32>> = views.iter().map(|v| v.local_rows(&global, dim)).collect();
    let received = case::record_round(plan, &views, &cfg, dim, &features);
    views
        .into_iter()
        .zip(features)
        .zip(received)
        .map(|((view, features), received)| Round {
            view,
            cfg: cfg.clone(),
            dim,
            features,
            received,
        })
        .collect()
}

/// `iters` rounds of each of `cores` on a thread of its own, from a common start; the time
/// until the last thread is done.
fn on_threads(cores: &[Round], iters: u64) -> Duration {
    let start = Barrier::new(cores.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = cores
            .iter()
            .map(|r| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let t0 = Instant::now();
                    for _ in 0..iters {
                        black_box(r.run());
                    }
                    (t0, Instant::now())
                })
            })
            .collect();
        start.wait();
        let spans: Vec<(Instant, Instant)> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let first = spans.iter().map(|s| s.0).min().unwrap();
        let last = spans.iter().map(|s| s.1).max().unwrap();
        last - first
    })
}

fn bench(c: &mut Criterion) {
    for (name, aggregate, mode) in [
        ("switchgnn", AggregateMode::Paper, Mode::SwitchGnn),
        ("auto", AggregateMode::Auto, Mode::SwitchGnn),
        ("host-based", AggregateMode::Paper, Mode::HostBased),
    ] {
        let plan = case::plan(aggregate);
        let split = sgnn_planner::split::split_columns(plan.clone(), 2).unwrap();
        let one = rounds(&plan, mode);
        let two = rounds(&split, mode);
        let frames = one[0].run();
        let per_core: Vec<u64> = two[..2].iter().map(Round::run).collect();
        eprintln!(
            "{name}: worker 0 moves {frames} frames a round on one core; its two cores {} and {}",
            per_core[0], per_core[1]
        );
        let mut g = c.benchmark_group(format!("worker_round/{name}"));
        g.throughput(Throughput::Elements(frames));
        g.bench_function("1-core", |b| {
            b.iter_custom(|iters| on_threads(&one[..1], iters))
        });
        g.bench_function("2-cores", |b| {
            b.iter_custom(|iters| on_threads(&two[..2], iters))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
