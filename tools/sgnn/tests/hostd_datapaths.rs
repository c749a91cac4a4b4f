//! Four real `sgnn-hostd` processes and the real `softswitch` over the datapaths other than
//! UDP, each at 0%, 1% and 5% simulated drop, with exact sums checked as in `hostd_e2e.rs`:
//!
//! - (a) DPDK to DPDK: the switch has one `net_memif` server per worker, each daemon one
//!   memif client; socket files in a temporary directory; no kernel in the path.
//! - (b) daemons on DPDK `net_af_packet` bound to the host ends of veth pairs, each host in
//!   its own network namespace, the switch on AF_PACKET on the switch ends in another (and,
//!   once, on DPDK `net_af_packet` too).
//! - (c) daemons on the AF_PACKET datapath over the same veths, no DPDK.
//!
//! DPDK runs without hugepages (`--no-huge -m MB --no-pci --no-shconf --no-telemetry`), one
//! EAL per child process. A case that cannot run here (built without the `dpdk` feature, not
//! root for namespaces) prints `SKIPPED` with the reason. Processes are killed and namespaces
//! deleted by guards, also when an assertion fails.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sgnn_netdev::dpdk_args::{eal_args, memif_vdev};
use sgnn_netdev::{can_create_namespaces, Netns, Veth};

mod hostd_common;
use hostd_common::*;

/// Children killed (and reaped) when the guard goes, whatever happened.
struct Kids(Vec<(String, Child)>);

impl Drop for Kids {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Where the switch and the daemons run.
enum Net<'a> {
    /// This namespace (memif needs nothing else).
    Here,
    /// The switch in `switch`, worker w in `hosts[w]`.
    Namespaces {
        switch: &'a Netns,
        hosts: &'a [Netns],
    },
}

impl Net<'_> {
    fn switch_cmd(&self, bin: &Path) -> Command {
        match self {
            Net::Here => Command::new(bin),
            Net::Namespaces { switch, .. } => switch.command(bin.to_str().unwrap()),
        }
    }
    fn host_cmd(&self, w: usize, bin: &Path) -> Command {
        match self {
            Net::Here => Command::new(bin),
            Net::Namespaces { hosts, .. } => hosts[w].command(bin.to_str().unwrap()),
        }
    }
}

/// Worker w's datapath arguments: before `--`, and the EAL arguments after it.
type HostArgs<'a> = Box<dyn Fn(usize) -> (Vec<String>, Vec<String>) + 'a>;

/// A run: how the switch's ports and each daemon's datapath are given.
struct Setup<'a> {
    net: Net<'a>,
    /// Switch arguments after `--plan DIR` (port options).
    switch_ports: Vec<String>,
    /// The first line the switch prints once ready starts with this.
    switch_ready: &'static str,
    /// Datapath arguments of worker w (before and after `--`).
    host_datapath: HostArgs<'a>,
    /// `datapath.kind` in the daemons' stats.
    kind: &'static str,
}

fn run_cluster(setup: &Setup, drop: f64) {
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    let plan = make_test_plan(&plan_dir);
    let out = dir.path().join("out");
    let switch_stats = dir.path().join("switch.json");
    let mut kids = Kids(Vec::new());
    let mut switch = setup
        .net
        .switch_cmd(&softswitch_bin())
        .arg("--plan")
        .arg(&plan_dir)
        .args(["--drop-prob", &drop.to_string(), "--stats-json"])
        .arg(&switch_stats)
        .args(&setup.switch_ports)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(switch.stdout.take().unwrap()).lines();
    let switch_err = switch.stderr.take().unwrap();
    kids.0.push(("switch".into(), switch));
    let first = lines.next().map(|l| l.unwrap()).unwrap_or_default();
    if !first.starts_with(setup.switch_ready) {
        let mut err = String::new();
        use std::io::Read;
        let _ = BufReader::new(switch_err).read_to_string(&mut err);
        panic!(
            "softswitch said {first:?}, wanted {:?}:\n{err}",
            setup.switch_ready
        );
    }
    // Keep draining its output so it never blocks.
    std::thread::spawn(move || for _ in lines {});
    std::thread::spawn(move || for _ in BufReader::new(switch_err).lines() {});

    for w in 0..WORKERS {
        let stats = dir.path().join(format!("w{w}.json"));
        let (dp, eal) = (setup.host_datapath)(w);
        let child = setup
            .net
            .host_cmd(w, &hostd_bin())
            .arg("--plan")
            .arg(&plan_dir)
            .args(["--worker-id", &w.to_string()])
            .args(&dp)
            .args(PACING)
            .args(verified_run_args(&out, &stats))
            .arg("--")
            .args(&eal)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        kids.0.push((format!("worker {w}"), child));
    }
    for w in 0..WORKERS {
        let (name, k) = &mut kids.0[w + 1];
        let st = wait_deadline(k, Duration::from_secs(240));
        let err = stderr_of(k);
        assert!(
            st.is_some_and(|s| s.success()),
            "{name} ({}, drop {drop}) failed: {st:?}\n{err}",
            setup.kind
        );
        assert!(err.contains("every round matched the reference"), "{err}");
    }
    // Stop the switch: stdin closed, it writes its counters and exits.
    let (_, sw) = &mut kids.0[0];
    drop_stdin(sw);
    let st = wait_deadline(sw, Duration::from_secs(30));
    assert!(st.is_some_and(|s| s.success()), "softswitch: {st:?}");

    check_cluster_output(&plan, dir.path(), &out, drop);
    let sw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&switch_stats).unwrap()).unwrap();
    assert_eq!(sw["drop_malformed"].as_u64().unwrap(), 0);
    for w in 0..WORKERS {
        let stats: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(format!("w{w}.json"))).unwrap())
                .unwrap();
        let dp = &stats["datapath"];
        assert_eq!(dp["kind"], setup.kind);
        let (sent, received) = match setup.kind {
            "dpdk" => (dp["tx_frames"].as_u64(), dp["rx_frames"].as_u64()),
            _ => (dp["sent"].as_u64(), dp["received"].as_u64()),
        };
        let (sent, received) = (sent.unwrap(), received.unwrap());
        // The switch received (and counted) at most what left the worker, and lost nothing
        // on the way but what it dropped on purpose: with every round exact, this says the
        // frames counted on both sides are the same frames.
        let at_switch = sw["port_rx"][w.to_string()]["packets"].as_u64().unwrap();
        assert!(
            at_switch <= sent && at_switch * 100 >= sent * 95,
            "worker {w}: sent {sent}, the switch received {at_switch}"
        );
        assert!(received > 0, "worker {w} received nothing");
        if setup.kind == "dpdk" {
            assert_eq!(dp["tx_nombuf"], 0, "worker {w}: {dp}");
        }
    }
}

fn drop_stdin(c: &mut Child) {
    drop(c.stdin.take());
}

fn dpdk_built() -> bool {
    if !cfg!(feature = "dpdk") {
        sgnn_testkit::skipped(
            "a DPDK case",
            "sgnn-hostd was built without its `dpdk` feature",
            sgnn_testkit::HOW_DPDK,
        );
        return false;
    }
    true
}

// ---- (a) memif, DPDK to DPDK ----

fn memif_cluster(drop: f64) {
    if !dpdk_built() {
        return;
    }
    let socks = tempfile::tempdir().unwrap();
    let sock = |w: usize| socks.path().join(format!("sw{w}.sock"));
    let pid = std::process::id();
    let tag = (drop * 100.0) as u32;
    let switch_vdevs: Vec<String> = (0..WORKERS)
        .map(|w| memif_vdev(w, "server", &sock(w)))
        .collect();
    let mut switch_ports = vec!["--dpdk".to_string(), "--".to_string()];
    switch_ports.extend(eal_args(&format!("sgnn{pid}m{tag}s"), 256, &switch_vdevs));
    let setup = Setup {
        net: Net::Here,
        switch_ports,
        switch_ready: "serving dpdk on net_memif0 (net_memif)",
        host_datapath: Box::new(|w| {
            (
                vec!["--datapath".into(), "dpdk".into()],
                eal_args(
                    &format!("sgnn{pid}m{tag}w{w}"),
                    128,
                    &[memif_vdev(0, "client", &sock(w))],
                ),
            )
        }),
        kind: "dpdk",
    };
    run_cluster(&setup, drop);
}

#[test]
fn memif_dpdk_to_dpdk_exact_without_drops() {
    memif_cluster(0.0);
}

#[test]
fn memif_dpdk_to_dpdk_exact_at_one_percent_drop() {
    memif_cluster(0.01);
}

#[test]
fn memif_dpdk_to_dpdk_exact_at_five_percent_drop() {
    memif_cluster(0.05);
}

// ---- (b) and (c): veths between namespaces ----

/// The switch's namespace, one namespace per host, and a veth pair per worker (switch end
/// `s<w>`, host end `h<w>`, prefixed to be unique); removed when dropped.
struct VethNet {
    // Fields drop in declaration order: the veths go before their namespaces.
    _veths: Vec<Veth>,
    switch: Netns,
    hosts: Vec<Netns>,
    prefix: String,
}

impl VethNet {
    fn create(tag: &str) -> VethNet {
        let prefix = format!("sd{}{tag}", std::process::id() % 100_000);
        let switch = Netns::create(&format!("{prefix}sw")).unwrap();
        let hosts: Vec<Netns> = (0..WORKERS)
            .map(|w| Netns::create(&format!("{prefix}h{w}")).unwrap())
            .collect();
        let veths = (0..WORKERS)
            .map(|w| {
                Veth::create(
                    &format!("{prefix}s{w}"),
                    Some(&switch),
                    &format!("{prefix}h{w}"),
                    Some(&hosts[w]),
                )
                .unwrap()
            })
            .collect();
        VethNet {
            _veths: veths,
            switch,
            hosts,
            prefix,
        }
    }

    fn sw_if(&self, w: usize) -> String {
        format!("{}s{w}", self.prefix)
    }

    fn host_if(&self, w: usize) -> String {
        format!("{}h{w}", self.prefix)
    }

    fn net(&self) -> Net<'_> {
        Net::Namespaces {
            switch: &self.switch,
            hosts: &self.hosts,
        }
    }

    fn switch_af_packet(&self) -> Vec<String> {
        (0..WORKERS)
            .flat_map(|w| ["--iface".to_string(), self.sw_if(w)])
            .collect()
    }
}

fn namespaces_ok(what: &str) -> bool {
    sgnn_testkit::require(what, can_create_namespaces(), sgnn_testkit::HOW_ROOT).is_some()
}

fn af_packet_pmd_cluster(drop: f64, switch_on_dpdk: bool) {
    if !dpdk_built() || !namespaces_ok("DPDK net_af_packet over veths") {
        return;
    }
    let tag = format!(
        "{}{}",
        (drop * 100.0) as u32,
        if switch_on_dpdk { "d" } else { "" }
    );
    let vn = VethNet::create(&format!("b{tag}"));
    let pid = std::process::id();
    let (switch_ports, switch_ready) = if switch_on_dpdk {
        let vdevs: Vec<String> = (0..WORKERS)
            .map(|w| format!("net_af_packet{w},iface={}", vn.sw_if(w)))
            .collect();
        let mut a = vec!["--dpdk".to_string(), "--".to_string()];
        a.extend(eal_args(&format!("sgnn{pid}b{tag}s"), 256, &vdevs));
        (a, "serving dpdk on net_af_packet0 (net_af_packet)")
    } else {
        (vn.switch_af_packet(), "serving af_packet on")
    };
    let setup = Setup {
        net: vn.net(),
        switch_ports,
        switch_ready,
        host_datapath: Box::new(|w| {
            (
                vec!["--datapath".into(), "dpdk".into()],
                eal_args(
                    &format!("sgnn{pid}b{tag}w{w}"),
                    128,
                    &[format!("net_af_packet0,iface={}", vn.host_if(w))],
                ),
            )
        }),
        kind: "dpdk",
    };
    run_cluster(&setup, drop);
}

#[test]
fn dpdk_af_packet_on_veths_exact_without_drops() {
    af_packet_pmd_cluster(0.0, false);
}

#[test]
fn dpdk_af_packet_on_veths_exact_at_one_percent_drop() {
    af_packet_pmd_cluster(0.01, false);
}

#[test]
fn dpdk_af_packet_on_veths_exact_at_five_percent_drop() {
    af_packet_pmd_cluster(0.05, false);
}

#[test]
fn dpdk_af_packet_on_veths_with_the_switch_on_dpdk_too() {
    af_packet_pmd_cluster(0.01, true);
}

fn af_packet_datapath_cluster(drop: f64) {
    if !namespaces_ok("AF_PACKET datapath over veths") {
        return;
    }
    let vn = VethNet::create(&format!("c{}", (drop * 100.0) as u32));
    let setup = Setup {
        net: vn.net(),
        switch_ports: vn.switch_af_packet(),
        switch_ready: "serving af_packet on",
        host_datapath: Box::new(|w| {
            (
                vec![
                    "--datapath".into(),
                    "af-packet".into(),
                    "--iface".into(),
                    vn.host_if(w),
                ],
                vec![],
            )
        }),
        kind: "af-packet",
    };
    run_cluster(&setup, drop);
}

#[test]
fn af_packet_datapath_on_veths_exact_without_drops() {
    af_packet_datapath_cluster(0.0);
}

#[test]
fn af_packet_datapath_on_veths_exact_at_one_percent_drop() {
    af_packet_datapath_cluster(0.01);
}

#[test]
fn af_packet_datapath_on_veths_exact_at_five_percent_drop() {
    af_packet_datapath_cluster(0.05);
}
