//! Frame building and the one-block plan shared by the softswitch tests (testbed addressing
//! convention).

use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, LANES};

/// A frame from worker `w` to the switch.
#[allow(dead_code)] // not every test file sends frames
pub fn frame(w: u16, s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    frame_to(w, SWITCH_IP, s, lanes)
}

/// A frame from worker `w` to the IPv4 address `dst` (through the switch).
#[allow(dead_code)] // not every test file addresses hosts
pub fn frame_to(w: u16, dst: [u8; 4], s: Repr, lanes: Option<&[i32; LANES]>) -> Vec<u8> {
    let r = FrameRepr {
        eth: ethernet::Repr {
            dst: SWITCH_MAC,
            src: worker_mac(w),
            ethertype: 0x0800,
        },
        ip: ipv4::Repr {
            src: worker_ip(w),
            dst,
            ttl: 64,
            ..Default::default()
        },
        sgnn: s,
    };
    let mut buf = vec![0u8; r.frame_len()];
    r.emit(lanes, &mut buf).unwrap();
    buf
}

/// Workers of [`one_block_plan`].
#[allow(dead_code)] // not every test file runs a plan
pub const WORKERS: usize = 3;

/// A plan of `graph` (an `rmat:` spec small enough) for [`WORKERS`] workers whose one block
/// holds every contribution (1 MB of switch memory, 32 values per vertex).
#[allow(dead_code)] // not every test file runs a plan
pub fn one_block_plan(graph: &str) -> sgnn_plan::Plan {
    use sgnn_plan::model::PlanConfig;
    use sgnn_planner::planner::{make_plan, PlanRequest};
    let g = sgnn_graph::load_graph(graph).unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: WORKERS as u32,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 1 << 20,
            agg_bytes: 128,
            feature_dim: 32,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 256,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    assert_eq!(plan.blocks.len(), 1, "1 MB holds {graph} in one block");
    plan
}

/// The `softswitch` binary over loopback UDP on the plan in `plan_dir` with `job`, one
/// `--worker` per socket of `workers`, and `extra` flags; returns it, its stdout lines after
/// the first, and the UDP address it printed there (`listening on ADDR`).
#[allow(dead_code)] // not every test file starts the binary
pub fn start_udp_switch(
    plan_dir: &std::path::Path,
    job: u16,
    workers: &[std::net::UdpSocket],
    extra: &[&std::ffi::OsStr],
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    String,
) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_softswitch"))
        .arg("--plan")
        .arg(plan_dir)
        .args(["--job", &job.to_string()])
        .args(
            workers
                .iter()
                .flat_map(|w| ["--worker".to_string(), w.local_addr().unwrap().to_string()]),
        )
        .args(extra)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_string();
    (child, lines, addr)
}

/// The plan the UDP tests run ([`one_block_plan`] of a small R-MAT graph), saved in a fresh
/// directory, and one loopback UDP socket per worker.
#[allow(dead_code)] // not every test file runs over UDP
pub fn saved_plan_and_sockets() -> (sgnn_plan::Plan, tempfile::TempDir, Vec<std::net::UdpSocket>) {
    let plan = one_block_plan("rmat:scale=9,edge_factor=4,seed=2");
    let dir = tempfile::tempdir().unwrap();
    plan.save(dir.path()).unwrap();
    let workers = (0..WORKERS)
        .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    (plan, dir, workers)
}
