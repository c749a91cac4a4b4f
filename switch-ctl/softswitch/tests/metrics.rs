//! `softswitch --metrics`: the real binary over UDP on loopback, scraped over HTTP before and
//! after real SwitchGNN frames; the counters move by exactly what the frames cause.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sgnn_wire::sgnn::Repr;
use sgnn_wire::{PacketType, LANES};

mod common;
use common::frame;

/// One HTTP GET; returns the status code and the body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect(head);
    (status, body.to_string())
}

/// Samples of the exposition by `name{labels}` (as written).
fn samples(body: &str) -> HashMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect(l);
            (k.to_string(), v.parse().expect(l))
        })
        .collect()
}

fn scrape(addr: &str) -> HashMap<String, f64> {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    samples(&body)
}

fn event(m: &HashMap<String, f64>, e: &str) -> f64 {
    m[&format!("sgnn_switch_events_total{{event=\"{e}\"}}")]
}

/// Starts the softswitch binary on `plan` with `workers` as its UDP ports, `--metrics` on a
/// free port and `extra`; returns it, its stdout lines after the first, its UDP address and
/// its metrics address.
fn start(
    plan: &std::path::Path,
    workers: &[UdpSocket],
    extra: &[&str],
) -> (
    std::process::Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    String,
    String,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_softswitch"))
        .arg("--plan")
        .arg(plan)
        // Hand-made frames carry job 0 (sgnn_switch::admission).
        .args(["--job", "0"])
        .args(
            workers
                .iter()
                .flat_map(|w| ["--worker".to_string(), w.local_addr().unwrap().to_string()]),
        )
        .args(["--metrics", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = out.next().unwrap().unwrap();
    let switch = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_string();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = err.next().unwrap().unwrap();
    let metrics = line
        .strip_prefix("metrics on http://")
        .and_then(|l| l.strip_suffix("/metrics"))
        .expect(&line)
        .to_string();
    (child, out, switch, metrics)
}

#[test]
fn metrics_follow_the_frames_the_switch_receives() {
    let (plan, dir, workers) = common::saved_plan_and_sockets();
    let (mut child, out, switch, metrics) = start(dir.path(), &workers, &[]);

    let (status, _) = get(&metrics, "/other");
    assert_eq!(status, 404);
    let (_, body) = get(&metrics, "/metrics");
    for name in sgnn_p4rt::schema::EVENTS {
        assert!(
            body.contains(&format!("sgnn_switch_events_total{{event=\"{name}\"}} ")),
            "event {name} missing:\n{body}"
        );
    }
    for name in [
        "sgnn_switch_events",
        "sgnn_switch_port_rx_frames",
        "sgnn_switch_port_tx_bytes",
        "sgnn_switch_aggregators",
        "sgnn_switch_aggregators_busy",
        "sgnn_switch_sync_round",
        "sgnn_switch_sync_block",
        "sgnn_switch_tx_errors",
        "sgnn_switch_port_silent_seconds",
    ] {
        assert!(body.contains(&format!("# HELP {name} ")), "{name}:\n{body}");
    }
    let before = samples(&body);
    assert_eq!(event(&before, "rx"), 0.0);
    assert_eq!(before["sgnn_switch_aggregators_busy"], 0.0);
    assert_eq!(before["sgnn_switch_sync_block"], 0.0);

    // Worker 0 sends the first-pass Data of two of its block's sources: two frames in on
    // port 0, each added into its aggregators.
    let block = &plan.blocks[0];
    let mine: Vec<u32> = block
        .sources
        .iter()
        .copied()
        .filter(|&s| plan.partition[s as usize] == 0)
        .take(2)
        .collect();
    assert_eq!(mine.len(), 2);
    let mut bytes = 0;
    for &src in &mine {
        let mut s = Repr::new(PacketType::Data);
        s.worker_id = 0;
        s.src_id = src;
        let f = frame(0, s, Some(&[1; LANES]));
        bytes += f.len();
        workers[0].send_to(&f, &switch).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let m = scrape(&metrics);
        if event(&m, "rx") >= 2.0 || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let delta = |k: &str| after[k] - before[k];
    assert_eq!(event(&after, "rx") - event(&before, "rx"), 2.0);
    assert_eq!(event(&after, "data") - event(&before, "data"), 2.0);
    assert_eq!(event(&after, "drop_malformed"), 0.0);
    assert_eq!(delta("sgnn_switch_port_rx_frames_total{port=\"0\"}"), 2.0);
    assert_eq!(
        delta("sgnn_switch_port_rx_bytes_total{port=\"0\"}"),
        bytes as f64
    );
    assert_eq!(delta("sgnn_switch_port_rx_frames_total{port=\"1\"}"), 0.0);
    assert!(event(&after, "aggregated") >= 2.0, "first passes are added");
    assert!(
        after["sgnn_switch_aggregators_busy"] >= 1.0,
        "a partial block holds aggregators"
    );
    assert_eq!(
        after["sgnn_switch_aggregators"],
        before["sgnn_switch_aggregators"]
    );
    assert_eq!(after["sgnn_switch_tx_errors_total"], 0.0);

    // The JSON written at exit agrees with the last scrape.
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert!(status.success());
    let json = out
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("counters: ").map(str::to_string))
        .expect("counters at exit");
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    for name in sgnn_p4rt::schema::EVENTS {
        assert_eq!(
            json[name].as_u64().unwrap() as f64,
            event(&after, name),
            "{name}"
        );
    }
}

/// The datapath's own counters (egress faults, queue drops, deepest queue) are in the
/// metrics as well as in the JSON at exit, with the same values.
#[test]
fn datapath_counters_are_in_the_metrics() {
    let (_plan, dir, workers) = common::saved_plan_and_sockets();
    // Half the frames dropped on the way out; a slow port with a 4-frame queue.
    let (mut child, out, switch, metrics) = start(
        dir.path(),
        &workers,
        &[
            "--egress-loss",
            "0.5",
            "--port-rate",
            "20",
            "--queue-capacity",
            "4",
        ],
    );
    let m = scrape(&metrics);
    assert_eq!(m["sgnn_switch_queue_drops_total"], 0.0);
    assert_eq!(m["sgnn_switch_egress_faults_total{fault=\"dropped\"}"], 0.0);

    // 40 acks from worker 0 to worker 1, forwarded to port 1 faster than it drains.
    for _ in 0..40 {
        let mut s = Repr::new(PacketType::Ack);
        s.worker_id = 0;
        let f = common::frame_to(0, sgnn_wire::addressing::worker_ip(1), s, None);
        workers[0].send_to(&f, &switch).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let m = loop {
        let m = scrape(&metrics);
        let seen = m["sgnn_switch_egress_faults_total{fault=\"dropped\"}"]
            + m["sgnn_switch_queue_drops_total"];
        if (event(&m, "forwarded") >= 40.0 && seen > 0.0) || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The last frames' egress faults can land after `forwarded` reached 40: read again until
    // the fault counters stop moving, so the scrape is the switch's final count.
    let fault_counts = |m: &HashMap<String, f64>| {
        (
            m["sgnn_switch_egress_faults_total{fault=\"dropped\"}"],
            m["sgnn_switch_queue_drops_total"],
        )
    };
    let mut m = m;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let again = scrape(&metrics);
        if fault_counts(&again) == fault_counts(&m) || Instant::now() > deadline {
            break;
        }
        m = again;
    }
    assert_eq!(event(&m, "forwarded"), 40.0);
    let dropped = m["sgnn_switch_egress_faults_total{fault=\"dropped\"}"];
    assert!(dropped > 0.0, "half the frames are dropped: {m:?}");
    assert!(m["sgnn_switch_queue_drops_total"] > 0.0, "{m:?}");
    assert_eq!(m["sgnn_switch_max_queue_depth"], 4.0);

    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    let json = out
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("counters: ").map(str::to_string))
        .expect("counters at exit");
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["fault_dropped"].as_u64().unwrap() as f64, dropped);
    assert_eq!(json["max_queue_depth"].as_u64().unwrap(), 4);
    assert!(json["queue_drops"].as_u64().unwrap() as f64 >= m["sgnn_switch_queue_drops_total"]);
}
