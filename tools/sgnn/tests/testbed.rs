//! `sgnn testbed` end to end: the software switch and four real `sgnn-hostd` processes over
//! loopback UDP, every sum checked against the single-process reference, under loss,
//! duplication and reordering; a killed worker ends the run with FAILED, not a hang.

use std::process::Command;

fn testbed(extra: &[&str]) -> (bool, String, String) {
    let (ok, last, err, _) = testbed_report(extra);
    (ok, last, err)
}

/// `sgnn testbed` on the tests' graph (R-MAT 2^9, 4 workers, 48 features, 32 KB: several
/// blocks), a 5 s stall timeout, writing into `out`, then `extra`.
fn testbed_command(out: &std::path::Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sgnn"));
    c.args([
        "testbed",
        "--graph",
        "rmat:scale=9,edge_factor=8,seed=3",
        "--workers",
        "4",
        "--feature-dim",
        "48",
        "--switch-mem",
        "32KB",
        "--timeout",
        "5",
        "--out",
    ])
    .arg(out)
    .args(extra);
    c
}

/// Runs the testbed; also returns report.json when it succeeded.
fn testbed_report(extra: &[&str]) -> (bool, String, String, serde_json::Value) {
    let out = tempfile::tempdir().unwrap();
    let o = testbed_command(out.path(), extra).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let last = stdout.lines().last().unwrap_or("").to_string();
    let mut report = serde_json::Value::Null;
    if o.status.success() {
        let text = std::fs::read_to_string(out.path().join("report.json")).unwrap();
        report = serde_json::from_str(&text).unwrap();
        assert!(report["values_checked"].as_u64().unwrap() > 0);
        assert!(
            report["blocks"].as_u64().unwrap() > 1,
            "the plan has several blocks"
        );
    }
    (o.status.success(), last, stderr, report)
}

#[test]
fn exact_sums_without_loss_and_with_1_and_5_percent_loss() {
    for loss in ["0", "0.01", "0.05"] {
        let (ok, last, err) = testbed(&["--layers", "1", "--loss", loss]);
        assert!(
            ok && last.starts_with("verified: 4 workers x 2 rounds exact"),
            "loss {loss}: {last}\n{err}"
        );
        assert!(last.contains("host-based"), "{last}");
    }
}

#[test]
fn every_delivery_runs_exact_beside_the_paper_plan_under_loss() {
    for loss in ["0", "0.03"] {
        let (ok, last, err, report) = testbed_report(&[
            "--layers",
            "1",
            "--loss",
            loss,
            "--aggregate",
            "paper,partials,multicast,auto",
        ]);
        assert!(
            ok && last.starts_with("verified: 4 workers x 2 rounds exact"),
            "loss {loss}: {last}\n{err}"
        );
        for m in ["partials", "multicast", "auto"] {
            assert!(last.contains(&format!("; switchgnn-{m} ")), "{last}");
        }
        assert!(last.contains("; host-based "), "{last}");
        let runs = report["runs"].as_array().unwrap();
        let modes: Vec<&str> = runs.iter().map(|r| r["mode"].as_str().unwrap()).collect();
        assert_eq!(
            modes,
            [
                "switchgnn",
                "switchgnn-partials",
                "switchgnn-multicast",
                "switchgnn-auto",
                "host-based"
            ]
        );
        let sw = |i: usize, k: &str| runs[i]["switch"][k].as_u64().unwrap();
        assert!(sw(0, "recirculated") > 0);
        // One pass per partial; multicast replicates in the arrival pass: neither recirculates.
        assert_eq!(sw(1, "recirculated"), 0, "{}", runs[1]["switch"]);
        assert_eq!(sw(2, "recirculated"), 0, "{}", runs[2]["switch"]);
        assert_eq!(sw(2, "aggregated"), 0, "multicast sums on the hosts");
        assert!(sw(2, "delivered") > 0 && sw(1, "aggregated") > 0);
    }
    let (ok, last, _) = testbed(&["--aggregate", "partials,partials"]);
    assert!(
        !ok && last.contains("--aggregate lists partials twice"),
        "{last}"
    );
}

/// A partials plan recycled at slack 0 (3 blocks become 1: 339 destinations take turns on
/// 125 aggregator rows, up to 43 generations each) on the real software switch: the loopback
/// daemons drift far from the planner's schedule, so contributions meet recycled aggregators
/// (reclaimed, or bypassed late) and the hosts fetch what the switch could not sum; every
/// value is still exact, with and without loss.
#[test]
fn recycled_aggregators_keep_every_sum_exact() {
    for loss in ["0", "0.03"] {
        let (ok, last, err, report) = testbed_report(&[
            "--layers",
            "1",
            "--loss",
            loss,
            "--aggregate",
            "paper,partials",
            "--recycle",
            "--recycle-slack",
            "0",
        ]);
        assert!(
            ok && last.starts_with("verified: 4 workers x 2 rounds exact"),
            "loss {loss}: {last}\n{err}"
        );
        let runs = report["runs"].as_array().unwrap();
        assert_eq!(runs[1]["mode"], "switchgnn-partials");
        assert_eq!(runs[1]["blocks"], 1, "recycled into one block: {}", runs[1]);
        let sw = |k: &str| runs[1]["switch"][k].as_u64().unwrap();
        assert!(sw("aggregated") > 0);
        eprintln!(
            "loss {loss}: recycled partials: {} reclaimed, {} bypassed late, {} results",
            sw("reclaimed"),
            sw("bypassed_late"),
            sw("results")
        );
    }
}

/// The reference row: a plain loopback TCP all-to-all, no switch, moving exactly what
/// host-based's daemons sent as first transmissions (their own count, `sent.data.bytes`),
/// pair by pair as the plan says, and reported in the table, report.json and the last line.
/// Its time is measured, not checked.
#[test]
fn the_tcp_all_to_all_row_moves_host_based_payload_bytes() {
    let out = tempfile::tempdir().unwrap();
    let o = testbed_command(out.path(), &["--layers", "1", "--aggregate", "auto"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let last = stdout.lines().last().unwrap_or("").to_string();
    assert!(
        o.status.success() && last.starts_with("verified: 4 workers x 2 rounds exact"),
        "{last}\n{stderr}"
    );
    assert!(last.contains("; tcp-all-to-all "), "{last}");
    assert!(
        stderr.lines().any(|l| l.starts_with("tcp-all-to-all ")),
        "no table row: {stderr}"
    );
    let text = std::fs::read_to_string(out.path().join("report.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let tcp = &report["tcp_all_to_all"];
    assert_eq!(tcp["mode"], "tcp-all-to-all", "{report}");
    assert_eq!(tcp["round_seconds"].as_array().unwrap().len(), 2);
    assert!(tcp["ms_per_layer"].as_f64().unwrap() > 0.0);
    // The runs keep their list: the reference is beside it, not in it.
    let modes: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["switchgnn-auto", "host-based"]);
    let hb = &report["runs"][1];
    let stats = |w: usize| -> serde_json::Value {
        let p = out.path().join(format!("host-based/w{w}.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let sent: Vec<u64> = (0..4)
        .map(|w| stats(w)["stats"]["sent"]["data"]["bytes"].as_u64().unwrap())
        .collect();
    assert!(sent.iter().all(|&b| b > 0), "{sent:?}");
    assert_eq!(
        tcp["payload_bytes"].as_u64().unwrap(),
        sent.iter().sum::<u64>(),
        "{tcp}"
    );
    let u64s = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    // Worker by worker: what it sent its peers over both rounds is what its daemon sent, and
    // no more than the switch counted from it (which adds the protocol's control frames).
    let pairs = tcp["pair_bytes_per_round"].as_array().unwrap();
    let hb_up = u64s(&hb["link_bytes_up"]);
    for w in 0..4 {
        let row = u64s(&pairs[w]);
        assert_eq!(row[w], 0, "a worker sends itself nothing");
        assert_eq!(2 * row.iter().sum::<u64>(), sent[w], "worker {w}");
        assert_eq!(u64s(&tcp["link_bytes_up"])[w], sent[w]);
        assert!(
            sent[w] <= hb_up[w],
            "worker {w}: {} > {}",
            sent[w],
            hb_up[w]
        );
    }
    assert_eq!(
        tcp["link_bytes"].as_u64().unwrap(),
        2 * sent.iter().sum::<u64>()
    );
}

#[test]
fn rounds_report_memory_and_no_busy_aggregator_at_the_end() {
    let (ok, last, err, report) = testbed_report(&[
        "--rounds",
        "6",
        "--loss",
        "0.01",
        "--aggregate",
        "paper,auto",
        "--no-baseline",
    ]);
    assert!(
        ok && last.starts_with("verified: 4 workers x 6 rounds exact"),
        "{last}\n{err}"
    );
    assert!(err.contains("memory MiB"), "{err}");
    for run in report["runs"].as_array().unwrap() {
        let rss = run["rss_kib"].as_array().unwrap();
        let names: Vec<&str> = rss.iter().map(|r| r["process"].as_str().unwrap()).collect();
        assert_eq!(names, ["switch", "w0", "w1", "w2", "w3"]);
        for r in rss {
            let (l, m) = (r["last"].as_u64().unwrap(), r["max"].as_u64().unwrap());
            assert!(l > 0 && m >= l, "{r}");
        }
        assert_eq!(run["switch"]["busy_aggregators"], 0, "{}", run["switch"]);
        assert!(run["switch"]["stale_aggregators"].is_u64());
        // Every process's CPU time in the exchange, and the frames it handled in it.
        let cpu = run["cpu"].as_array().unwrap();
        let names: Vec<&str> = cpu.iter().map(|r| r["process"].as_str().unwrap()).collect();
        assert_eq!(names, ["switch", "w0", "w1", "w2", "w3"]);
        for c in cpu {
            let (s, f) = (
                c["exchange_cpu_seconds"].as_f64().unwrap(),
                c["frames"].as_u64().unwrap(),
            );
            assert!(s > 0.0 && s < 60.0 && f > 100, "{c}");
        }
        let total = run["switch"]["cpu_seconds"].as_f64().unwrap();
        assert!(total >= cpu[0]["exchange_cpu_seconds"].as_f64().unwrap());
    }
    assert!(
        err.contains("exchange CPU seconds (frames in and out per CPU-second): switch "),
        "{err}"
    );
    let (ok, last, _) = testbed(&["--rounds", "5"]);
    assert!(
        !ok && last.contains("--rounds 5: must be a positive even number"),
        "{last}"
    );
}

#[test]
fn exact_sums_under_duplication_and_reordering() {
    let (ok, last, err) = testbed(&[
        "--layers",
        "1",
        "--duplicate",
        "0.05",
        "--reorder",
        "0.05",
        "--no-baseline",
    ]);
    assert!(ok && last.starts_with("verified:"), "{last}\n{err}");
}

#[test]
fn a_killed_worker_fails_the_run_clearly() {
    // Enough rounds that the run is still going when the kill strikes (30 ms after the
    // start), on a machine fast enough to do two layers in less: it then ends in the failure,
    // within the survivors' liveness timeout, whatever the machine.
    let (ok, last, err) = testbed(&["--kill-worker", "2", "--rounds", "400", "--no-baseline"]);
    assert!(!ok, "{last}\n{err}");
    assert!(last.starts_with("FAILED: switchgnn:"), "{last}");
    assert!(last.contains("worker 2 was killed"), "{last}");
    // The survivors said what went wrong instead of hanging.
    assert!(last.contains("worker 0 exited"), "{last}");
}

/// A switch that restarts mid-run (tables and registers wiped, the plan loaded again) lost
/// the partial sums it held: the workers notice through their health probes and the run ends
/// with their message, not a hang until the stall timeout.
#[test]
fn a_switch_restarted_mid_run_fails_the_run_clearly() {
    let (ok, last, err) = testbed(&[
        "--restart-switch-after",
        "300",
        "--layers",
        "500",
        "--no-baseline",
        "--aggregate",
        "paper",
    ]);
    assert!(!ok, "{last}\n{err}");
    assert!(err.contains("restarted the switch"), "{err}");
    assert!(
        last.starts_with("FAILED: switchgnn: the switch was restarted by --restart-switch-after"),
        "{last}"
    );
    assert!(
        last.contains("restarted or was reloaded mid-run") || last.contains("answered none of"),
        "the workers say what happened: {last}"
    );
}

/// One HTTP GET of `/metrics` on `addr`; None while nothing listens there.
fn scrape(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// The value of the sample `key` (name and labels as written) in an exposition.
fn sample(body: &str, key: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
}

/// `sgnn testbed --metrics HOST:PORT`: the switch and every daemon serve live metrics while
/// the run goes on, scraped here mid-run; the run still ends exact.
#[test]
fn testbed_metrics_are_scraped_mid_run() {
    let base = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = tempfile::tempdir().unwrap();
    let metrics = format!("127.0.0.1:{base}");
    let child = testbed_command(
        out.path(),
        &[
            "--layers",
            "100",
            "--aggregate",
            "paper",
            "--no-baseline",
            "--metrics",
            &metrics,
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let switch = &metrics;
    let worker3 = format!("127.0.0.1:{}", base + 4);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let (mut sw_data, mut w3_sent) = (0.0, 0.0);
    while std::time::Instant::now() < deadline && (sw_data == 0.0 || w3_sent == 0.0) {
        if let Some(b) = scrape(switch) {
            sw_data = sample(&b, "sgnn_switch_events_total{event=\"data\"}").unwrap_or(0.0);
        }
        if let Some(b) = scrape(&worker3) {
            w3_sent = sample(&b, "sgnn_host_sent_frames_total{class=\"data\"}").unwrap_or(0.0);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        sw_data > 0.0,
        "the switch's metrics showed Data frames mid-run"
    );
    assert!(
        w3_sent > 0.0,
        "worker 3's metrics showed frames sent mid-run"
    );
    assert!(
        stderr.contains(&format!(
            "metrics on http://127.0.0.1:{base}/metrics (switch)"
        )),
        "{stderr}"
    );
}

/// `--cores 2`: each worker split over two daemons by feature columns (docs/host.md, "One
/// worker on several cores"). Every sum is still the unsplit job's (the testbed checks them
/// against the reference of the original features), lossless and under loss, and the links
/// carry the unsplit run's bytes plus only the second core's block synchronisation.
#[test]
fn a_worker_split_over_two_cores_is_exact_and_moves_the_same_bytes() {
    let bytes = |report: &serde_json::Value| -> Vec<u64> {
        report["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                ["link_bytes_up", "link_bytes_down"]
                    .iter()
                    .flat_map(|k| r[k].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()))
                    .sum()
            })
            .collect()
    };
    let (ok, last, err, one) = testbed_report(&["--layers", "1"]);
    assert!(ok, "{last}\n{err}");
    for loss in ["0", "0.02"] {
        let (ok, last, err, two) =
            testbed_report(&["--layers", "1", "--cores", "2", "--loss", loss]);
        assert!(
            ok && last.starts_with("verified: 8 workers (4 x 2 cores) x 2 rounds exact"),
            "loss {loss}: {last}\n{err}"
        );
        assert_eq!(two["cores"], 2);
        assert_eq!(two["workers"], 4);
        assert_eq!(two["feature_dim"], 48);
        if loss == "0" {
            for (mode, (a, b)) in bytes(&one).iter().zip(bytes(&two)).enumerate() {
                assert!(
                    (b as f64 - *a as f64).abs() < *a as f64 * 0.03,
                    "run {mode}: {b} bytes on links split over 2 cores, {a} on one"
                );
            }
        }
    }
    // A split that would cut an aggregator in two is refused with the fix.
    let (ok, last, _) = testbed(&["--cores", "4"]);
    assert!(!ok);
    assert!(last.contains("--cores 4 must divide"), "{last}");
}

#[test]
fn bad_options_fail_with_what_to_fix() {
    let (ok, last, _) = testbed(&["--loss", "1.5"]);
    assert!(!ok);
    assert_eq!(last, "FAILED: --loss is a probability in [0, 1), got 1.5");
}

#[test]
fn exact_sums_over_veths_in_namespaces_with_netem_loss() {
    if sgnn_testkit::require(
        "testbed --net veth",
        sgnn_netdev::can_create_namespaces(),
        sgnn_testkit::HOW_ROOT,
    )
    .is_none()
    {
        return;
    }
    let (ok, last, err, report) =
        testbed_report(&["--net", "veth", "--layers", "1", "--loss", "0.02"]);
    // The loss happened (netem, or the switch where the kernel has no netem) and was repaired.
    let repairs = report["runs"][0]["fetches"].as_u64().unwrap_or(0)
        + report["runs"][0]["retransmissions"].as_u64().unwrap_or(0);
    assert!(repairs > 0, "{report}");
    assert!(
        ok && last.starts_with("verified: 4 workers x 2 rounds exact"),
        "{last}\n{err}"
    );
}

#[test]
fn exact_sums_with_bmv2_as_the_switch() {
    // Found as `sgnn testbed --switch bmv2` finds them (sgnn_netdev::p4tools).
    let missing = [
        sgnn_netdev::p4tools::P4C,
        sgnn_netdev::p4tools::SIMPLE_SWITCH_GRPC,
    ]
    .into_iter()
    .find(|t| t.find().is_err())
    .map(|t| t.name);
    if let Some(t) = missing {
        sgnn_testkit::skipped(
            "testbed --switch bmv2",
            format_args!("`{t}` is not installed"),
            sgnn_testkit::HOW_BMV2,
        );
        return;
    }
    if sgnn_testkit::require(
        "testbed --switch bmv2",
        sgnn_netdev::can_create_namespaces(),
        sgnn_testkit::HOW_ROOT,
    )
    .is_none()
    {
        return;
    }
    // bmv2 forwards a few thousand frames a second: slow senders, patient workers.
    let (ok, last, err) = testbed(&[
        "--switch",
        "bmv2",
        "--layers",
        "1",
        "--rate-mbps",
        "10",
        "--no-baseline",
    ]);
    assert!(
        ok && last.starts_with("verified: 4 workers x 2 rounds exact"),
        "{last}\n{err}"
    );
}

#[test]
fn exact_sums_over_every_datapath_at_0_1_and_5_percent_loss() {
    let root = sgnn_netdev::can_create_namespaces();
    for net in ["memif", "veth", "veth-dpdk"] {
        if net != "memif" {
            if let Err(e) = &root {
                sgnn_testkit::skipped(&format!("testbed --net {net}"), e, sgnn_testkit::HOW_ROOT);
                continue;
            }
        }
        for loss in ["0", "0.01", "0.05"] {
            let (ok, last, err) = testbed(&[
                "--net",
                net,
                "--layers",
                "1",
                "--loss",
                loss,
                "--no-baseline",
            ]);
            if !ok && last.contains("built without DPDK") {
                sgnn_testkit::skipped(
                    &format!("testbed --net {net}"),
                    "sgnn was built without its `dpdk` feature",
                    sgnn_testkit::HOW_DPDK,
                );
                break;
            }
            assert!(
                ok && last.starts_with("verified: 4 workers x 2 rounds exact"),
                "--net {net} --loss {loss}: {last}\n{err}"
            );
        }
    }
}

/// Built without the `dpdk` feature, `--net memif` and `--net veth-dpdk` fail at once with one
/// `FAILED:` line saying how to rebuild and which packages that needs, and exit status 2.
#[cfg(not(feature = "dpdk"))]
#[test]
fn dpdk_networks_without_the_feature_say_what_to_rebuild() {
    for net in ["memif", "veth-dpdk"] {
        let o = Command::new(env!("CARGO_BIN_EXE_sgnn"))
            .args(["testbed", "--net", net])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(2), "{out}");
        let last = out.lines().last().unwrap_or("");
        assert!(last.starts_with("FAILED: "), "{out}");
        for needle in [
            format!("--net {net}"),
            "--features dpdk".to_string(),
            "libdpdk-dev".to_string(),
        ] {
            assert!(last.contains(&needle), "{needle}: {out}");
        }
    }
}

/// `--pcap DIR`: the software switch and every daemon capture each mode's frames in
/// DIR/MODE/{switch,wW}.pcapng, valid pcapng files that hold what the switch's and the
/// workers' counters say went through, every frame a SwitchGNN frame.
#[test]
fn captures_hold_every_frame_of_both_modes() {
    use sgnn_netdev::capture::{read, Direction};
    const WORKERS: u32 = 4;
    /// The kernel's UDP and backlog drop counters of this network namespace: while they stay
    /// put, no datagram on loopback was lost (other processes' losses only make them move).
    fn kernel_drops() -> Vec<u64> {
        let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
        let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
        let (names, values) = (udp.next().unwrap_or(""), udp.next().unwrap_or(""));
        let mut v: Vec<u64> = names
            .split_whitespace()
            .zip(values.split_whitespace())
            .filter(|(n, _)| matches!(*n, "InErrors" | "RcvbufErrors" | "SndbufErrors"))
            .map(|(_, v)| v.parse().unwrap_or(u64::MAX))
            .collect();
        let softnet = std::fs::read_to_string("/proc/net/softnet_stat").unwrap_or_default();
        v.extend(softnet.lines().map(|l| {
            let dropped = l.split_whitespace().nth(1).unwrap_or("ffffffff");
            u64::from_str_radix(dropped, 16).unwrap_or(u64::MAX)
        }));
        v
    }
    /// Whether `a` is `b` with frames left out.
    fn is_subsequence(a: &[Vec<u8>], b: &[Vec<u8>]) -> bool {
        let mut b = b.iter();
        a.iter().all(|x| b.any(|y| y == x))
    }
    let out = tempfile::tempdir().unwrap();
    let pcap = out.path().join("captures");
    let before = kernel_drops();
    let o = Command::new(env!("CARGO_BIN_EXE_sgnn"))
        .args([
            "testbed",
            "--graph",
            "rmat:scale=9,edge_factor=8,seed=3",
            "--workers",
            &WORKERS.to_string(),
            "--feature-dim",
            "48",
            "--switch-mem",
            "32KB",
            "--timeout",
            "5",
            "--layers",
            "1",
            "--out",
        ])
        .arg(out.path())
        .arg("--pcap")
        .arg(&pcap)
        .output()
        .unwrap();
    let no_kernel_drops = kernel_drops() == before;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        o.status.success() && last.starts_with("verified:"),
        "{last}\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("captures in {}", pcap.display()))
            && stderr.contains("wireshark -X lua_script:tools/wireshark/sgnn.lua FILE"),
        "{stderr}"
    );
    let json = |p: std::path::PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    };
    for mode in ["switchgnn", "host-based"] {
        let sw = read(&pcap.join(mode).join("switch.pcapng")).unwrap();
        let sw_json = json(out.path().join(mode).join("switch.json"));
        let ports: Vec<String> = (0..WORKERS).map(|p| format!("port{p}")).collect();
        assert_eq!(sw.interfaces[..WORKERS as usize], ports[..], "{mode}");
        assert_eq!(sw.interfaces[WORKERS as usize], "unknown", "{mode}");
        assert_eq!(
            sw_json["datapath"]["pcap_frames"].as_u64(),
            Some(sw.frames.len() as u64),
            "{mode}"
        );
        assert_eq!(sw_json["datapath"]["pcap_missed"].as_u64(), Some(0));
        assert_eq!(sw.count(WORKERS, Direction::Inbound), 0, "no strangers");
        for w in 0..WORKERS {
            let wc = read(&pcap.join(mode).join(format!("w{w}.pcapng"))).unwrap();
            let w_json = json(out.path().join(mode).join(format!("w{w}.json")));
            assert_eq!(wc.interfaces, [format!("worker{w}")], "{mode}");
            let dp = &w_json["datapath"];
            assert_eq!(dp["pcap_frames"].as_u64(), Some(wc.frames.len() as u64));
            assert_eq!(dp["pcap_missed"].as_u64(), Some(0));
            for f in wc.frames.iter().chain(&sw.frames) {
                sgnn_wire::FrameRepr::parse(&f.data).expect("a SwitchGNN frame");
            }
            let frames =
                |c: &sgnn_netdev::capture::Capture, i: u32, d: Direction| -> Vec<Vec<u8>> {
                    c.frames
                        .iter()
                        .filter(|f| f.interface == i && f.direction == Some(d))
                        .map(|f| f.data.clone())
                        .collect()
                };
            let up = frames(&wc, 0, Direction::Outbound);
            let down = frames(&wc, 0, Direction::Inbound);
            let sw_in = frames(&sw, w, Direction::Inbound);
            let sw_out = frames(&sw, w, Direction::Outbound);
            let counts = format!(
                "{mode} worker {w}: sent {} received {}, switch port in {} out {}",
                up.len(),
                down.len(),
                sw_in.len(),
                sw_out.len()
            );
            assert!(
                !up.is_empty() && !down.is_empty() && !sw_in.is_empty() && !sw_out.is_empty(),
                "{counts}"
            );
            // The switch captures what its pipeline counts.
            let rx = sw_json["port_rx"][w.to_string()]["packets"].as_u64();
            assert_eq!(rx, Some(sw_in.len() as u64), "{counts}");
            // Equal counts do not hold exactly: a daemon captures every frame it hands to its
            // datapath, also those its socket refused (`send_errors`); loopback UDP drops a
            // datagram when a socket buffer or the backlog overflows (the kernel counts it);
            // and a worker exits right after its last frames, which the switch, stopped once
            // every worker has exited, may not have read yet on a loaded machine. What holds:
            // one socket to another on loopback keeps the order, so what the switch received
            // on port w is what worker w sent, in order, with frames left out; and without
            // refused sends or kernel drops, only at the end.
            let refused = dp["send_errors"].as_u64().unwrap_or(0);
            if no_kernel_drops && refused == 0 {
                assert!(up.starts_with(&sw_in), "{counts}: not a prefix");
            } else {
                assert!(is_subsequence(&sw_in, &up), "{counts}: not a subsequence");
            }
            // The other way likewise, the switch sending after a worker stopped reading.
            assert!(
                is_subsequence(&down, &sw_out),
                "{counts}: not a subsequence"
            );
        }
    }
}

/// `sgnn train` over DPDK memif (the daemons and the switch on DPDK, no kernel in the path):
/// both distributed modes follow the single-process loss within 1e-4 relative. Runs in the
/// `--features dpdk` build (CI's full-feature pass); says SKIPPED otherwise.
#[test]
fn training_over_memif_follows_the_single_process_loss() {
    if !cfg!(feature = "dpdk") {
        sgnn_testkit::skipped(
            "train --net memif",
            "sgnn was built without its `dpdk` feature",
            sgnn_testkit::HOW_DPDK,
        );
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sgnn"))
        .args([
            "train",
            "--graph",
            "sbm:n=600,classes=4,seed=2",
            "--epochs",
            "4",
            "--dropout",
            "0",
            "--net",
            "memif",
            "--mode",
            "switchgnn,host-based,single",
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("train.json")).unwrap())
            .unwrap();
    let loss = |m: &str| -> Vec<f64> {
        j["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["mode"] == m)
            .unwrap()["loss"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let single = loss("single");
    for m in ["switchgnn", "host-based"] {
        for (e, (a, b)) in loss(m).iter().zip(&single).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * b.abs(),
                "{m} epoch {}: {a} vs {b}",
                e + 1
            );
        }
    }
}

/// `--restart-switch-after` later than the run: the run passes, and a warning says the switch
/// was never restarted (it used to say nothing, as if the restart had been survived). The
/// `--out` directory holds a stale lock of a process that is gone: replaced, and removed at
/// the end.
#[test]
fn a_restart_after_the_run_is_a_warning_and_a_stale_lock_is_replaced() {
    let out = tempfile::tempdir().unwrap();
    let mut dead = Command::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait().unwrap();
    let lock = out.path().join(".sgnn-testbed.lock");
    std::fs::write(&lock, format!("{pid}\n")).unwrap();
    let o = testbed_command(
        out.path(),
        &[
            "--restart-switch-after",
            "600000",
            "--layers",
            "1",
            "--no-baseline",
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("warning: switchgnn: the switch was not restarted: the run finished")
            && stderr.contains("before --restart-switch-after 600000 ms"),
        "{stderr}"
    );
    assert!(!lock.exists(), "the lock is removed at the end");
}

/// A second testbed on an `--out` another one holds (its lock names a live process: this
/// test's) is refused at once, naming the directory.
#[test]
fn a_second_testbed_on_the_same_out_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let lock = out.path().join(".sgnn-testbed.lock");
    std::fs::write(&lock, format!("{}\n", std::process::id())).unwrap();
    let o = testbed_command(out.path(), &["--layers", "1", "--no-baseline"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let last = stdout.lines().last().unwrap_or("");
    assert!(!o.status.success(), "{stdout}");
    assert!(
        last.starts_with(&format!(
            "FAILED: --out {} is in use by another sgnn testbed (pid {}",
            out.path().display(),
            std::process::id()
        )),
        "{last}"
    );
    assert!(
        !out.path().join("plan").exists(),
        "nothing was written into the other testbed's directory"
    );
    assert!(lock.exists(), "the other testbed's lock is left alone");
}
