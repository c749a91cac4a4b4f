//! The P4Runtime client against the in-process test switch, over real gRPC.

mod common;

use std::time::Duration;

use common::{dead_addr, TestSwitch};
use sgnn_p4rt::client::{pipeline_cookie, ClientError, P4RuntimeClient};
use sgnn_p4rt::proto::p4::v1 as p4;
use sgnn_p4rt::schema::switchgnn_p4info;
use sgnn_p4rt::P4InfoIndex;
use switch_ctl::backend::convert::op_to_update;
use switch_ctl::backend::{Op, TableEntry};
use tonic::Code;

const DEVICE: u64 = 3;

fn worker_entry(worker: u128, port: u128) -> TableEntry {
    TableEntry::new("worker_table", "set_worker")
        .exact("worker_id", worker)
        .param("port", port)
}

fn updates(ops: &[Op]) -> Vec<p4::Update> {
    let ix = P4InfoIndex::new(&switchgnn_p4info()).unwrap();
    ops.iter()
        .map(|op| op_to_update(&ix, op, false).unwrap())
        .collect()
}

async fn primary(sw: &TestSwitch) -> P4RuntimeClient {
    P4RuntimeClient::connect(&sw.addr(), DEVICE, 10)
        .await
        .expect("first client becomes primary")
}

#[tokio::test]
async fn arbitration_lower_election_id_is_not_primary() {
    let sw = TestSwitch::start(DEVICE);
    let a = primary(&sw).await;
    assert!(a.is_primary());

    let err = P4RuntimeClient::connect(&sw.addr(), DEVICE, 5)
        .await
        .expect_err("a lower election id must not become primary");
    match &err {
        ClientError::NotPrimary {
            election_id,
            primary_election_id,
            message,
            ..
        } => {
            assert_eq!(*election_id, 5);
            assert_eq!(*primary_election_id, 10);
            assert!(message.contains("AlreadyExists"), "{message}");
            assert!(message.contains("election id 10 is primary"), "{message}");
        }
        other => panic!("expected NotPrimary, got {other}"),
    }
    assert!(err.to_string().contains("not the primary controller"));

    // A higher election id takes over, and the old primary is told.
    let c = P4RuntimeClient::connect(&sw.addr(), DEVICE, 20)
        .await
        .unwrap();
    assert!(c.is_primary());
    for _ in 0..100 {
        if !a.is_primary() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!a.is_primary(), "the old primary must learn it lost");
    // ...and the switch refuses its writes.
    let err = a
        .write(updates(&[Op::Insert(worker_entry(1, 1))]))
        .await
        .expect_err("a backup cannot write");
    assert_eq!(err.code(), Some(Code::PermissionDenied));

    // When the new primary leaves, the old one is primary again.
    drop(c);
    for _ in 0..100 {
        if a.is_primary() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(a.is_primary());
}

#[tokio::test]
async fn unknown_device_is_an_arbitration_error() {
    let sw = TestSwitch::start(DEVICE);
    let err = P4RuntimeClient::connect(&sw.addr(), DEVICE + 1, 1)
        .await
        .unwrap_err();
    match err {
        ClientError::Arbitration {
            code,
            message,
            device_id,
            ..
        } => {
            assert_eq!(code, Code::NotFound);
            assert_eq!(device_id, DEVICE + 1);
            assert!(message.contains("not known"), "{message}");
        }
        other => panic!("expected Arbitration, got {other}"),
    }
}

#[tokio::test]
async fn unreachable_address_names_it_and_says_what_to_check() {
    let addr = dead_addr();
    let err = P4RuntimeClient::connect(&addr, 0, 1).await.unwrap_err();
    assert!(matches!(err, ClientError::Unreachable { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&addr), "{text}");
    assert!(text.contains("running and listening"), "{text}");
    assert!(
        text.to_lowercase().contains("refused"),
        "the cause should be shown: {text}"
    );

    let err = P4RuntimeClient::connect("not an address", 0, 1)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::BadAddress { .. } | ClientError::Unreachable { .. }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn set_and_get_pipeline() {
    let sw = TestSwitch::start(DEVICE);
    let c = primary(&sw).await;
    assert_eq!(c.get_pipeline().await.unwrap(), None);
    let p4info = switchgnn_p4info();
    let config = b"{\"bmv2\": \"json\"}".to_vec();
    c.set_pipeline(&p4info, config.clone()).await.unwrap();
    assert_eq!(sw.state().device_config, config);
    let (got, cookie) = c.get_pipeline().await.unwrap().expect("a pipeline");
    assert_eq!(got, p4info);
    assert_eq!(cookie, Some(pipeline_cookie(&p4info, &config)));
    assert_ne!(
        pipeline_cookie(&p4info, &config),
        pipeline_cookie(&p4info, b"other")
    );
    assert_eq!(c.capabilities().await.unwrap(), "1.4.0-test");

    // Only the primary may change the pipeline.
    let _higher = P4RuntimeClient::connect(&sw.addr(), DEVICE, 11)
        .await
        .unwrap();
    let err = c.set_pipeline(&p4info, config).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::PermissionDenied), "{err}");
}

#[tokio::test]
async fn writes_are_batched_and_read_back() {
    let sw = TestSwitch::start(DEVICE);
    let mut c = primary(&sw).await;
    c.set_pipeline(&switchgnn_p4info(), vec![]).await.unwrap();
    c.set_batch_size(10);
    let ops: Vec<Op> = (0..25)
        .map(|w| Op::Insert(worker_entry(w, w + 1)))
        .collect();
    let sent = c.write(updates(&ops)).await.unwrap();
    assert_eq!(sent, 3);
    {
        let st = sw.state();
        assert_eq!(st.write_requests, 3);
        assert_eq!(st.batch_sizes, [10, 10, 5]);
        assert_eq!(st.tables.len(), 25);
    }
    // The default batch size sends them in one request.
    c.set_batch_size(sgnn_p4rt::client::DEFAULT_BATCH_SIZE);
    let more: Vec<Op> = (100..350).map(|w| Op::Insert(worker_entry(w, 7))).collect();
    assert_eq!(c.write(updates(&more)).await.unwrap(), 1);
    assert_eq!(sw.state().batch_sizes.last(), Some(&250));

    // Read back with a wildcard: 275 entries arrive in several messages.
    let all = c
        .read(vec![p4::Entity {
            entity: Some(p4::entity::Entity::TableEntry(p4::TableEntry {
                table_id: 0x0200_0002,
                ..Default::default()
            })),
        }])
        .await
        .unwrap();
    assert_eq!(all.len(), 275);
}

#[tokio::test]
async fn failed_batch_says_which_and_what_was_committed() {
    let sw = TestSwitch::start(DEVICE);
    let mut c = primary(&sw).await;
    c.set_pipeline(&switchgnn_p4info(), vec![]).await.unwrap();
    c.set_batch_size(10);
    let mut ops: Vec<Op> = (0..30).map(|w| Op::Insert(worker_entry(w, 1))).collect();
    // Update #15 (in the second batch) duplicates #3.
    ops[15] = Op::Insert(worker_entry(3, 2));
    let err = c.write(updates(&ops)).await.unwrap_err();
    let ClientError::Write(w) = &err else {
        panic!("expected a write failure, got {err}");
    };
    assert_eq!(w.batch, 1);
    assert_eq!(w.batches, 3);
    assert_eq!(w.committed, 10);
    assert_eq!(w.batch_len, 10);
    assert_eq!(w.total, 30);
    assert_eq!(w.batch_applied, Some(9));
    assert_eq!(w.failures.len(), 1);
    assert_eq!(w.failures[0].index, 15);
    assert_eq!(w.failures[0].code, Code::AlreadyExists);
    assert_eq!(err.applied(), 19);
    let text = err.to_string();
    assert!(text.contains("batch 2 of 3"), "{text}");
    assert!(text.contains("10 of 30 updates were committed"), "{text}");
    assert!(text.contains("update #15"), "{text}");
    // The third batch was never sent.
    let st = sw.state();
    assert_eq!(st.write_requests, 2);
    assert_eq!(st.tables.len(), 19);
}
