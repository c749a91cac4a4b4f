//! The leaf-spine lowering of `sgnn_switch::fabric` on a real plan (made by the planner, so
//! this test lives here rather than in the contract crate, which depends on nothing of
//! switch-ctl's).

use std::collections::HashMap;

use sgnn_plan::Plan;
use sgnn_switch::aggregation::{AggAction, AggregateParams};
use sgnn_switch::fabric::{lower_block, Fabric};

fn plan(workers: u32) -> Plan {
    use sgnn_plan::model::PlanConfig;
    use sgnn_planner::planner::{make_plan, PlanRequest};
    let g = sgnn_graph::load_graph("rmat:scale=9,edge_factor=8,seed=3").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 32 * 1024,
            agg_bytes: 128,
            feature_dim: 64,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 16,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0
}

/// Every aggregate of every block is finished once: on the destination's leaf when every
/// contributor is under it, else by one spine that expects every contribution, fed one
/// partial by each contributing leaf, each leaf expecting exactly its share. Every
/// source's rows are on its owner's leaf, its passes in order.
#[test]
fn lowering_splits_each_aggregate_between_its_leaves_and_one_spine() {
    let p = plan(8);
    assert!(p.blocks.len() > 1);
    let groups = p.replica_groups();
    for (nl, ns) in [(2, 2), (4, 3), (8, 1)] {
        let f = Fabric::new(8, nl, ns).unwrap();
        let (mut leaf_rows, mut split_rows) = (0, 0);
        for (b, block) in p.blocks.iter().enumerate() {
            let fb = lower_block(&p, &f, b, &groups);
            leaf_rows += fb.leaf_rows;
            split_rows += fb.split_rows;
            assert_eq!(fb.leaf_rows + fb.split_rows, block.aggregators.len() as u64);
            // (leaf, src, pass) -> action, and each spine's rows by partial id.
            let mut on_leaf = HashMap::new();
            for (l, rows) in fb.leaves.iter().enumerate() {
                for &(k, a) in rows {
                    assert_eq!(k.block_id, b as u16);
                    assert!(on_leaf.insert((l as u32, k.src_id, k.pass), a).is_none());
                }
            }
            let spine_rows: Vec<HashMap<u32, AggregateParams>> = fb
                .spines
                .iter()
                .map(|rows| {
                    rows.iter()
                        .map(|&(k, a)| {
                            let AggAction::Partials(p) = a else {
                                panic!("a spine holds partials rows only: {a:?}")
                            };
                            (k.src_id, p)
                        })
                        .collect()
                })
                .collect();
            // Each row's contributions per leaf, from the plan.
            let mut share: HashMap<(u32, u32), u32> = HashMap::new();
            for (i, &src) in block.sources.iter().enumerate() {
                let l = f.leaf_of(p.owner(src).unwrap());
                for (pass, &row) in block.passes(i).iter().enumerate() {
                    *share.entry((row, l)).or_default() += 1;
                    let a = on_leaf[&(l, src, pass as u8)];
                    let slot = block.aggregators[row as usize];
                    let dl = f.leaf_of(p.partition[slot.dst as usize]);
                    let alone = (0..nl).all(|o| {
                        o == dl || {
                            block.sources.iter().enumerate().all(|(j, &u)| {
                                f.leaf_of(p.owner(u).unwrap()) != o
                                    || !block.passes(j).contains(&row)
                            })
                        }
                    });
                    match a {
                        AggAction::Aggregate(q) => {
                            assert!(alone && l == dl);
                            assert_eq!((q.expected as u32, q.dst_id), (slot.expected, slot.dst));
                        }
                        AggAction::Up(q) => {
                            assert!(!alone);
                            let s = f.spine_of(b, row);
                            assert_eq!(q.dst_worker, f.spine_peer(s));
                            let sp = spine_rows[s as usize][&q.dst_id];
                            assert_eq!((sp.expected as u32, sp.dst_id), (slot.expected, slot.dst));
                            assert_eq!(sp.agg_base, slot.base);
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }
            // A leaf's share is what its Up rows expect.
            for (&(l, src, _), a) in &on_leaf {
                if let AggAction::Up(q) = a {
                    let i = block.sources.iter().position(|&u| u == src).unwrap();
                    let row = block.passes(i).iter().copied().find(|&r| {
                        f.spine_peer(f.spine_of(b, r)) == q.dst_worker
                            && spine_rows[f.spine_of(b, r) as usize][&q.dst_id].dst_id
                                == block.aggregators[r as usize].dst
                    });
                    let row = row.expect("the Up row names a row of its source");
                    assert_eq!(q.expected as u32, share[&(row, l)]);
                }
            }
            // Each spine row is fed by exactly one leaf's share: partial ids are dense.
            for rows in &spine_rows {
                let mut ids: Vec<u32> = rows.keys().copied().collect();
                ids.sort();
                assert_eq!(ids, (0..rows.len() as u32).collect::<Vec<_>>());
            }
        }
        assert!(split_rows > 0, "{nl}x{ns}: no aggregate spans leaves");
        if nl == 8 {
            // One worker per leaf: only an aggregate fed by its destination's own worker
            // stays on a leaf.
            assert!(split_rows > leaf_rows, "{leaf_rows} {split_rows}");
        }
    }
}
