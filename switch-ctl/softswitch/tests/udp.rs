//! The `softswitch` binary over real sockets: UDP on loopback, and AF_PACKET on veth pairs in
//! a network namespace the test creates and removes. A block of a real plan is aggregated
//! exactly, block sync works, and the counters come out as JSON.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use sgnn_netdev::{AfPacket, Netns, Veth};
use sgnn_plan::Plan;
use sgnn_wire::addressing::worker_ip;
use sgnn_wire::codec::accumulate;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{FrameRepr, PacketType, LANES};

mod common;
use common::{frame, one_block_plan, WORKERS};

/// Sends every source of the plan's block from its worker, checks each worker's results
/// against the exact sums, runs block sync, waits for the switch to exit and checks its
/// counters. `send(w, frame)` and `recv(w)` are the workers' sockets.
fn block_scenario(
    plan: &Plan,
    mut child: Child,
    stats: &Path,
    send: &dyn Fn(usize, &[u8]),
    recv: &dyn Fn(usize) -> Vec<u8>,
    expect_ecn: bool,
) {
    let mut marked = 0;
    let block = &plan.blocks[0];
    let value = |v: u32| -> [i32; LANES] {
        std::array::from_fn(|i| (v as i32 * 31 + i as i32) % 1000 - 500)
    };
    for &src in &block.sources {
        let w = plan.partition[src as usize] as u16;
        let mut s = Repr::new(PacketType::Data);
        s.worker_id = w;
        s.src_id = src;
        send(w as usize, &frame(w, s, Some(&value(src))));
        // Pace a little: socket buffers are finite.
        std::thread::sleep(Duration::from_micros(50));
    }
    // Each worker receives one result per destination it owns, equal to the exact sum.
    for w in 0..WORKERS {
        let mine = block
            .aggregators
            .iter()
            .filter(|a| plan.partition[a.dst as usize] == w as u32)
            .count();
        for _ in 0..mine {
            let buf = recv(w);
            let (r, lanes) = FrameRepr::parse(&buf).unwrap();
            assert_eq!(r.sgnn.packet_type, PacketType::Result);
            assert_eq!(r.ip.dst, worker_ip(w as u16));
            assert_eq!(r.sgnn.flags.ecn, r.ip.ecn == 3, "both ECN marks or neither");
            marked += r.sgnn.flags.ecn as u64;
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
    for w in 0..WORKERS {
        let mut s = Repr::new(PacketType::BlockDone);
        s.worker_id = w as u16;
        send(w, &frame(w as u16, s, None));
    }
    for w in 0..WORKERS {
        let (r, _) = FrameRepr::parse(&recv(w)).unwrap();
        assert_eq!(r.sgnn.packet_type, PacketType::BlockAdvance);
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    assert_eq!(
        json["results"].as_u64().unwrap(),
        block.aggregators.len() as u64
    );
    assert_eq!(
        json["aggregated"].as_u64().unwrap(),
        block.num_contributions()
    );
    assert_eq!(json["drop_malformed"].as_u64().unwrap(), 0);
    assert_eq!(json["queue_drops"].as_u64().unwrap(), 0);
    if expect_ecn {
        assert!(marked > 0, "a queue over the threshold marks results");
        assert!(json["max_queue_depth"].as_u64().unwrap() > 2);
    } else {
        assert_eq!(marked, 0);
    }
    assert_eq!(json["tx_errors"].as_u64().unwrap(), 0);
    // Port counters: every port received its sources' frames plus one block-done.
    let rx: u64 = (0..WORKERS)
        .map(|w| json["port_rx"][w.to_string()]["packets"].as_u64().unwrap())
        .sum();
    assert_eq!(rx, block.sources.len() as u64 + WORKERS as u64);
}

fn run_over_udp(extra: &[&str], expect_ecn: bool) {
    let (plan, dir, workers) = common::saved_plan_and_sockets();
    for w in &workers {
        w.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    }
    let stats = dir.path().join("stats.json");
    // Hand-made frames carry job 0 (sgnn_switch::admission).
    let mut flags: Vec<&std::ffi::OsStr> = vec![
        "--exit-after-blocks".as_ref(),
        "1".as_ref(),
        "--stats-json".as_ref(),
        stats.as_os_str(),
    ];
    flags.extend(extra.iter().map(std::ffi::OsStr::new));
    let (child, _lines, addr) = common::start_udp_switch(dir.path(), 0, &workers, &flags);
    let send = |w: usize, f: &[u8]| {
        workers[w].send_to(f, &addr).unwrap();
    };
    let recv = |w: usize| {
        let mut buf = [0u8; 2048];
        let n = workers[w]
            .recv(&mut buf)
            .expect("a frame before the timeout");
        buf[..n].to_vec()
    };
    block_scenario(&plan, child, &stats, &send, &recv, expect_ecn);
}

#[test]
fn softswitch_binary_aggregates_a_block_over_udp() {
    run_over_udp(&[], false);
}

#[test]
fn a_slow_egress_port_builds_a_queue_and_marks_results_ecn() {
    run_over_udp(&["--port-rate", "500", "--ecn-threshold", "2"], true);
}

#[test]
fn softswitch_binary_aggregates_a_block_over_veth_af_packet() {
    if sgnn_testkit::require(
        "softswitch AF_PACKET test",
        sgnn_netdev::can_create_namespaces(),
        sgnn_testkit::HOW_ROOT,
    )
    .is_none()
    {
        return;
    }
    let plan = one_block_plan("rmat:scale=9,edge_factor=4,seed=2");
    let dir = tempfile::tempdir().unwrap();
    plan.save(dir.path()).unwrap();
    let pid = std::process::id();
    let ns = Netns::create(&format!("sgnn-ss{pid}")).unwrap();
    // Unique names: veths are created in the root namespace before they move.
    let (sw, h) = (|w| format!("ss{pid}s{w}"), |w| format!("ss{pid}h{w}"));
    let _veths: Vec<Veth> = (0..WORKERS)
        .map(|w| Veth::create(&sw(w), Some(&ns), &h(w), Some(&ns)).unwrap())
        .collect();
    let hosts: Vec<AfPacket> = ns
        .run(|| {
            (0..WORKERS)
                .map(|w| AfPacket::open(&h(w)).unwrap())
                .collect()
        })
        .unwrap();
    let stats = dir.path().join("stats.json");
    let mut child = ns
        .command(env!("CARGO_BIN_EXE_softswitch"))
        .arg("--plan")
        .arg(dir.path())
        // Hand-made frames carry job 0 (sgnn_switch::admission).
        .args(["--job", "0"])
        .args((0..WORKERS).flat_map(|w| ["--iface".to_string(), sw(w)]))
        .args(["--exit-after-blocks", "1", "--stats-json"])
        .arg(&stats)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("serving af_packet on"), "{first}");
    let send = |w: usize, f: &[u8]| hosts[w].send(f).unwrap();
    let recv = |w: usize| {
        let mut buf = [0u8; 2048];
        let n = hosts[w]
            .recv(&mut buf, Some(Duration::from_secs(5)))
            .unwrap()
            .expect("a frame before the timeout");
        buf[..n].to_vec()
    };
    block_scenario(&plan, child, &stats, &send, &recv, false);
}
