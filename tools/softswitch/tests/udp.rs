//! The `softswitch` binary over real UDP sockets on loopback: a block of a real plan is
//! aggregated exactly, block sync works, and the counters come out as JSON.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Duration;

use sgnn_plan::model::PlanConfig;
use sgnn_wire::addressing::worker_ip;
use sgnn_wire::codec::accumulate;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, LANES};
use switch_ctl::planner::{make_plan, PlanRequest};

mod common;
use common::frame;

#[test]
fn softswitch_binary_aggregates_a_block_over_udp() {
    let g = sgnn_graph::load_graph("rmat:scale=9,edge_factor=4,seed=2").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: 3,
            partitioner: "metis".into(),
            switch_mem_bytes: 1 << 20,
            agg_bytes: 128,
            feature_dim: 32,
            order: "gamr".into(),
            seed: 1,
            max_passes: 256,
        },
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    assert_eq!(plan.blocks.len(), 1, "1 MB holds this graph in one block");
    let dir = tempfile::tempdir().unwrap();
    plan.save(dir.path()).unwrap();

    let workers: Vec<UdpSocket> = (0..3)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    for w in &workers {
        w.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    }
    let stats = dir.path().join("stats.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_softswitch"))
        .arg("--plan")
        .arg(dir.path())
        .args(
            workers
                .iter()
                .flat_map(|w| ["--worker".to_string(), w.local_addr().unwrap().to_string()]),
        )
        .args(["--exit-after-blocks", "1", "--stats-json"])
        .arg(&stats)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_string();

    // Every source sends its (integer) feature once; the switch multicasts into aggregators.
    let block = &plan.blocks[0];
    let value = |v: u32| -> [i32; LANES] {
        std::array::from_fn(|i| (v as i32 * 31 + i as i32) % 1000 - 500)
    };
    for &src in &block.sources {
        let w = plan.partition[src as usize] as u16;
        let mut s = Repr::new(PacketType::Data);
        s.worker_id = w;
        s.src_id = src;
        workers[w as usize]
            .send_to(&frame(w, s, Some(&value(src))), &addr)
            .unwrap();
        // Pace a little: loopback UDP buffers are finite.
        std::thread::sleep(Duration::from_micros(50));
    }
    // Each worker receives one result per destination it owns, equal to the exact sum.
    let mut buf = [0u8; 2048];
    for (w, sock) in workers.iter().enumerate() {
        let mine: Vec<_> = block
            .aggregators
            .iter()
            .filter(|a| plan.partition[a.dst as usize] == w as u32)
            .collect();
        for _ in 0..mine.len() {
            let n = sock.recv(&mut buf).expect("a result before the timeout");
            let (r, lanes) = FrameRepr::parse(&buf[..n]).unwrap();
            assert_eq!(r.sgnn.packet_type, PacketType::Result);
            assert_eq!(r.ip.dst, worker_ip(w as u16));
            let v = r.sgnn.dst_id;
            let mut want = [0i32; LANES];
            for &u in plan.graph.neighbors(v) {
                if plan.partition[u as usize] != plan.partition[v as usize] {
                    accumulate(&mut want, &value(u));
                }
            }
            assert_eq!(lanes.unwrap(), want, "destination {v}");
        }
    }
    // Block sync: every worker reports; every worker gets the advance; the switch exits.
    for (w, sock) in workers.iter().enumerate() {
        let mut s = Repr::new(PacketType::BlockDone);
        s.worker_id = w as u16;
        sock.send_to(&frame(w as u16, s, None), &addr).unwrap();
    }
    for sock in &workers {
        let n = sock.recv(&mut buf).expect("block advance");
        let (r, _) = FrameRepr::parse(&buf[..n]).unwrap();
        assert_eq!(r.sgnn.packet_type, PacketType::BlockAdvance);
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(
        json["results"].as_u64().unwrap(),
        block.aggregators.len() as u64
    );
    assert_eq!(
        json["aggregated"].as_u64().unwrap(),
        block.num_contributions()
    );
    assert_eq!(json["drop_malformed"].as_u64().unwrap(), 0);
    assert_eq!(json["tx_errors"].as_u64().unwrap(), 0);
}
