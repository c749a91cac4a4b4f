//! `switch-ctl plan`'s pipeline (`plan_and_deliver`) computes the paper's multi-level blocks
//! only for `--aggregate paper`, plans the chosen delivery once for both its row of the
//! comparison and the plan, and predicts the paper without its blocks by a lower bound
//! (`bound_paper`). These tests check that the plans are those of the long way round (the
//! paper's plan, then `apply_delivery`), and that the bound never exceeds the paper's own
//! prediction, on graphs and switches where each of its terms decides.

use sgnn_delivery::{bound_paper, predict_paper, PairIndex};
use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::AggregateMode;
use sgnn_plan::{Plan, PlanConfig};
use sgnn_planner::planner::{apply_delivery, make_plan, plan_and_deliver, PlanRequest};

fn request(graph: &str, workers: u32, mem: u64, max_passes: u32) -> PlanRequest {
    PlanRequest {
        config: PlanConfig {
            workers,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: mem,
            agg_bytes: 128,
            feature_dim: 128,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes,
            leaves: 1,
            aggregate: AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: graph.into(),
        max_abs_value: 8.0,
    }
}

fn profile(name: &str, recirc_gbps: Option<f64>, mem: u64) -> SwitchProfile {
    let mut p = SwitchProfile::named(name).unwrap();
    if let Some(r) = recirc_gbps {
        p.recirc_gbps = r;
    }
    p.agg_mem_bytes = mem;
    p
}

/// The files of a saved plan, by name.
fn files(plan: &Plan) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    plan.save(dir.path()).unwrap();
    let mut out = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir.path()).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_delivery_plans_as_the_paper_plan_then_apply_delivery_did() {
    let graph = "rmat:scale=10,edge_factor=8,seed=2";
    for (mem, recirc) in [(32_000u64, None), (1_000_000, Some(1e6))] {
        let req = request(graph, 4, mem, 256);
        let prof = profile("default", recirc, mem);
        for mode in AggregateMode::ALL {
            let g = sgnn_graph::load_graph(graph).unwrap();
            let (paper, mut report) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
            let exact_paper = predict_paper(&paper, &prof);
            let old = apply_delivery(paper, &mut report, mode, &prof).unwrap();
            let g = sgnn_graph::load_graph(graph).unwrap();
            let mut stages = Vec::new();
            let (new, new_report) = plan_and_deliver(g.csr, g.stats, &req, mode, &prof, &mut |e| {
                if let sgnn_planner::planner::Event::Start { stage, .. } = e {
                    stages.push(stage)
                }
            })
            .unwrap();
            assert!(
                files(&old) == files(&new),
                "{mode} at {mem} B: the plan differs from the paper plan's apply_delivery"
            );
            assert_eq!(
                stages.contains(&"blocks"),
                mode == AggregateMode::Paper,
                "{mode}: stages {stages:?}"
            );
            assert_eq!(new_report.aggregate, mode);
            let names: Vec<&str> = new_report
                .predicted
                .iter()
                .map(|r| r.mode.as_str())
                .collect();
            assert_eq!(
                names,
                ["host_based", "paper", "multicast", "partials", "auto"]
            );
            let row = &new_report.predicted[1];
            assert_eq!(row.lower_bound, mode != AggregateMode::Paper, "{mode}");
            if mode == AggregateMode::Paper {
                assert_eq!(row.prediction, exact_paper);
            } else {
                assert!(
                    row.prediction.time_us <= exact_paper.time_us,
                    "{mode}: the paper's bound {} exceeds its prediction {}",
                    row.prediction.time_us,
                    exact_paper.time_us
                );
            }
            // The chosen delivery's row is the plan's own prediction, not planned apart
            // (unless its per-edge sums were dropped at lowering, which a note says).
            if mode != AggregateMode::Paper && new_report.notes.is_empty() {
                let r = new_report
                    .predicted
                    .iter()
                    .find(|r| r.mode == mode.name())
                    .unwrap();
                assert_eq!(
                    r.prediction.blocks as usize,
                    new.blocks.len().max(1),
                    "{mode}"
                );
            }
        }
    }
}

/// The bound against the paper's own prediction: tight memory (many blocks and levels), a low
/// pass limit (hubs split over blocks), free and slow recirculation, a switch that harvests.
#[test]
fn the_papers_bound_never_exceeds_its_prediction() {
    let cases = [
        (
            "rmat:scale=11,edge_factor=8,seed=3",
            8,
            64_000u64,
            256,
            "default",
            None,
        ),
        (
            "rmat:scale=11,edge_factor=8,seed=3",
            8,
            64_000,
            8,
            "default",
            None,
        ),
        (
            "rmat:scale=11,edge_factor=16,seed=4",
            16,
            1_000_000,
            256,
            "default",
            Some(1e6),
        ),
        (
            "rmat:scale=11,edge_factor=16,seed=4",
            16,
            256_000,
            32,
            "tofino1",
            None,
        ),
        (
            "rmat:scale=10,edge_factor=4,seed=5",
            3,
            8_000,
            256,
            "default",
            Some(25.0),
        ),
    ];
    for (graph, workers, mem, passes, switch, recirc) in cases {
        let g = sgnn_graph::load_graph(graph).unwrap();
        let req = request(graph, workers, mem, passes);
        let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
        let prof = profile(switch, recirc, mem);
        let exact = predict_paper(&plan, &prof);
        let bound = bound_paper(&plan, &PairIndex::new(&plan), &prof);
        let case = format!("{graph}, {workers} workers, {mem} B, {passes} passes, {switch}");
        assert!(
            bound.time_us <= exact.time_us * (1.0 + 1e-9),
            "{case}: bound {bound:?} exceeds {exact:?}"
        );
        // Not vacuous: at least one layer's latency and the busiest worker's boundary once.
        assert!(bound.time_us > prof.latency_us(), "{case}: {bound:?}");
        assert!(bound.max_downlink_frames > 0, "{case}: {bound:?}");
        assert!(bound.blocks >= 1 && bound.switch_destinations > 0, "{case}");
    }
}

/// The pipeline takes SuperGCN's covers from the pair index instead of matching every pair
/// again: the traffic model is the same.
#[test]
fn the_traffic_model_from_the_pair_index_is_the_model() {
    for (graph, workers) in [
        ("rmat:scale=10,edge_factor=8,seed=2", 4),
        ("rmat:scale=11,edge_factor=16,seed=4", 16),
    ] {
        let g = sgnn_graph::load_graph(graph).unwrap();
        let (plan, _) = make_plan(
            g.csr,
            g.stats,
            &request(graph, workers, 64_000, 256),
            &mut |_| {},
        )
        .unwrap();
        let idx = PairIndex::new(&plan);
        assert_eq!(
            sgnn_delivery::traffic::model_indexed(&plan, &idx),
            sgnn_delivery::traffic::model(&plan),
            "{graph}"
        );
    }
}
