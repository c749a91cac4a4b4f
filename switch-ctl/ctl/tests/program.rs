//! A plan's switch program: every contribution has its entry, and plans that do not fit the
//! switch are refused with a message that says what to change.

use sgnn_plan::model::PlanConfig;
use sgnn_planner::planner::{make_plan, PlanRequest};
use switch_ctl::program::{program_for, Deployment, ProgramError, SwitchSizes};

fn plan(mem: u64, dim: u32) -> sgnn_plan::Plan {
    let g = sgnn_graph::load_graph("rmat:scale=9,edge_factor=8,seed=3").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: 4,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: mem,
            agg_bytes: 128,
            feature_dim: dim,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 8,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap().0
}

#[test]
fn every_contribution_gets_an_entry_and_the_settings_follow_the_plan() {
    let p = plan(32 * 1024, 64);
    let prog = program_for(&p, &Deployment::standard(4), &SwitchSizes::default()).unwrap();
    let contributions: u64 = p.blocks.iter().map(|b| b.num_contributions()).sum();
    assert_eq!(prog.agg_entries() as u64, contributions);
    // Exactly one entry per (block, src, pass), and `more` on all but the last pass.
    let mut keys = std::collections::HashSet::new();
    for (b, entries) in prog.block_entries.iter().enumerate() {
        for e in entries {
            assert_eq!(e.matches[0], ("block_id", b as u128));
            assert!(keys.insert((e.matches[1].1, e.matches[2].1, b)));
        }
    }
    let lasts = prog
        .block_entries
        .iter()
        .flatten()
        .filter(|e| e.params[4] == ("more", 0))
        .count();
    let sources: usize = p.blocks.iter().map(|b| b.sources.len()).sum();
    assert_eq!(lasts, sources);
    let setting = |n: &str| prog.config.params.iter().find(|r| r.0 == n).unwrap().1;
    assert_eq!(prog.config.table, "switch_config");
    assert_eq!(setting("workers"), 4);
    assert_eq!(setting("blocks_per_round"), p.blocks.len() as u128);
    assert_eq!(setting("ecn_threshold"), u32::MAX as u128);
    assert_eq!(prog.groups[0].replicas.len(), 4);
    assert_eq!(
        prog.base_entries
            .iter()
            .filter(|e| e.table == "worker_table")
            .count(),
        4
    );
}

#[test]
fn plans_too_big_for_the_switch_are_refused_with_what_to_change() {
    let p = plan(1 << 20, 64);
    let small = SwitchSizes {
        aggregators: 8,
        ..SwitchSizes::default()
    };
    let refuse = |sizes: &SwitchSizes, workers: u32| match program_for(
        &p,
        &Deployment::standard(workers),
        sizes,
    ) {
        Ok(_) => panic!("a plan that does not fit was accepted"),
        Err(e) => e,
    };
    let e = refuse(&small, 4);
    assert!(
        matches!(e, ProgramError::Aggregators { have: 8, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("--switch-mem 1KB"), "{e}");
    let tiny_seen = SwitchSizes {
        seen_cells: 10,
        ..SwitchSizes::default()
    };
    let e = refuse(&tiny_seen, 4);
    assert!(matches!(e, ProgramError::SeenCells { block: 0, .. }), "{e}");
    let e = refuse(&SwitchSizes::default(), 3);
    assert_eq!(
        e,
        ProgramError::Ports {
            workers: 4,
            ports: 3
        }
    );
}
