//! The Target backends: the same scenarios against the in-memory reference and against the
//! P4Runtime backend talking to the test switch over gRPC; fault injection; validation.

mod common;

use std::time::{Duration, Instant};

use common::{dead_addr, TestSwitch};
use sgnn_p4rt::client::ClientOptions;
use sgnn_p4rt::schema::{
    switchgnn_p4info, switchgnn_p4info_for, Arch, AGGREGATORS, CLONE_SESSION_RECIRCULATE,
    MULTICAST_ALL_WORKERS, TNA_AGGREGATORS,
};
use switch_ctl::backend::{
    ChaosConfig, ChaosTarget, Code, CounterValue, Match, MemoryTarget, Op, P4RuntimeTarget,
    Replica, TableEntry, Target, TargetError,
};

const DEVICE: u64 = 0;

fn agg_entry(block: u128, src: u128, base: u128) -> TableEntry {
    TableEntry::new("agg_table", "aggregate")
        .exact("block_id", block)
        .exact("src_id", src)
        .exact("pass", 0)
        .param("agg_base", base)
        .param("dst_id", 7)
        .param("dst_worker", 2)
        .param("expected", 3)
        .param("more", 1)
        .param("seen_base", src * 2)
        .param("generation", 0)
}

fn worker_entry(worker: u128, port: u128) -> TableEntry {
    TableEntry::new("worker_table", "set_worker")
        .exact("worker_id", worker)
        .param("port", port)
}

fn installed(sw: &TestSwitch) -> P4RuntimeTarget {
    P4RuntimeTarget::connect_and_install(
        &sw.addr(),
        DEVICE,
        1,
        ClientOptions::default(),
        &switchgnn_p4info(),
        b"bmv2 json".to_vec(),
    )
    .expect("connect and install")
}

/// What the control plane does at start-up, and what it reads back. Returns a transcript that
/// must be the same on every backend.
fn scenario(t: &mut dyn Target) -> Vec<String> {
    let mut log = Vec::new();
    let entries: Vec<Op> = (0..40)
        .map(|i| Op::Insert(agg_entry(1, i, i * 32)))
        .collect();
    t.apply(&entries).unwrap();
    t.insert_table_entry(worker_entry(1, 5)).unwrap();
    t.insert_table_entry(worker_entry(2, 511)).unwrap();
    t.modify_table_entry(worker_entry(2, 6)).unwrap();
    let dup = t.insert_table_entry(worker_entry(1, 9)).unwrap_err();
    log.push(format!("dup: {:?}", code(&dup)));
    let missing = t.delete_table_entry(worker_entry(77, 0)).unwrap_err();
    log.push(format!("missing: {:?}", code(&missing)));

    let mut workers = t.read_table("worker_table").unwrap();
    workers.sort_by_key(|e| match e.matches[0].1 {
        Match::Exact(v) => v,
        _ => u128::MAX,
    });
    log.push(format!("workers: {workers:?}"));
    assert_eq!(workers, [worker_entry(1, 5), worker_entry(2, 6)]);
    let agg = t.read_table("agg_table").unwrap();
    log.push(format!("agg entries: {}", agg.len()));
    assert!(agg.contains(&agg_entry(1, 39, 39 * 32)));

    t.write_register("sync_count", 0, 8).unwrap();
    t.write_register("src_seen", 7, 0x1_0002_00fe).unwrap();
    t.write_register_range("agg_value_3", 100, &[1, 0xffff_ffff, 3])
        .unwrap();
    log.push(format!(
        "registers: {} {:#x} {:?} {:?}",
        t.read_register("sync_count", 0).unwrap(),
        t.read_register("src_seen", 7).unwrap(),
        t.read_register_range("agg_value_3", 99..104).unwrap(),
        // A long range takes the wildcard path on P4Runtime.
        t.read_register_range("agg_value_3", 0..1000).unwrap()[100..103].to_vec(),
    ));

    let replicas = [
        Replica {
            port: 1,
            instance: 1,
        },
        Replica {
            port: 2,
            instance: 2,
        },
    ];
    assert_eq!(t.read_multicast_group(MULTICAST_ALL_WORKERS).unwrap(), None);
    t.set_multicast_group(MULTICAST_ALL_WORKERS, &replicas)
        .unwrap();
    // Setting it again must replace it (a MODIFY on P4Runtime, not a second INSERT).
    t.set_multicast_group(MULTICAST_ALL_WORKERS, &replicas[..1])
        .unwrap();
    t.set_clone_session(
        CLONE_SESSION_RECIRCULATE,
        &[Replica {
            port: 68,
            instance: 0,
        }],
    )
    .unwrap();
    log.push(format!(
        "pre: {:?} {:?} {:?}",
        t.read_multicast_group(MULTICAST_ALL_WORKERS).unwrap(),
        t.read_clone_session(CLONE_SESSION_RECIRCULATE).unwrap(),
        t.read_clone_session(7).unwrap(),
    ));

    log.push(format!(
        "counters: {:?}",
        t.read_counter_range("port_rx", 3..5).unwrap()
    ));
    log.push(format!(
        "events: {}",
        t.read_counters("events").unwrap().len()
    ));

    log.push(format!("cleared: {}", t.clear_table("agg_table").unwrap()));
    log.push(format!(
        "after clear: {}",
        t.read_table("agg_table").unwrap().len()
    ));
    log
}

fn code(e: &TargetError) -> Option<Code> {
    match e.root() {
        TargetError::Rejected { code, .. } => Some(*code),
        _ => None,
    }
}

#[test]
fn memory_and_p4runtime_backends_agree() {
    let mut mem = MemoryTarget::new(&switchgnn_p4info()).unwrap();
    let expected = scenario(&mut mem);
    assert_eq!(expected[0], "dup: Some(AlreadyExists)");
    assert_eq!(expected[1], "missing: Some(NotFound)");
    assert!(
        expected.contains(
            &"registers: 8 0x1000200fe [0, 1, 4294967295, 3, 0] [1, 4294967295, 3]".to_string()
        ),
        "{expected:#?}"
    );
    assert!(expected.contains(&"cleared: 40".to_string()));

    let sw = TestSwitch::start(DEVICE);
    let mut p4rt = installed(&sw);
    let got = scenario(&mut p4rt);
    assert_eq!(got, expected);
    // Everything went through the switch: the entries it holds now are the workers'.
    let st = sw.state();
    assert_eq!(st.tables.len(), 2);
    assert_eq!(st.groups[&MULTICAST_ALL_WORKERS].replicas.len(), 1);
}

#[test]
fn connect_checks_the_installed_pipeline() {
    let sw = TestSwitch::start(DEVICE);
    let err = P4RuntimeTarget::connect(&sw.addr(), DEVICE, 1, &switchgnn_p4info()).unwrap_err();
    assert!(matches!(err, TargetError::NoPipeline { .. }), "{err}");

    // The switch runs a program whose block_id is 17 bits wide.
    let mut other = switchgnn_p4info();
    other.tables[0].match_fields[0].bitwidth = 17;
    drop(
        P4RuntimeTarget::connect_and_install(
            &sw.addr(),
            DEVICE,
            2,
            ClientOptions::default(),
            &other,
            vec![],
        )
        .unwrap(),
    );
    let err = P4RuntimeTarget::connect(&sw.addr(), DEVICE, 3, &switchgnn_p4info()).unwrap_err();
    match &err {
        TargetError::Mismatch { differences } => {
            assert_eq!(differences.len(), 1, "{differences:?}");
            assert!(
                differences[0].contains("agg_table") && differences[0].contains("block_id"),
                "{differences:?}"
            );
        }
        other => panic!("expected Mismatch, got {other}"),
    }
    assert!(err.to_string().contains("width: 17, expected 16"), "{err}");
    P4RuntimeTarget::connect(&sw.addr(), DEVICE, 4, &other).expect("the right P4Info is accepted");
}

/// `connect_switchgnn` checks a switch against the contract for the architecture it reports:
/// the v1model program, or the TNA program a Tofino reports as `tna`/`t2na`; a TNA program
/// that differs from its contract is refused with the difference.
#[test]
fn connect_switchgnn_picks_the_contract_of_the_switchs_architecture() {
    let sw = TestSwitch::start(DEVICE);
    let err = P4RuntimeTarget::connect_switchgnn(&sw.addr(), DEVICE, 1).unwrap_err();
    assert!(matches!(err, TargetError::NoPipeline { .. }), "{err}");

    drop(installed(&sw));
    P4RuntimeTarget::connect_switchgnn(&sw.addr(), DEVICE, 2).expect("the v1model program");

    let mut tna = switchgnn_p4info_for(Arch::Tna);
    for arch in ["tna", "t2na"] {
        tna.pkg_info.as_mut().unwrap().arch = arch.into();
        drop(
            P4RuntimeTarget::connect_and_install(
                &sw.addr(),
                DEVICE,
                3,
                ClientOptions::default(),
                &tna,
                vec![],
            )
            .unwrap(),
        );
        let mut t = P4RuntimeTarget::connect_switchgnn(&sw.addr(), DEVICE, 4)
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        // Operations are checked against the TNA contract's sizes, not v1model's (larger).
        // (agg_count: the TNA program has no agg_value_* registers, its lanes are pairs.)
        let write = |index: u64| Op::WriteRegister {
            register: "agg_count".into(),
            index,
            value: 1,
        };
        t.apply(&[write(u64::from(TNA_AGGREGATORS) - 1)])
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        const { assert!(TNA_AGGREGATORS < AGGREGATORS) };
        let err = t.apply(&[write(u64::from(TNA_AGGREGATORS))]).unwrap_err();
        assert!(err.to_string().contains("agg_count"), "{arch}: {err}");
    }

    tna.tables[0].match_fields[0].bitwidth = 17;
    drop(
        P4RuntimeTarget::connect_and_install(
            &sw.addr(),
            DEVICE,
            5,
            ClientOptions::default(),
            &tna,
            vec![],
        )
        .unwrap(),
    );
    let err = P4RuntimeTarget::connect_switchgnn(&sw.addr(), DEVICE, 6).unwrap_err();
    assert!(err.to_string().contains("width: 17, expected 16"), "{err}");
}

#[test]
fn unreachable_switch() {
    let addr = dead_addr();
    let err = P4RuntimeTarget::connect(&addr, DEVICE, 1, &switchgnn_p4info()).unwrap_err();
    match &err {
        TargetError::Unreachable { addr: a, .. } => assert_eq!(a, &addr),
        other => panic!("expected Unreachable, got {other}"),
    }
    assert!(err.to_string().contains("running and listening"), "{err}");
}

#[test]
fn second_controller_with_lower_election_id_is_refused() {
    let sw = TestSwitch::start(DEVICE);
    let _first = installed(&sw);
    let err = P4RuntimeTarget::connect(&sw.addr(), DEVICE, 0, &switchgnn_p4info()).unwrap_err();
    assert!(matches!(err, TargetError::NotPrimary { .. }), "{err}");
}

#[test]
fn invalid_arguments_never_reach_the_switch() {
    let sw = TestSwitch::start(DEVICE);
    let mut t = installed(&sw);
    let before = sw.state().write_requests;
    let mut mem = MemoryTarget::new(&switchgnn_p4info()).unwrap();
    let cases: Vec<(Vec<Op>, &str)> = vec![
        (
            vec![Op::Insert(worker_entry(1, 512))],
            "parameter `port` of action `set_worker`: value 0x200 does not fit in 9 bits",
        ),
        (
            vec![Op::Insert(TableEntry::new("no_such_table", "x"))],
            "no table named `no_such_table` in the P4Info (it has: agg_table, dscp_priority, ipv4_forward, port_worker, switch_config, worker_addr, worker_table)",
        ),
        (
            vec![Op::Insert(
                TableEntry::new("worker_table", "set_worker").exact("worker_id", 1),
            )],
            "parameter `port` of action `set_worker` is missing",
        ),
        (
            vec![Op::Insert(worker_entry(1, 1).exact("worker_id", 2))],
            "given twice",
        ),
        (
            vec![Op::Insert(
                TableEntry::new("worker_table", "forward")
                    .exact("worker_id", 1)
                    .param("port", 1),
            )],
            "table `worker_table` cannot call action `forward`",
        ),
        (
            vec![Op::Insert(TableEntry::new("worker_table", "set_worker").param("port", 1))],
            "key field `worker_id` of table `worker_table` is missing",
        ),
        (
            vec![Op::Insert(worker_entry(1, 1).priority(5))],
            "priority must be 0",
        ),
        (
            vec![Op::WriteRegister {
                register: "agg_state".into(),
                index: 65536,
                value: 0,
            }],
            "out of range for register `agg_state` (65536 cells)",
        ),
        (
            vec![Op::WriteRegister {
                register: "agg_state".into(),
                index: 0,
                value: 256,
            }],
            "does not fit in 8 bits",
        ),
        (
            // A valid first op does not get applied when a later one is invalid.
            vec![
                Op::Insert(worker_entry(1, 1)),
                Op::SetMulticastGroup {
                    group: 0,
                    replicas: vec![],
                },
            ],
            "multicast group 0",
        ),
    ];
    for (ops, want) in cases {
        for target in [&mut t as &mut dyn Target, &mut mem] {
            let err = target.apply(&ops).unwrap_err();
            assert!(
                matches!(err, TargetError::InvalidArgument(_)),
                "{ops:?}: {err}"
            );
            assert!(err.to_string().contains(want), "{ops:?}: {err}");
        }
    }
    assert_eq!(sw.state().write_requests, before, "nothing was sent");
    assert!(sw.state().tables.is_empty());
    assert_eq!(mem.applied_ops(), 0);
    assert!(matches!(
        t.read_register_range("sync_round", 0..2),
        Err(TargetError::InvalidArgument(_))
    ));
    for target in [&mut t as &mut dyn Target, &mut mem] {
        assert!(matches!(
            target.read_register("sync_round", u64::MAX),
            Err(TargetError::InvalidArgument(_))
        ));
        assert!(matches!(
            target.write_register("sync_round", u64::MAX, 1),
            Err(TargetError::InvalidArgument(_))
        ));
        assert!(matches!(
            target.read_counter("events", 64),
            Err(TargetError::InvalidArgument(_))
        ));
    }
}

#[test]
fn partial_batch_over_grpc() {
    let sw = TestSwitch::start(DEVICE);
    let mut t = installed(&sw);
    t.client_mut().set_batch_size(4);
    t.insert_table_entry(worker_entry(6, 1)).unwrap();
    let ops: Vec<Op> = (0..10).map(|w| Op::Insert(worker_entry(w, 1))).collect();
    let err = t.apply(&ops).unwrap_err();
    // Batch 2 (workers 4..8) hits the existing worker 6; the switch applies the other three of
    // that batch (CONTINUE_ON_ERROR) and the third batch is not sent.
    match &err {
        TargetError::Partial {
            applied,
            total,
            source,
        } => {
            assert_eq!((*applied, *total), (7, 10));
            let text = source.to_string();
            assert!(text.contains("write batch 2 of 3"), "{text}");
            assert!(text.contains("update #6"), "{text}");
        }
        other => panic!("expected Partial, got {other}"),
    }
    assert_eq!(code(&err), Some(Code::AlreadyExists));
    assert_eq!(sw.state().tables.len(), 8);
}

#[test]
fn chaos_fails_the_nth_write_with_partial() {
    let mem = MemoryTarget::new(&switchgnn_p4info()).unwrap();
    let mut t = ChaosTarget::new(
        mem,
        ChaosConfig {
            fail_nth_write: Some(3),
            ..Default::default()
        },
    );
    let ops: Vec<Op> = (0..5).map(|w| Op::Insert(worker_entry(w, 1))).collect();
    let err = t.apply(&ops).unwrap_err();
    match &err {
        TargetError::Partial { applied, total, .. } => assert_eq!((*applied, *total), (2, 5)),
        other => panic!("expected Partial, got {other}"),
    }
    assert!(
        err.to_string().contains("2 of 5 operations were applied"),
        "{err}"
    );
    assert!(err
        .to_string()
        .contains("injected fault on write operation #3"));
    assert_eq!(t.inner().applied_ops(), 2);
    assert_eq!(t.read_table("worker_table").unwrap().len(), 2);
    // The rest goes through afterwards.
    t.apply(&ops[2..]).unwrap();
    assert_eq!(t.read_table("worker_table").unwrap().len(), 5);
    assert_eq!(t.faults_injected(), 1);
}

#[test]
fn chaos_over_p4runtime() {
    let sw = TestSwitch::start(DEVICE);
    let inner = installed(&sw);
    let mut t = ChaosTarget::new(
        inner,
        ChaosConfig {
            drop_after_writes: Some(3),
            ..Default::default()
        },
    );
    let ops: Vec<Op> = (0..5).map(|w| Op::Insert(worker_entry(w, 1))).collect();
    let err = t.apply(&ops).unwrap_err();
    match &err {
        TargetError::Partial {
            applied,
            total,
            source,
        } => {
            assert_eq!((*applied, *total), (3, 5));
            assert!(matches!(**source, TargetError::Unreachable { .. }));
        }
        other => panic!("expected Partial, got {other}"),
    }
    assert_eq!(
        sw.state().tables.len(),
        3,
        "the switch got exactly the prefix"
    );
    assert!(matches!(
        t.read_table("worker_table"),
        Err(TargetError::Unreachable { .. })
    ));
    t.reconnect();
    assert_eq!(t.read_table("worker_table").unwrap().len(), 3);
}

#[test]
fn chaos_random_faults_are_reproducible_and_delays_apply() {
    let run = |seed: u64| {
        let mem = MemoryTarget::new(&switchgnn_p4info()).unwrap();
        let mut t = ChaosTarget::new(
            mem,
            ChaosConfig {
                fail_probability: 0.3,
                seed,
                ..Default::default()
            },
        );
        (0..200u128)
            .map(|w| t.insert_table_entry(worker_entry(w, 1)).is_ok())
            .collect::<Vec<bool>>()
    };
    let a = run(42);
    assert_eq!(a, run(42), "same seed, same faults");
    assert_ne!(a, run(43), "another seed, other faults");
    let failed = a.iter().filter(|ok| !**ok).count();
    assert!(
        (30..=90).contains(&failed),
        "about 30% of 200 fail: {failed}"
    );

    let mem = MemoryTarget::new(&switchgnn_p4info()).unwrap();
    let mut t = ChaosTarget::new(
        mem,
        ChaosConfig {
            delay: Duration::from_millis(30),
            ..Default::default()
        },
    );
    let start = Instant::now();
    t.read_table("worker_table").unwrap();
    assert!(start.elapsed() >= Duration::from_millis(30));
}

#[test]
fn counters_read_what_the_data_plane_counted() {
    let mut mem = MemoryTarget::new(&switchgnn_p4info()).unwrap();
    mem.count("port_rx", 4, 2, 128).unwrap();
    mem.count("port_rx", 4, 1, 64).unwrap();
    assert_eq!(
        mem.read_counter("port_rx", 4).unwrap(),
        CounterValue {
            packets: 3,
            bytes: 192
        }
    );
    assert!(mem.count("port_rx", 512, 1, 1).is_err());

    let sw = TestSwitch::start(DEVICE);
    let mut t = installed(&sw);
    sw.state().counters.insert(
        (0x1200_0001, 21),
        sgnn_p4rt::proto::p4::v1::CounterData {
            byte_count: 0,
            packet_count: 5,
        },
    );
    let events = t.read_counters("events").unwrap();
    assert_eq!(events.len(), 64);
    assert_eq!(events[21].packets, 5);
    assert_eq!(t.read_counter("events", 21).unwrap().packets, 5);
    assert_eq!(t.read_counter("events", 20).unwrap().packets, 0);
}
