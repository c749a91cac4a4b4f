//! The control-plane view: switch-ctl's program for a plan, written entry by entry through the
//! named interface, gives exactly the tables the model builds from the plan; registers and
//! counters read back what was written; bad writes are refused with a reason.

use sgnn_plan::model::PlanConfig;
use sgnn_planner::planner::{make_plan, PlanRequest};
use softswitch::control::{ControlError, NamedEntry, WriteKind};
use softswitch::{Pipeline, SwitchConfig, Tables, WorkerPort};
use switch_ctl::program::{program_for, Deployment, Entry, SwitchSizes};

fn named(e: &Entry) -> NamedEntry {
    NamedEntry {
        table: e.table.into(),
        matches: e.matches.iter().map(|&(n, v)| (n.into(), v)).collect(),
        action: e.action.into(),
        params: e.params.iter().map(|&(n, v)| (n.into(), v)).collect(),
    }
}

#[test]
fn the_program_written_by_name_equals_the_tables_built_from_the_plan() {
    let g = sgnn_graph::load_graph("rmat:scale=8,edge_factor=8,seed=5").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: 3,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 24 * 1024,
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
    let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    let prog = program_for(&plan, &Deployment::standard(3), &SwitchSizes::default()).unwrap();
    let mut sw = Pipeline::new(SwitchConfig::default(), Tables::default());
    for e in prog
        .base_entries
        .iter()
        .chain(prog.block_entries.iter().flatten())
    {
        sw.write_entry(WriteKind::Insert, &named(e)).unwrap();
    }
    for g in &prog.groups {
        let replicas = g
            .replicas
            .iter()
            .map(|&(rid, port)| softswitch::Replica {
                rid: rid as u16,
                port: port as u16,
            })
            .collect();
        sw.write_multicast_group(WriteKind::Insert, g.id as u16, replicas)
            .unwrap();
    }
    let e = sw
        .write_entry(WriteKind::Insert, &named(&prog.config))
        .unwrap_err();
    assert!(e.to_string().contains("MODIFY its default action"), "{e}");
    sw.write_entry(WriteKind::Modify, &named(&prog.config))
        .unwrap();
    assert_eq!(
        sw.read_entries("switch_config").unwrap(),
        vec![named(&prog.config)]
    );
    for r in &prog.registers {
        sw.write_register(r.register, r.index as usize, r.value)
            .unwrap();
    }
    let ports: Vec<WorkerPort> = (0..3u16)
        .map(|w| WorkerPort {
            port: w,
            mac: sgnn_wire::addressing::worker_mac(w),
            ip: sgnn_wire::addressing::worker_ip(w),
        })
        .collect();
    let want = Tables::from_plan(&plan, &ports);
    assert_eq!(sw.tables.agg_table, want.agg_table);
    assert_eq!(sw.tables.worker_table, want.worker_table);
    assert_eq!(sw.tables.worker_addr, want.worker_addr);
    assert_eq!(sw.tables.ipv4_forward, want.ipv4_forward);
    assert_eq!(sw.tables.multicast_groups, want.multicast_groups);
    assert_eq!(sw.tables.dscp_priority.len(), 5);
    assert_eq!(sw.config.workers, 3);
    assert_eq!(sw.config.blocks_per_round as usize, plan.blocks.len());
    assert_eq!(sw.config.mac, sgnn_wire::addressing::SWITCH_MAC);
    // Reading back gives what was written, in key order.
    let back = sw.read_entries("agg_table").unwrap();
    assert_eq!(back.len(), prog.agg_entries());
    let mut want_entries: Vec<NamedEntry> =
        prog.block_entries.iter().flatten().map(named).collect();
    want_entries.sort_by_key(|e| (e.matches[0].1, e.matches[1].1, e.matches[2].1));
    assert_eq!(back, want_entries);
    // Inserting again is refused; deleting then modifying a missing key is refused.
    let first = named(&prog.block_entries[0][0]);
    assert!(matches!(
        sw.write_entry(WriteKind::Insert, &first),
        Err(ControlError::Exists(_))
    ));
    sw.write_entry(WriteKind::Delete, &first).unwrap();
    assert!(matches!(
        sw.write_entry(WriteKind::Modify, &first),
        Err(ControlError::Exists(_))
    ));
    assert_eq!(sw.clear_table("agg_table").unwrap(), prog.agg_entries() - 1);
}

#[test]
fn registers_and_counters_read_back_and_bad_writes_say_why() {
    let mut sw = Pipeline::new(SwitchConfig::default(), Tables::default());
    sw.write_register("agg_value_7", 12, 0xffff_fffe).unwrap();
    assert_eq!(sw.regs.agg_values[12][7], -2);
    assert_eq!(sw.read_register("agg_value_7", 12).unwrap(), 0xffff_fffe);
    let e = sw.write_register("cfg_switch_ip", 0, 1).unwrap_err();
    assert!(
        matches!(
            e,
            ControlError::Unknown {
                kind: "register",
                ..
            }
        ),
        "settings are a table"
    );
    let e = sw.write_register("agg_count", 0, 1 << 16).unwrap_err();
    assert!(e.to_string().contains("does not fit in 16 bits"), "{e}");
    let e = sw.write_register("agg_count", 1 << 20, 1).unwrap_err();
    assert!(e.to_string().contains("beyond register agg_count"), "{e}");
    let e = sw.write_register("agg_value_32", 0, 1).unwrap_err();
    assert!(matches!(
        e,
        ControlError::Unknown {
            kind: "register",
            ..
        }
    ));
    let e = sw
        .write_entry(
            WriteKind::Insert,
            &NamedEntry {
                table: "worker_table".into(),
                matches: vec![("worker_id".into(), 1)],
                action: "set_worker".into(),
                params: vec![("port".into(), 512)],
            },
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("port = 512 does not fit in 9 bits"),
        "{e}"
    );
    let mut out = Vec::new();
    sw.process(3, &[0u8; 20], &mut out);
    assert_eq!(sw.read_counter("events", 0).unwrap(), (1, 0));
    assert_eq!(sw.read_counter("events", 16).unwrap(), (1, 0)); // drop_not_ipv4
    assert_eq!(sw.read_counter("port_rx", 3).unwrap(), (1, 20));
    assert_eq!(sw.read_counter("events", 63).unwrap(), (0, 0)); // a cell no event uses
    assert!(sw.read_counter("events", 64).is_err());
}

/// A switch that knows its host ports refuses a worker mapped beyond them (issue 14: an
/// 8-worker plan loaded into a 4-port switch was accepted, and the run timed out later).
#[test]
fn a_worker_on_a_port_the_switch_does_not_have_is_refused() {
    let mut sw = Pipeline::new(SwitchConfig::default(), Tables::default());
    sw.host_ports = Some(4);
    let entry = |w: u128, port: u128| NamedEntry {
        table: "worker_table".into(),
        matches: vec![("worker_id".into(), w)],
        action: "set_worker".into(),
        params: vec![("port".into(), port)],
    };
    sw.write_entry(WriteKind::Insert, &entry(3, 3)).unwrap();
    let e = sw.write_entry(WriteKind::Insert, &entry(5, 5)).unwrap_err();
    assert!(matches!(e, ControlError::Invalid(_)), "{e:?}");
    assert!(
        e.to_string().contains("this switch has 4 host ports"),
        "{e}"
    );
    // Without the fact (a library user's pipeline), nothing is checked.
    sw.host_ports = None;
    sw.write_entry(WriteKind::Insert, &entry(5, 5)).unwrap();
}
