//! The testbed on namespaces and veths: the switch in one namespace, each worker in its own,
//! one veth pair per worker; faults by `tc netem` on both ends of every link; bmv2 as the
//! switch where it is installed.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use sgnn_netdev::p4tools::{self, P4Tool, ToolMissing, P4C, SIMPLE_SWITCH_GRPC};
use sgnn_netdev::{can_create_namespaces, Netns, Veth};
use softswitch::PortCount;
use switch_ctl::Target;

use super::procs::Supervisor;

/// The namespaces and links; removed when dropped.
pub struct Topology {
    /// The switch's namespace.
    pub switch_ns: Netns,
    /// Worker `w`'s namespace.
    pub worker_ns: Vec<Netns>,
    /// The switch's end of worker `w`'s link (its port `w`).
    pub switch_ifaces: Vec<String>,
    /// Worker `w`'s end.
    pub worker_ifaces: Vec<String>,
    _veths: Vec<Veth>,
}

impl Topology {
    /// Builds the namespaces and veth pairs for `workers` workers.
    pub fn create(workers: usize) -> Result<Topology> {
        can_create_namespaces().map_err(|e| anyhow!("--net veth: {e}; use --net udp"))?;
        let id = std::process::id() % 100_000;
        let switch_ns = Netns::create(&format!("sgnn-tb{id}-sw"))?;
        let mut worker_ns = Vec::new();
        let mut veths = Vec::new();
        let mut switch_ifaces = Vec::new();
        let mut worker_ifaces = Vec::new();
        for w in 0..workers {
            let ns = Netns::create(&format!("sgnn-tb{id}-w{w}"))?;
            let (s, h) = (format!("t{id}s{w}"), format!("t{id}h{w}"));
            veths.push(Veth::create(&s, Some(&switch_ns), &h, Some(&ns))?);
            switch_ifaces.push(s);
            worker_ifaces.push(h);
            worker_ns.push(ns);
        }
        Ok(Topology {
            switch_ns,
            worker_ns,
            switch_ifaces,
            worker_ifaces,
            _veths: veths,
        })
    }

    /// `tc netem` on both ends of every link: each direction loses, duplicates and reorders
    /// with these probabilities (reordering needs a delay: 1 ms for the frames not reordered).
    /// Returns false when the kernel has no netem (then the switch injects the faults).
    pub fn apply_faults(&self, loss: f64, duplicate: f64, reorder: f64, seed: u64) -> Result<bool> {
        if loss == 0.0 && duplicate == 0.0 && reorder == 0.0 {
            return Ok(true);
        }
        let _ = seed; // netem draws from the kernel's generator
        let pct = |p: f64| format!("{}%", p * 100.0);
        let mut args: Vec<String> = vec!["qdisc".into(), "add".into(), "dev".into()];
        let mut tail = vec!["root".to_string(), "netem".to_string()];
        if reorder > 0.0 {
            tail.extend([
                "delay".into(),
                "1ms".into(),
                "reorder".into(),
                pct(1.0 - reorder),
            ]);
        }
        if loss > 0.0 {
            tail.extend(["loss".into(), pct(loss)]);
        }
        if duplicate > 0.0 {
            tail.extend(["duplicate".into(), pct(duplicate)]);
        }
        for (w, ns) in self.worker_ns.iter().enumerate() {
            for (ns, dev) in [
                (ns, &self.worker_ifaces[w]),
                (&self.switch_ns, &self.switch_ifaces[w]),
            ] {
                args.truncate(3);
                args.push(dev.clone());
                args.extend(tail.iter().cloned());
                let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
                if let Err(e) = ns.exec("tc", &a) {
                    if e.to_string().contains("qdisc kind is unknown") {
                        return Ok(false);
                    }
                    return Err(e).with_context(|| {
                        format!("tc netem on {dev}: is iproute2's tc installed?")
                    });
                }
            }
        }
        Ok(true)
    }
}

/// `tool` on `PATH` or where its variable says (`sgnn_netdev::p4tools`, as the bmv2 tests
/// find it).
fn tool(tool: P4Tool) -> Result<PathBuf> {
    tool.find().map_err(|e| match e {
        ToolMissing::NotFound { name, env } => anyhow!(
            "--switch bmv2 needs `{name}` on PATH or {env} (build p4lang's p4c and behavioral-model outside this repository; see bmv2-tests/README.md)"
        ),
        ToolMissing::NotAFile { .. } => anyhow!("--switch bmv2: {e}"),
    })
}

/// The P4 program's top-level file in this checkout.
fn p4_main() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../p4/v1model/switchgnn.p4")
}

/// Compiles `p4/` with p4c into `out/p4`; returns the P4Info and the bmv2 JSON.
pub fn compile_p4(out: &Path) -> Result<(sgnn_p4rt::proto::p4::config::v1::P4Info, Vec<u8>)> {
    let p4c = tool(P4C)?;
    let dir = out.join("p4");
    std::fs::create_dir_all(&dir)?;
    let info = dir.join("switchgnn.p4info.bin");
    let o = p4tools::p4c_bmv2(&p4c, &p4_main(), &dir, &[&info])
        .output()
        .with_context(|| format!("running {}", p4c.display()))?;
    if !o.status.success() {
        bail!("p4c failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let p4info = sgnn_p4rt::p4info::load_p4info(&info)?;
    let json = std::fs::read(dir.join("switchgnn.json"))?;
    Ok((p4info, json))
}

/// Starts `simple_switch_grpc` in the switch namespace with 8 priority queues and P4Runtime
/// on a Unix socket in `out`; returns its supervisor index and P4Runtime address.
pub fn start_bmv2(sup: &Supervisor, t: &Topology, out: &Path) -> Result<(usize, String)> {
    let ssg = tool(SIMPLE_SWITCH_GRPC)?;
    let sock = out.join("p4runtime.sock");
    let _ = std::fs::remove_file(&sock);
    let c = p4tools::bmv2_command(&t.switch_ns, &ssg, &t.switch_ifaces, &sock, None);
    let (i, _) = sup.spawn("bmv2", c, &out.join("bmv2.log"), false)?;
    if p4tools::wait_for_p4runtime(&sock, || sup.try_wait(i).map(|s| s.to_string())).is_err() {
        bail!("bmv2 did not start: {}", sup.log_tail(i, 5));
    }
    Ok((i, format!("unix:{}", sock.display())))
}

/// bmv2's counters in the shape of the software switch's stats JSON
/// ([`softswitch::stats::program_counters`]): every event, and the ports of the `workers`
/// workers that counted a packet.
pub fn bmv2_counters(t: &mut dyn Target, workers: usize) -> Result<Value> {
    let ev = t.read_counters(sgnn_switch::counters::EVENTS.name)?;
    let ports = |t: &mut dyn Target, dir: &str| -> Result<Vec<PortCount>> {
        (0..workers)
            .map(|p| {
                let c = t.read_counter(dir, p as u64)?;
                Ok(PortCount {
                    packets: c.packets,
                    bytes: c.bytes,
                })
            })
            .collect()
    };
    let rx = ports(t, sgnn_switch::counters::PORT_RX.name)?;
    let tx = ports(t, sgnn_switch::counters::PORT_TX.name)?;
    Ok(softswitch::stats::program_counters(
        |e| ev.get(e.index()).map_or(0, |c| c.packets),
        &rx,
        &tx,
    ))
}
