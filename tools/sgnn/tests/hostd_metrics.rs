//! `sgnn-hostd --metrics`: a real softswitch and four daemons serving training clients over
//! Unix sockets; worker 0's `/metrics` is scraped before and after a PROPAGATE while it is
//! alive, and its counters agree with the stats JSON it writes at exit.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use sgnn_graph::Features;
use sgnn_ipc::{self as ipc, Reply, Request};
use sgnn_transport::Direction;

mod hostd_common;
use hostd_common::*;

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

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

/// The samples of `/metrics` by `name{labels}` (as written).
fn scrape(addr: &str) -> HashMap<String, f64> {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    for name in [
        "sgnn_host_sent_frames",
        "sgnn_host_received_bytes",
        "sgnn_host_retransmissions",
        "sgnn_host_fetches_sent",
        "sgnn_host_fetches_answered",
        "sgnn_host_ecn_marks",
        "sgnn_host_rate_mbps",
        "sgnn_host_round",
        "sgnn_host_block",
    ] {
        assert!(body.contains(&format!("# HELP {name} ")), "{name}:\n{body}");
    }
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect(l);
            (k.to_string(), v.parse().expect(l))
        })
        .collect()
}

fn class(dir: &str, what: &str, class: &str) -> String {
    format!("sgnn_host_{dir}_{what}_total{{class=\"{class}\"}}")
}

#[test]
fn metrics_are_live_and_agree_with_the_stats_json() {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    let plan = make_test_plan(&plan_dir);
    let worker_addrs: Vec<String> = (0..WORKERS)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();
    let mut switch = Command::new(softswitch_bin())
        .arg("--plan")
        .arg(&plan_dir)
        .args(worker_addrs.iter().flat_map(|a| ["--worker", a.as_str()]))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(switch.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let switch_addr = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_string();
    std::thread::spawn(move || for _ in lines {});

    let stats = dir.path().join("w0.json");
    let socks: Vec<PathBuf> = (0..WORKERS)
        .map(|w| dir.path().join(format!("w{w}.sock")))
        .collect();
    let mut kids: Vec<Child> = (0..WORKERS)
        .map(|w| {
            let mut c = Command::new(hostd_bin());
            c.arg("--plan")
                .arg(&plan_dir)
                .args(["--worker-id", &w.to_string()])
                .args(["--switch", &switch_addr])
                .args(["--bind", &worker_addrs[w]])
                .args(PACING)
                .args(["--timeout", "60", "--serve"])
                .arg(&socks[w])
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            if w == 0 {
                c.args(["--metrics", "127.0.0.1:0", "--stats-json"])
                    .arg(&stats);
            }
            c.spawn().unwrap()
        })
        .collect();
    // Worker 0 says where its metrics are; the rest of its stderr is drained.
    let mut err = BufReader::new(kids[0].stderr.take().unwrap()).lines();
    let metrics = loop {
        let line = err.next().expect("worker 0 ended").unwrap();
        if let Some(a) = line.strip_prefix("metrics on http://") {
            break a.strip_suffix("/metrics").expect(&line).to_string();
        }
    };
    let stderr0 = std::thread::spawn(move || err.map_while(Result::ok).collect::<Vec<_>>());
    assert_eq!(get(&metrics, "/other").0, 404);
    assert_eq!(get(&metrics, "/metrics?x=1").0, 200);

    let n = plan.graph.num_vertices();
    let dim = 40;
    let x = Arc::new(Features::random(n, dim, 11).data);
    // Every client says HELLO, waits; PROPAGATEs, waits; CLOSEs.
    let hello = Arc::new(Barrier::new(WORKERS + 1));
    let summed = Arc::new(Barrier::new(WORKERS + 1));
    let close = Arc::new(Barrier::new(WORKERS + 1));
    let clients: Vec<_> = socks
        .iter()
        .cloned()
        .map(|sock| {
            let (x, hello, summed, close) =
                (x.clone(), hello.clone(), summed.clone(), close.clone());
            std::thread::spawn(move || {
                let t = Instant::now();
                let s = loop {
                    match UnixStream::connect(&sock) {
                        Ok(s) => break s,
                        Err(_) if t.elapsed() < Duration::from_secs(60) => {
                            std::thread::sleep(Duration::from_millis(20))
                        }
                        Err(e) => panic!("{}: {e}", sock.display()),
                    }
                };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                ipc::write_request(&mut w, &Request::Hello).unwrap();
                let Some(Reply::Info { vertices, .. }) = ipc::read_reply(&mut r).unwrap() else {
                    panic!("expected INFO")
                };
                hello.wait();
                let values: Vec<f32> = vertices
                    .iter()
                    .flat_map(|&v| x[v as usize * dim..(v as usize + 1) * dim].to_vec())
                    .collect();
                ipc::write_request(
                    &mut w,
                    &Request::Propagate {
                        layer: 0,
                        direction: Direction::Forward,
                        rows: vertices.len() as u32,
                        dim: dim as u32,
                        values,
                    },
                )
                .unwrap();
                let reply = ipc::read_reply(&mut r).unwrap();
                assert!(matches!(reply, Some(Reply::Sums { .. })), "{reply:?}");
                summed.wait();
                close.wait();
                ipc::write_request(&mut w, &Request::Close).unwrap();
                assert_eq!(ipc::read_reply(&mut r).unwrap(), Some(Reply::Bye));
            })
        })
        .collect();

    hello.wait();
    // Serving, after the probe: control frames went out, no data yet.
    let before = scrape(&metrics);
    assert!(before[&class("sent", "frames", "control")] >= 1.0);
    assert_eq!(before[&class("sent", "frames", "data")], 0.0);
    assert_eq!(before["sgnn_host_round"], 0.0);
    assert_eq!(before["sgnn_host_rounds_total"], 0.0);
    assert!(before["sgnn_host_rate_mbps"] > 0.0);

    summed.wait();
    // Right after the round, the daemon still alive and serving.
    let after = scrape(&metrics);
    assert!(after[&class("sent", "frames", "data")] > 0.0);
    assert!(after[&class("sent", "bytes", "data")] > after[&class("sent", "frames", "data")]);
    assert!(after[&class("received", "frames", "result")] > 0.0);
    assert_eq!(after["sgnn_host_round"], 1.0, "the next round is 1");
    assert_eq!(after["sgnn_host_rounds_total"], 1.0);
    assert_eq!(after["sgnn_host_block"], -1.0, "no block between rounds");
    assert!(after["sgnn_host_rate_mbps"] > 0.0);
    for (k, v) in &before {
        if k.ends_with("_total") || k.contains("_total{") {
            assert!(after[k] >= *v, "{k} went back: {v} -> {}", after[k]);
        }
    }
    close.wait();
    for c in clients {
        c.join().unwrap();
    }
    for (w, k) in kids.iter_mut().enumerate() {
        let st = wait_deadline(k, Duration::from_secs(60));
        assert!(st.is_some_and(|s| s.success()), "worker {w} failed: {st:?}");
    }
    let err0 = stderr0.join().unwrap();
    drop(switch.stdin.take());
    let _ = wait_deadline(&mut switch, Duration::from_secs(20));

    // Every counter scraped is at most what the JSON says at exit; the data sent (which ends
    // with the round) is equal.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let st = &json["stats"];
    for dir in ["sent", "received"] {
        for c in ["control", "result", "recovery", "data", "background"] {
            for (what, field) in [
                ("frames", "packets"),
                ("bytes", "bytes"),
                ("wire_bytes", "wire_bytes"),
            ] {
                let scraped = after[&class(dir, what, c)];
                let at_exit = st[dir][c][field].as_u64().unwrap() as f64;
                assert!(
                    scraped <= at_exit,
                    "{dir} {c} {what}: {scraped} > {at_exit}"
                );
                if dir == "sent" && c == "data" {
                    assert_eq!(scraped, at_exit, "data sent ends with the round");
                }
            }
        }
    }
    for (k, v) in st.as_object().unwrap() {
        if let Some(v) = v.as_u64() {
            let scraped = after[&format!("sgnn_host_{k}_total")];
            assert!(scraped <= v as f64, "{k}: {scraped} > {v}\n{err0:?}");
        }
    }
    assert!(json["sent_total"]["packets"].as_u64().unwrap() > 0);
    assert!(json["received_total"]["packets"].as_u64().unwrap() > 0);
}
