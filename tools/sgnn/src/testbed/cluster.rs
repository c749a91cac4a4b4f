//! A running cluster: the switch (software switch or bmv2) on a fabric (loopback UDP, veth
//! namespaces, DPDK memif), its tables loaded from a plan, and the commands that start one
//! `sgnn-hostd` per worker on it. `sgnn testbed` runs stand-alone layers on it; `sgnn train`
//! starts the daemons with `--serve` and trains through them.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use sgnn_netdev::dpdk_args::{eal_args, memif_vdev};

use super::load::{install_plan, load_switch};
use super::procs::{binary, Supervisor};
use super::{veth, Net, SwitchKind};

/// How long [`Cluster::stop`] waits for the software switch to exit and write its counters.
const SWITCH_EXIT_WAIT: Duration = Duration::from_secs(60);

/// Where and how the cluster runs.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// Workers (one daemon each).
    pub workers: usize,
    /// The network.
    pub net: Net,
    /// The switch.
    pub switch: SwitchKind,
    /// Loss probability of every frame, each way.
    pub loss: f64,
    /// Reordering probability of frames from the switch.
    pub reorder: f64,
    /// Duplication probability of frames from the switch.
    pub duplicate: f64,
    /// Seed of the fault injection.
    pub seed: u64,
    /// Starting send rate of each daemon, Mbit/s.
    pub rate_mbps: f64,
    /// The daemons' planned pacing (`sgnn-hostd --pace`).
    pub pace: sgnn_transport::Pacing,
    /// The software switch's ports drain at this rate, Mbit/s on the wire
    /// (`softswitch --port-rate-mbps`), and the daemons' rate ceiling is it; `None`: no
    /// queues (frames leave the switch at once).
    pub port_rate_mbps: Option<f64>,
    /// The software switch marks ECN CE on frames that find this many bytes queued at their
    /// port (`softswitch --ecn-threshold-bytes`); with `port_rate_mbps`.
    pub ecn_threshold_bytes: Option<u64>,
    /// A daemon gives up after this long without progress, seconds.
    pub timeout: f64,
    /// Capture directory: the software switch writes `DIR/MODE/switch.pcapng` and each daemon
    /// `DIR/MODE/wW.pcapng` (bmv2 captures nothing).
    pub pcap: Option<PathBuf>,
    /// Metrics: the software switch on this address, worker w's daemon on its port + 1 + w.
    pub metrics: Option<std::net::SocketAddr>,
}

impl ClusterSpec {
    /// Where worker `w`'s daemon serves its metrics (`--metrics`), if at all.
    pub fn worker_metrics(&self, w: usize) -> Option<std::net::SocketAddr> {
        self.metrics.map(|mut a| {
            a.set_port(a.port() + 1 + w as u16);
            a
        })
    }
}

/// Where the switch and the workers run.
enum Fabric {
    /// Loopback UDP: every process in this namespace.
    Udp { addrs: Vec<String> },
    /// A namespace for the switch and one per worker, joined by veth pairs; AF_PACKET.
    Veth(veth::Topology),
    /// DPDK memif: socket files in this directory.
    Memif { dir: PathBuf },
}

/// The switch running with its tables loaded; daemons are started by the caller with
/// [`Cluster::daemon`].
pub struct Cluster {
    spec: ClusterSpec,
    fabric: Fabric,
    switch_index: usize,
    switch_addr: String,
    target: switch_ctl::backend::P4RuntimeTarget,
    /// The drop simulator's probability `load` set (faults injected by the switch).
    drop_prob: f64,
    prefix: String,
    hostd: PathBuf,
    out: PathBuf,
    /// `DIR/MODE` of the capture, created.
    pcap: Option<PathBuf>,
}

fn free_udp_addrs(n: usize) -> Result<Vec<String>> {
    let socks: Vec<UdpSocket> = (0..n)
        .map(|_| UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    Ok(socks
        .iter()
        .map(|s| s.local_addr().map(|a| a.to_string()))
        .collect::<Result<_, _>>()?)
}

impl Cluster {
    /// Starts the switch for `mode` (the name only labels DPDK file prefixes) and loads the
    /// plan in `plan_dir` into it; logs and the switch's counters go to `out`.
    pub fn start(
        spec: &ClusterSpec,
        sup: &Supervisor,
        plan_dir: &Path,
        mode: &str,
        out: &Path,
    ) -> Result<Cluster> {
        let workers = spec.workers;
        let hostd = binary("sgnn-hostd", "SGNN_HOSTD")?;
        let pcap = match &spec.pcap {
            Some(dir) => {
                let dir = dir.join(mode);
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                // Absolute: the switch and the daemons may run in other namespaces.
                Some(std::path::absolute(&dir)?)
            }
            None => None,
        };
        // Faults come from netem on veths where the kernel has it, else from the switch.
        let mut switch_faults = true;
        let fabric = if matches!(spec.net, Net::Veth | Net::VethDpdk)
            || spec.switch == SwitchKind::Bmv2
        {
            let t = veth::Topology::create(workers)?;
            switch_faults = !t.apply_faults(spec.loss, spec.duplicate, spec.reorder, spec.seed)?;
            if switch_faults && spec.loss + spec.duplicate + spec.reorder > 0.0 {
                eprintln!("note: this kernel has no netem; the switch injects the faults");
                if spec.switch == SwitchKind::Bmv2 && spec.duplicate + spec.reorder > 0.0 {
                    bail!("--duplicate and --reorder need netem with --switch bmv2 (bmv2 only drops); this kernel has no sch_netem");
                }
            }
            Fabric::Veth(t)
        } else if spec.net == Net::Memif {
            let dir = out.join("memif");
            std::fs::create_dir_all(&dir)?;
            Fabric::Memif { dir }
        } else {
            Fabric::Udp {
                addrs: free_udp_addrs(workers)?,
            }
        };
        let prefix = format!("sgnn-tb{}-{mode}", std::process::id());
        let sock = out.join("p4runtime.sock");
        let (switch_index, p4rt, switch_addr) = match (&fabric, spec.switch) {
            (Fabric::Veth(t), SwitchKind::Bmv2) => {
                let (i, addr) = veth::start_bmv2(sup, t, out)?;
                (i, addr, String::new())
            }
            (fabric, _) => {
                let softswitch = binary("softswitch", "SGNN_SOFTSWITCH")?;
                let mut sw = match fabric {
                    Fabric::Veth(t) => {
                        let mut c = t
                            .switch_ns
                            .command(softswitch.to_str().expect("utf-8 path"));
                        for ifname in &t.switch_ifaces {
                            c.args(["--iface", ifname]);
                        }
                        c
                    }
                    Fabric::Udp { addrs } => {
                        let mut c = Command::new(&softswitch);
                        for ad in addrs {
                            c.args(["--worker", ad]);
                        }
                        c
                    }
                    Fabric::Memif { .. } => {
                        let mut c = Command::new(&softswitch);
                        c.args(["--dpdk", "--dpdk-ports", &workers.to_string()]);
                        c
                    }
                };
                if switch_faults {
                    // No netem (loopback, or a kernel without it): the switch injects the
                    // faults on the way out; its drop simulator drops on the way in (set by
                    // load).
                    sw.args(["--egress-loss", &spec.loss.to_string()]);
                    sw.args(["--egress-duplicate", &spec.duplicate.to_string()]);
                    sw.args(["--egress-reorder", &spec.reorder.to_string()]);
                }
                sw.arg("--p4runtime")
                    .arg(format!("unix:{}", sock.display()));
                sw.arg("--stats-json").arg(out.join("switch.json"));
                sw.args(["--drop-seed", &spec.seed.to_string()]);
                if let Some(r) = spec.port_rate_mbps {
                    sw.args(["--port-rate-mbps", &r.to_string()]);
                    // Queues of a few ms at the rate, so marks come before tail drops.
                    sw.args(["--queue-capacity", "65536"]);
                }
                if let Some(t) = spec.ecn_threshold_bytes {
                    sw.args(["--ecn-threshold-bytes", &t.to_string()]);
                }
                if let Some(dir) = &pcap {
                    sw.arg("--pcap").arg(dir.join("switch.pcapng"));
                }
                if let Some(m) = spec.metrics {
                    sw.args(["--metrics", &m.to_string()]);
                }
                if let Fabric::Memif { dir } = fabric {
                    let vdevs: Vec<String> = (0..workers)
                        .map(|w| memif_vdev(w, "server", &dir.join(format!("w{w}.sock"))))
                        .collect();
                    sw.arg("--")
                        .args(eal_args(&format!("{prefix}-sw"), 256, &vdevs));
                }
                let (sw_i, sw_out) = sup.spawn("switch", sw, &out.join("switch.log"), true)?;
                let mut reader = BufReader::new(sw_out.expect("piped"));
                let mut first = String::new();
                reader
                    .read_line(&mut first)
                    .context("reading the switch's first line")?;
                let mut second = String::new();
                reader
                    .read_line(&mut second)
                    .context("reading the switch's second line")?;
                // Keep reading so the switch never writes into a closed pipe.
                std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
                let switch_addr = first
                    .trim()
                    .strip_prefix("listening on ")
                    .unwrap_or("")
                    .to_string();
                let p4rt = second
                    .trim()
                    .strip_prefix("p4runtime on ")
                    .ok_or_else(|| {
                        anyhow!(
                            "the software switch did not start: {} {}",
                            first.trim(),
                            sup.log_tail(sw_i, 5)
                        )
                    })?
                    .to_string();
                (sw_i, p4rt, switch_addr)
            }
        };
        let drop_prob = if switch_faults { spec.loss } else { 0.0 };
        let target = load_switch(
            plan_dir,
            &p4rt,
            spec.switch == SwitchKind::Bmv2,
            drop_prob,
            out,
        )?;
        Ok(Cluster {
            spec: spec.clone(),
            fabric,
            switch_index,
            switch_addr,
            target,
            drop_prob,
            prefix,
            hostd,
            out: out.to_path_buf(),
            pcap,
        })
    }

    /// The command that starts worker `w`'s daemon in `mode` on this cluster's fabric, with
    /// the plan, the rate, the timeout, `--stats-json OUT/wW.json` and, with a capture
    /// directory, `--pcap DIR/MODE/wW.pcapng`, then `extra` (before any EAL arguments, which
    /// must come last).
    pub fn daemon(&self, w: usize, mode: &str, plan_dir: &Path, extra: &[String]) -> Command {
        let hostd = &self.hostd;
        let mut c = match &self.fabric {
            Fabric::Udp { addrs } => {
                let mut c = Command::new(hostd);
                c.args(["--switch", &self.switch_addr, "--bind", &addrs[w]]);
                c
            }
            Fabric::Veth(t) if self.spec.net == Net::VethDpdk => {
                let mut c = t.worker_ns[w].command(hostd.to_str().expect("utf-8 path"));
                c.args(["--datapath", "dpdk"]);
                c
            }
            Fabric::Veth(t) => {
                let mut c = t.worker_ns[w].command(hostd.to_str().expect("utf-8 path"));
                c.args(["--datapath", "af-packet", "--iface", &t.worker_ifaces[w]]);
                c
            }
            Fabric::Memif { .. } => {
                let mut c = Command::new(hostd);
                c.args(["--datapath", "dpdk"]);
                c
            }
        };
        c.arg("--plan").arg(plan_dir);
        c.args(["--worker-id", &w.to_string()]);
        c.args(["--mode", mode]);
        match self.spec.port_rate_mbps {
            Some(port) => {
                // The port's rate is the line rate the daemon paces against, and its floor
                // the same share of it as the daemon's defaults (10 Mbit/s of 10 Gbit/s): with
                // the default floor a 10 Mbit/s port left no room to halve, and a slower one
                // was refused.
                c.args(["--rate-mbps", &self.spec.rate_mbps.min(port).to_string()]);
                c.args(["--max-rate-mbps", &port.to_string()]);
                c.args(["--min-rate-mbps", &(port / 1000.0).to_string()]);
            }
            None => {
                c.args(["--rate-mbps", &self.spec.rate_mbps.to_string()]);
            }
        }
        c.args(["--pace", self.spec.pace.name()]);
        c.args(["--timeout", &self.spec.timeout.to_string()]);
        c.arg("--stats-json")
            .arg(self.out.join(format!("w{w}.json")));
        if let Some(dir) = &self.pcap {
            c.arg("--pcap").arg(dir.join(format!("w{w}.pcapng")));
        }
        if let Some(m) = self.spec.worker_metrics(w) {
            c.args(["--metrics", &m.to_string()]);
        }
        c.args(extra);
        let prefix = &self.prefix;
        match &self.fabric {
            Fabric::Memif { dir } => {
                let vdev = memif_vdev(0, "client", &dir.join(format!("w{w}.sock")));
                c.arg("--")
                    .args(eal_args(&format!("{prefix}-w{w}"), 128, &[vdev]));
            }
            Fabric::Veth(t) if self.spec.net == Net::VethDpdk => {
                let vdev = format!("net_af_packet0,iface={}", t.worker_ifaces[w]);
                c.arg("--")
                    .args(eal_args(&format!("{prefix}-w{w}"), 128, &[vdev]));
            }
            _ => {}
        }
        c
    }

    /// What a switch restart does to its state, then what the control plane does after one:
    /// every table, group and register wiped (`switch-ctl clear`), then the plan in
    /// `plan_dir` loaded again (`switch-ctl load`), with the same drop probability.
    pub fn restart_switch(&mut self, plan_dir: &Path) -> Result<()> {
        switch_ctl::install::clear(&mut self.target)?;
        let plan = sgnn_plan::Plan::load(plan_dir)?;
        install_plan(
            &mut self.target,
            &plan,
            "the restarted switch",
            self.drop_prob,
        )
    }

    /// The switch's process index in the supervisor (bmv2 or the software switch).
    pub fn switch_process(&self) -> usize {
        self.switch_index
    }

    /// Stops the switch (the software switch writes its counters as it exits; bmv2's are read
    /// over P4Runtime), removes the fabric, and returns the switch's counters.
    pub fn stop(mut self, sup: &Supervisor) -> Result<Value> {
        let workers = self.spec.workers;
        let counters = match self.spec.switch {
            SwitchKind::Softswitch => {
                let i = self.switch_index;
                sup.close_stdin(i);
                // The switch exits within milliseconds of its stdin closing; the generous bound
                // is for a machine so loaded (CI sharing two cores with a build) that a polling
                // DPDK process is scheduled seldom. Only a stuck switch waits it out.
                let t = Instant::now();
                let mut status = sup.try_wait(i);
                while status.is_none() && t.elapsed() < SWITCH_EXIT_WAIT {
                    std::thread::sleep(Duration::from_millis(20));
                    status = sup.try_wait(i);
                }
                let p = self.out.join("switch.json");
                let Some(status) = status else {
                    sup.kill(i);
                    bail!(
                        "the software switch did not exit within {} s of its stdin closing, so \
                         it wrote no counters to {}; killed it. Its log ends:\n{}",
                        SWITCH_EXIT_WAIT.as_secs(),
                        p.display(),
                        sup.log_tail(i, 10)
                    );
                };
                let t = std::fs::read_to_string(&p).with_context(|| {
                    format!(
                        "reading {} (the software switch exited with {status}; its log \
                         ends:\n{})",
                        p.display(),
                        sup.log_tail(i, 10)
                    )
                })?;
                serde_json::from_str(&t).with_context(|| format!("parsing {}", p.display()))?
            }
            SwitchKind::Bmv2 => veth::bmv2_counters(&mut self.target, workers)?,
        };
        drop(self.fabric);
        Ok(counters)
    }
}

/// Bytes on every host-switch link, both ways, from the switch's counters.
pub fn link_bytes(switch: &Value, dir: &str, workers: usize) -> Vec<u64> {
    port_counts(switch, dir, "bytes", workers)
}

/// `field` (`bytes` or `packets`) of the switch's counter `dir` (`port_rx`, `port_tx`) on
/// each worker's port.
pub fn port_counts(switch: &Value, dir: &str, field: &str, workers: usize) -> Vec<u64> {
    (0..workers)
        .map(|p| switch[dir][p.to_string()][field].as_u64().unwrap_or(0))
        .collect()
}
