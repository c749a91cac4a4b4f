//! The traffic model against closed forms on graphs where the answer is known.

use sgnn_graph::Csr;
use sgnn_plan::model::PlanConfig;
use sgnn_plan::traffic;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

fn request(workers: u32, mem: u64, dim: u32, partitioner: &str) -> PlanRequest {
    PlanRequest {
        config: PlanConfig {
            workers,
            partitioner: partitioner.parse().unwrap(),
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
        graph_source: "test".into(),
        max_abs_value: 8.0,
    }
}

fn plan_of(g: Csr, req: &PlanRequest) -> sgnn_plan::Plan {
    let (p, _) = make_plan(g, Default::default(), req, &mut |_| {}).unwrap();
    sgnn_plan::verify(&p).unwrap();
    p
}

/// The paper's extreme case (2.3.2): M workers, E boundary vertices each, boundary vertices
/// fully connected across workers. Host-based costs 2*E*M*(M-1) vertex transfers, in-network
/// 2*E*M.
#[test]
fn fully_connected_boundary_matches_the_papers_closed_form() {
    let (m, e) = (4u32, 5u32);
    let n = m * e;
    let mut edges = Vec::new();
    for u in 0..n {
        for v in u + 1..n {
            if u / e != v / e {
                edges.push((u, v));
            }
        }
    }
    let g = Csr::from_edges(n as usize, &edges).0;
    let p = plan_of(g, &request(m, 10_000_000, 32, "chunk"));
    let frame = wire_bytes(DATA_FRAME_LEN);
    let t = sgnn_delivery::traffic::model(&p);
    let (m64, e64) = (m as u64, e as u64);
    assert_eq!(t["host_based"].total, 2 * e64 * m64 * (m64 - 1) * frame);
    assert_eq!(t["unlimited"].total, 2 * e64 * m64 * frame);
    // One block (everything fits): unlimited plus one block sync.
    assert_eq!(p.blocks.len(), 1);
    assert_eq!(
        t["switchgnn"].total,
        2 * e64 * m64 * frame + 2 * m64 * wire_bytes(CONTROL_FRAME_LEN)
    );
    // Complete bipartite between two workers: the cover is one whole side (E vertices), each way.
    assert_eq!(
        t["supergcn_mvc"].total,
        2 * 2 * e64 * (m64 * (m64 - 1) / 2) * frame
    );
    // With all aggregators available, the strawman aggregates everything.
    assert_eq!(t["strawman"].total, t["unlimited"].total);
    assert_eq!(t["strawman"].in_network_fraction, Some(1.0));
}

#[test]
fn strategies_are_ordered_on_a_power_law_graph() {
    let g = sgnn_graph::load_graph("rmat:scale=12,edge_factor=8,seed=5")
        .unwrap()
        .csr;
    // Tight memory: 64 destinations of 128 values per block.
    let p = plan_of(g, &request(8, 64 * 4 * 128, 128, "metis"));
    let t = sgnn_delivery::traffic::model(&p);
    let total = |s: &str| t[s].total;
    assert!(total("unlimited") <= total("switchgnn"));
    assert!(total("supergcn_mvc") <= total("host_based"));
    assert!(total("unlimited") < total("host_based"));
    // Strawman overflows: part of the contributions go to hosts.
    let f = t["strawman"].in_network_fraction.unwrap();
    assert!(f < 1.0, "strawman fraction {f}");
    // Per-worker maxima are consistent with totals.
    for s in traffic::STRATEGIES {
        let x = &t[s];
        assert_eq!(
            x.per_worker_uplink.iter().sum::<u64>() + x.per_worker_downlink.iter().sum::<u64>(),
            x.total
        );
        assert!(x.max_worker_uplink <= x.upload + x.control);
    }
}

#[test]
fn more_memory_never_means_more_switchgnn_blocks() {
    let g = sgnn_graph::load_graph("rmat:scale=11,edge_factor=8,seed=2")
        .unwrap()
        .csr;
    let small = plan_of(g.clone(), &request(4, 32 * 1024, 64, "metis"));
    let big = plan_of(g, &request(4, 1024 * 1024, 64, "metis"));
    assert!(big.blocks.len() <= small.blocks.len());
    let ts = traffic::switchgnn(&small).total;
    let tb = traffic::switchgnn(&big).total;
    assert!(tb <= ts, "{tb} > {ts}");
}
