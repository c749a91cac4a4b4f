//! The BfRt backend against the BfRuntime double serving the compiler's BfRt schema of
//! `p4/tna` (`tests/data/switchgnn-tna.bf-rt.json`, checked against `bf-p4c`'s output by
//! `bmv2-tests/tests/tofino.rs` where the compiler is built): every kind of object the control
//! plane programs goes through real gRPC and comes back, and a switch that lacks objects, is
//! unreachable or is asked something invalid is refused with a reason.

use sgnn_p4rt::bfrt_double::BfrtDouble;
use sgnn_p4rt::proto::bfrt_proto as bf;
use sgnn_p4rt::schema::{switchgnn_p4info_for, Arch, TNA_AGGREGATORS};
use switch_ctl::backend::{BfrtTarget, Code, Replica, TableEntry, Target, TargetError};

/// The compiler's BfRt schema of `p4/tna` (committed; `bmv2-tests/tests/tofino.rs` checks it
/// against `bf-p4c`'s output).
fn schema() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../p4rt/tests/data/switchgnn-tna.bf-rt.json"
    );
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn connect(d: &BfrtDouble) -> BfrtTarget {
    BfrtTarget::connect(
        &format!("bfrt://{}", d.addr()),
        0,
        1,
        &switchgnn_p4info_for(Arch::Tna),
    )
    .unwrap()
}

fn agg_entry(src: u128, base: u128) -> TableEntry {
    TableEntry::new("agg_table", "aggregate")
        .exact("block_id", 3)
        .exact("src_id", src)
        .exact("pass", 0)
        .param("agg_base", base)
        .param("dst_id", 5)
        .param("dst_worker", 1)
        .param("expected", 2)
        .param("more", 0)
        .param("seen_base", 0)
        .param("generation", 0)
}

#[test]
fn every_kind_of_object_is_written_and_read_back_by_name() {
    let d = BfrtDouble::start("switchgnn", &schema()).unwrap();
    let mut t = connect(&d);
    assert_eq!(t.p4_name(), "switchgnn");
    // Sizes are the compiled program's.
    assert_eq!(
        t.index().register("agg_count").unwrap().size,
        TNA_AGGREGATORS as u64
    );

    // Table entries, by the contract's names.
    let (a, b) = (agg_entry(77, 10), agg_entry(78, 20));
    t.apply(&[
        switch_ctl::backend::Op::Insert(a.clone()),
        switch_ctl::backend::Op::Insert(b.clone()),
    ])
    .unwrap();
    let mut got = t.read_table("agg_table").unwrap();
    got.sort_by_key(|e| {
        e.matches
            .clone()
            .into_iter()
            .map(|(_, m)| format!("{m:?}"))
            .collect::<Vec<_>>()
    });
    assert_eq!(got, vec![a.clone(), b.clone()]);
    assert_eq!(d.entries("agg_table"), 2);
    let e = t.insert_table_entry(a.clone()).unwrap_err();
    assert!(
        matches!(
            e.root(),
            TargetError::Rejected {
                code: Code::AlreadyExists,
                ..
            }
        ),
        "{e}"
    );
    t.delete_table_entry(a.clone()).unwrap();
    assert_eq!(t.read_table("agg_table").unwrap(), vec![b.clone()]);

    // The keyless settings table's default action.
    let cfg = TableEntry::new("switch_config", "set_config")
        .param("workers", 4)
        .param("blocks_per_round", 2)
        .param("ecn_threshold", 100)
        .param("drop_every", 0)
        .param("drop_prob", 0)
        .param("switch_mac", 0x02_00_00_00_ff_fe)
        .param("switch_ip", 0x0a00_00fe)
        .param("plan_tag", 0xdead_beef)
        .param("role", 0)
        .param("sync_base", 0)
        .param("up_id", 0)
        .param("up_peer", 0)
        .param("job", 0x1234);
    t.apply(&[switch_ctl::backend::Op::SetDefault(cfg.clone())])
        .unwrap();
    assert_eq!(t.read_default("switch_config").unwrap(), Some(cfg));

    // Register cells (the double reports two pipes; one holds the value).
    t.write_register("agg_count", 5, 3).unwrap();
    t.write_register("sync_done", 2, 0xffff_fffe).unwrap();
    assert_eq!(
        t.read_register_range("agg_count", 4..7).unwrap(),
        vec![0, 3, 0]
    );
    assert_eq!(t.read_register("sync_done", 2).unwrap(), 0xffff_fffe);
    let e = t
        .write_register("agg_count", TNA_AGGREGATORS as u64, 1)
        .unwrap_err();
    assert!(matches!(e, TargetError::InvalidArgument(_)), "{e}");
    // A lane pair (two lanes per cell) is refused by name, as P4Runtime refuses it, rather
    // than read or written through its first lane only.
    for e in [
        t.write_register("agg_pair_0", 0, 1).unwrap_err(),
        t.read_register("agg_pair_15", 0).unwrap_err(),
    ] {
        assert!(
            matches!(&e, TargetError::InvalidArgument(m) if m.contains("agg_pair_")),
            "{e}"
        );
    }

    // Counters (never written: zero), in both gresses.
    assert_eq!(t.read_counters("events").unwrap().len(), 64);
    assert_eq!(t.read_counter("egress_events", 1).unwrap().packets, 0);

    // The packet replication engine and the mirror session.
    let reps = vec![
        Replica {
            port: 0,
            instance: 0,
        },
        Replica {
            port: 4,
            instance: 1,
        },
        Replica {
            port: 8,
            instance: 2,
        },
    ];
    t.set_multicast_group(1, &reps).unwrap();
    assert_eq!(t.read_multicast_group(1).unwrap(), Some(reps));
    assert_eq!(t.read_multicast_group(9).unwrap(), None);
    t.set_clone_session(
        100,
        &[Replica {
            port: 68,
            instance: 0,
        }],
    )
    .unwrap();
    assert_eq!(
        t.read_clone_session(100).unwrap(),
        Some(vec![Replica {
            port: 68,
            instance: 0
        }])
    );
    let e = t
        .set_clone_session(
            101,
            &[
                Replica {
                    port: 1,
                    instance: 0,
                },
                Replica {
                    port: 2,
                    instance: 0,
                },
            ],
        )
        .unwrap_err();
    assert!(e.to_string().contains("one copy to one port"), "{e}");

    // Invalid arguments never reach the switch.
    let before = d.requests_rejected();
    let e = t
        .insert_table_entry(agg_entry(79, 1).param("nope", 1))
        .unwrap_err();
    assert!(matches!(e, TargetError::InvalidArgument(_)), "{e}");
    let e = t.insert_table_entry(agg_entry(1 << 40, 1)).unwrap_err();
    assert!(matches!(e, TargetError::InvalidArgument(_)), "{e}");
    assert_eq!(d.requests_rejected(), before);
    assert!(d.updates_applied() >= 10);
}

#[test]
fn the_double_refuses_what_a_strict_switch_would() {
    let d = BfrtDouble::start("switchgnn", &schema()).unwrap();
    let info = sgnn_p4rt::bfrt::BfrtInfo::parse(&schema()).unwrap();
    let agg = info.table("agg_table").unwrap().clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = bf::bf_runtime_client::BfRuntimeClient::connect(format!("http://{}", d.addr()))
            .await
            .unwrap();
        let key = |w: usize| bf::TableKey {
            fields: agg
                .keys
                .iter()
                .map(|k| bf::KeyField {
                    field_id: k.id,
                    match_type: Some(bf::key_field::MatchType::Exact(bf::key_field::Exact {
                        value: vec![
                            0;
                            if k.name.ends_with("block_id") {
                                w
                            } else {
                                k.ty.width().div_ceil(8) as usize
                            }
                        ],
                    })),
                })
                .collect(),
        };
        let write = |k: bf::TableKey| bf::WriteRequest {
            client_id: 7,
            updates: vec![bf::Update {
                r#type: bf::update::Type::Delete as i32,
                entity: Some(bf::Entity {
                    entity: Some(bf::entity::Entity::TableEntry(bf::TableEntry {
                        table_id: agg.id,
                        value: Some(bf::table_entry::Value::Key(k)),
                        ..Default::default()
                    })),
                }),
            }],
            ..Default::default()
        };
        // Not bound to the program.
        let s = c.write(write(key(2))).await.unwrap_err();
        assert_eq!(s.code(), Code::FailedPrecondition, "{s:?}");
        // Bind as client 7 (subscribe first), then a 3-byte value for a 16-bit field.
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tx.send(bf::StreamMessageRequest {
            client_id: 7,
            update: Some(bf::stream_message_request::Update::Subscribe(
                Default::default(),
            )),
        })
        .await
        .unwrap();
        let mut stream = c
            .stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        stream.message().await.unwrap().unwrap();
        c.set_forwarding_pipeline_config(bf::SetForwardingPipelineConfigRequest {
            client_id: 7,
            config: vec![bf::ForwardingPipelineConfig {
                p4_name: "switchgnn".into(),
                ..Default::default()
            }],
            ..Default::default()
        })
        .await
        .unwrap();
        let s = c.write(write(key(3))).await.unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument, "{s:?}");
        assert!(s.message().contains("bytes, got 3"), "{}", s.message());
        // A well-formed delete of an entry that is not there.
        let s = c.write(write(key(2))).await.unwrap_err();
        assert_eq!(s.code(), Code::NotFound, "{s:?}");
        drop(tx);
    });
    assert_eq!(d.requests_rejected(), 3);
}

#[test]
fn a_switch_without_the_contract_objects_is_refused_with_every_difference() {
    // The schema without agg_table.
    let mut v: serde_json::Value = serde_json::from_slice(&schema()).unwrap();
    v["tables"]
        .as_array_mut()
        .unwrap()
        .retain(|t| !t["name"].as_str().unwrap().ends_with(".agg_table"));
    let d = BfrtDouble::start("other", &serde_json::to_vec(&v).unwrap()).unwrap();
    let e = BfrtTarget::connect(d.addr(), 0, 1, &switchgnn_p4info_for(Arch::Tna)).unwrap_err();
    let TargetError::Mismatch { differences } = &e else {
        panic!("{e}")
    };
    assert!(
        differences.iter().any(|d| d.contains("agg_table")),
        "{differences:?}"
    );
}

#[test]
fn an_unreachable_switch_is_reported_as_such() {
    let e = BfrtTarget::connect("bfrt://127.0.0.1:1", 0, 1, &switchgnn_p4info_for(Arch::Tna))
        .unwrap_err();
    assert!(matches!(e, TargetError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("127.0.0.1:1"), "{e}");
}
