//! Placement of partitions on leaves (`PlanConfig::leaves`, `switch-ctl plan --leaves`): on a
//! leaf-spine fabric a placed plan keeps neighbours under one leaf, so the leaf-spine links
//! carry less, while the host links still carry exactly what the traffic model says.

use sgnn_delivery::traffic;
use sgnn_graph::{BuildStats, Csr};
use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
use sgnn_planner::partition::leaf_crossings;
use sgnn_planner::planner::{make_plan, PlanRequest};
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::{run_strategy, RunReport, Strategy, Topology};

mod common;
use common::*;

/// Wire bytes on the links between two switches (leaf->spine and spine->leaf).
fn fabric_bytes(r: &RunReport) -> u64 {
    r.links
        .iter()
        .filter(|l| l.from.starts_with('s') && l.to.starts_with('s'))
        .map(|l| l.stats.bytes)
        .sum()
}

/// Edges whose endpoints are on workers under different leaves.
fn cross_leaf_edges(p: &Plan, per: u32) -> u64 {
    leaf_crossings(&p.graph, &p.partition, per)
}

/// `clusters` dense clusters of `size` vertices (ids interleaved, so a cluster is no id
/// range), each pair inside a cluster an edge with probability 1/8, plus 20 edges between
/// clusters; deterministic (SplitMix64).
fn planted(clusters: u32, size: u32) -> (Csr, BuildStats) {
    let mut x = 42u64;
    let mut next = move || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let n = clusters * size;
    let mut e = Vec::new();
    for c in 0..clusters {
        for i in 0..size {
            for j in i + 1..size {
                if next() % 8 == 0 {
                    e.push((i * clusters + c, j * clusters + c));
                }
            }
        }
    }
    let mut between = 0;
    while between < 20 {
        let (a, b) = ((next() % n as u64) as u32, (next() % n as u64) as u32);
        if a % clusters != b % clusters {
            e.push((a, b));
            between += 1;
        }
    }
    Csr::from_edges(n as usize, &e)
}

fn plan_graph(g: (Csr, BuildStats), config: PlanConfig) -> Plan {
    let req = PlanRequest {
        config,
        graph_source: "planted".into(),
        max_abs_value: 1.0,
    };
    make_plan(g.0, g.1, &req, &mut |_| {}).unwrap().0
}

#[test]
fn placing_partitions_on_leaves_takes_traffic_off_the_fabric() {
    // Three leaves of two workers: METIS's flat numbering nests parts in halves, which a
    // power-of-two number of leaves matches by chance but three leaves do not.
    let (leaves, spines, per) = (3u32, 2u32, 2u32);
    let workers = leaves * per;
    let base = base_config(workers, 64 * 128 * 4, 64);
    let flat = plan_graph(planted(leaves, 80), base.clone());
    let placed = plan_graph(
        planted(leaves, 80),
        PlanConfig {
            leaves,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
            ..base.clone()
        },
    );
    assert_eq!(placed.manifest.config.leaves, leaves);
    assert!(flat.blocks.len() > 1 && placed.blocks.len() > 1);
    let (cf, cp) = (cross_leaf_edges(&flat, per), cross_leaf_edges(&placed, per));
    assert!(
        cp <= 20 && cp < cf,
        "cross-leaf edges: placed {cp}, flat {cf}"
    );

    for st in [Strategy::HostBased, Strategy::SwitchGnn] {
        let mut fabric = Vec::new();
        for p in [&flat, &placed] {
            let topo = Topology::leaf_spine(leaves, spines, per, 100 * GBPS, 100 * GBPS, PS_PER_US);
            let r = run_strategy(p, st, topo, sim_cfg(), &mut |_| {}).unwrap();
            assert!(r.time.is_some(), "{} did not complete", st.name());
            assert_eq!(r.net.dropped_frames, 0);
            // The host links carry what the planner's model says for this plan, placed or not
            // (and the daemons' acks, which the real code reports apart).
            let m = &traffic::model(p)[st.model_name()];
            let o = r.overhead.clone().unwrap_or_default();
            let less = |a: &[u64], b: &[u64]| {
                a.iter()
                    .enumerate()
                    .map(|(i, x)| x - b.get(i).copied().unwrap_or(0))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                less(&r.host_uplink, &o.uplink),
                m.per_worker_uplink,
                "{}",
                st.name()
            );
            assert_eq!(
                less(&r.host_downlink, &o.downlink),
                m.per_worker_downlink,
                "{}",
                st.name()
            );
            fabric.push(fabric_bytes(&r));
        }
        eprintln!(
            "{}: fabric bytes flat {} placed {} ({:.2}x)",
            st.name(),
            fabric[0],
            fabric[1],
            fabric[1] as f64 / fabric[0] as f64
        );
        assert!(
            fabric[1] < fabric[0],
            "{}: placed {} B on the fabric, flat {} B",
            st.name(),
            fabric[1],
            fabric[0]
        );
    }
}
