//! The switches under test: bmv2 (`simple_switch_grpc`) and the software switch binary, each
//! in the test network's namespace, loaded through P4Runtime exactly as `switch-ctl load`
//! loads a deployment, and read back for the differential runner.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sgnn_netdev::p4tools::{self, NotServing};
use softswitch::control::{NamedEntry, WriteKind};
use softswitch::{Pipeline, Tables};
use switch_ctl::backend::P4RuntimeTarget;
use switch_ctl::install::install;
use switch_ctl::program::{program_for, Deployment, Entry, SwitchProgram, SwitchSizes};
use switch_ctl::Target;

use crate::net::TestNet;
use crate::runner::SwitchState;
use crate::scenario::Scenario;
use crate::tools::{Compiled, Tools};

/// A switch process, killed on drop.
pub struct SwitchProcess {
    child: Child,
    /// Its P4Runtime address (`unix:/path`).
    pub p4runtime: String,
    /// Its log file.
    pub log: PathBuf,
    /// bmv2's Thrift port inside the namespace (for register reads), if any.
    pub thrift: Option<(String, u16)>,
}

impl Drop for SwitchProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for_socket(path: &Path, child: &mut Child, log: &Path) -> Result<(), String> {
    p4tools::wait_for_p4runtime(path, || {
        child.try_wait().ok().flatten().map(|s| s.to_string())
    })
    .map_err(|e| match e {
        NotServing::Exited { .. } => {
            format!("{e}: {}", std::fs::read_to_string(log).unwrap_or_default())
        }
        NotServing::Timeout { .. } => e.to_string(),
    })
}

/// Starts `simple_switch_grpc` (no program yet) on the switch ends of `net`, with 8 priority
/// queues, P4Runtime on a Unix socket in `dir` and Thrift on port 9090 inside the namespace.
pub fn start_bmv2(tools: &Tools, net: &TestNet, dir: &Path) -> Result<SwitchProcess, String> {
    let sock = dir.join("p4rt.sock");
    let log = dir.join("bmv2.log");
    let mut cmd = p4tools::bmv2_command(
        &net.ns,
        &tools.simple_switch_grpc,
        &net.switch_ifaces,
        &sock,
        Some(9090),
    );
    let f = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut child = cmd
        .stdout(f.try_clone().map_err(|e| e.to_string())?)
        .stderr(f)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", tools.simple_switch_grpc.display()))?;
    wait_for_socket(&sock, &mut child, &log)?;
    Ok(SwitchProcess {
        child,
        p4runtime: format!("unix:{}", sock.display()),
        log,
        thrift: Some((net.ns.name().to_string(), 9090)),
    })
}

/// Starts the software switch binary on the switch ends of `net`, serving P4Runtime on a
/// Unix socket in `dir`, with empty tables.
pub fn start_softswitch(binary: &Path, net: &TestNet, dir: &Path) -> Result<SwitchProcess, String> {
    let sock = dir.join("p4rt.sock");
    let log = dir.join("softswitch.log");
    let mut cmd = net.ns.command(binary.to_str().expect("utf-8 path"));
    for ifname in &net.switch_ifaces {
        cmd.args(["--iface", ifname]);
    }
    cmd.arg("--p4runtime")
        .arg(format!("unix:{}", sock.display()));
    let f = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(f)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    wait_for_socket(&sock, &mut child, &log)?;
    Ok(SwitchProcess {
        child,
        p4runtime: format!("unix:{}", sock.display()),
        log,
        thrift: None,
    })
}

/// The deployment of a scenario: worker w on port w, recirculation session on port 64.
pub fn deployment(sc: &Scenario) -> Deployment {
    let mut d = Deployment::standard(sc.plan.workers());
    d.recirculation_port = 64;
    d.ecn_threshold = sc.config.ecn_threshold;
    d.drop_every = sc.config.drop_every as u32;
    // The job the scenario's switch is loaded with (`admission_of_every_type` sets one).
    d.job = sc.config.job;
    d
}

/// The switch program of a scenario: the plan's, plus its extra `agg_table` entries.
pub fn program(sc: &Scenario) -> Result<SwitchProgram, String> {
    let mut prog = program_for(&sc.plan, &deployment(sc), &SwitchSizes::default())
        .map_err(|e| e.to_string())?;
    let mut extra = Vec::new();
    for &((block_id, src_id, pass), action) in &sc.extra_entries {
        let key = sgnn_switch::aggregation::AggKey {
            block_id,
            src_id,
            pass,
        };
        extra.push(sgnn_switch::TypedEntry::Agg(key, action).to_entry());
    }
    prog.block_entries.push(extra);
    // A fabric role (sgnn_switch::fabric): the scenario's role and worker count in the
    // settings, and its link ports a link in port_worker (set_port_link, the port's worker id
    // as the peer).
    if sc.config.role != sgnn_switch::config::Role::Star {
        let Ok(sgnn_switch::TypedEntry::Config(mut s)) =
            sgnn_switch::TypedEntry::from_entry(&prog.config)
        else {
            return Err("the program's settings do not parse".into());
        };
        s.role = sc.config.role;
        s.workers = sc.config.workers;
        prog.config = sgnn_switch::TypedEntry::Config(s).to_entry();
    }
    for e in &mut prog.base_entries {
        if let Ok(sgnn_switch::TypedEntry::PortWorker { port, worker_id }) =
            sgnn_switch::TypedEntry::from_entry(e)
        {
            if sc.link_ports.contains(&port) {
                *e = sgnn_switch::TypedEntry::PortLink {
                    port,
                    peer_id: worker_id,
                }
                .to_entry();
            }
        }
    }
    Ok(prog)
}

fn named(e: &Entry) -> NamedEntry {
    NamedEntry {
        table: e.table.into(),
        matches: e.matches.iter().map(|&(n, v)| (n.into(), v)).collect(),
        action: e.action.into(),
        params: e.params.iter().map(|&(n, v)| (n.into(), v)).collect(),
    }
}

/// The model switch holding exactly `prog`, written through its control interface.
pub fn model_of(sc: &Scenario, prog: &SwitchProgram) -> Pipeline {
    let mut m = Pipeline::new(sc.config.clone(), Tables::default());
    m.write_entry(WriteKind::Modify, &named(&prog.config))
        .expect("settings");
    for e in prog
        .base_entries
        .iter()
        .chain(prog.block_entries.iter().flatten())
    {
        m.write_entry(WriteKind::Insert, &named(e)).expect("entry");
    }
    for g in &prog.groups {
        let replicas = g
            .replicas
            .iter()
            .map(|&(rid, port)| softswitch::Replica {
                rid: rid as u16,
                port: port as u16,
            })
            .collect();
        m.write_multicast_group(WriteKind::Insert, g.id as u16, replicas)
            .expect("group");
    }
    m
}

/// Connects to a switch process and installs the scenario's program (pushing the compiled
/// P4 program first when `compiled` is given: bmv2).
pub fn load(
    sw: &SwitchProcess,
    prog: &SwitchProgram,
    compiled: Option<&Compiled>,
) -> Result<P4RuntimeTarget, String> {
    let expected = sgnn_p4rt::schema::switchgnn_p4info();
    let mut t = match compiled {
        Some(c) => {
            let p4info =
                sgnn_p4rt::p4info::load_p4info(&c.p4info_bin).map_err(|e| e.to_string())?;
            let json = std::fs::read(&c.bmv2_json).map_err(|e| e.to_string())?;
            P4RuntimeTarget::connect_and_install(
                &sw.p4runtime,
                0,
                1,
                Default::default(),
                &p4info,
                json,
            )
        }
        None => P4RuntimeTarget::connect(&sw.p4runtime, 0, 1, &expected),
    }
    .map_err(|e| format!("connecting to {}: {e}", sw.p4runtime))?;
    install(&mut t, prog, 1000, &mut |_, _| {}).map_err(|e| format!("loading: {e}"))?;
    Ok(t)
}

/// Reads a switch's state over P4Runtime, registers through bmv2's Thrift CLI when the
/// target cannot read them over P4Runtime.
pub struct P4rtState<'a> {
    /// The loaded target.
    pub target: &'a mut P4RuntimeTarget,
    /// bmv2's namespace and Thrift port, when registers go through simple_switch_CLI.
    pub thrift: Option<(String, u16)>,
    /// simple_switch_CLI (next to simple_switch_grpc).
    pub cli: Option<PathBuf>,
}

impl P4rtState<'_> {
    fn thrift_register(&self, name: &str) -> Result<Vec<u128>, String> {
        let (ns, port) = self.thrift.as_ref().expect("thrift");
        let cli = self.cli.as_ref().ok_or("simple_switch_CLI not found")?;
        let python = std::env::var("P4_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, &python])
            .arg(cli)
            .args(["--thrift-port", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("running simple_switch_CLI: {e}"))?;
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(format!("register_read {name}\n").as_bytes())
            .map_err(|e| e.to_string())?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        let marker = format!("{name}=");
        let line = text
            .lines()
            .find_map(|l| l.split_once(&marker).map(|(_, v)| v.to_string()))
            .ok_or_else(|| {
                format!(
                    "simple_switch_CLI register_read {name}: {text}{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })?;
        line.split(',')
            .map(|v| v.trim().parse::<u128>().map_err(|e| format!("{v:?}: {e}")))
            .collect()
    }
}

impl SwitchState for P4rtState<'_> {
    /// bmv2 (the only target read through Thrift) counts the input frame's length.
    fn tx_bytes_count_the_input_frame(&self) -> bool {
        self.thrift.is_some()
    }

    fn events(&mut self) -> Result<Vec<u64>, String> {
        Ok(self
            .target
            .read_counters(sgnn_switch::counters::EVENTS.name)
            .map_err(|e| e.to_string())?
            .iter()
            .map(|c| c.packets)
            .collect())
    }

    fn register(&mut self, name: &str) -> Result<Vec<u128>, String> {
        if self.thrift.is_some() {
            return self.thrift_register(name);
        }
        let size = self
            .target
            .index()
            .register(name)
            .map_err(|e| e.to_string())?
            .size;
        self.target
            .read_register_range(name, 0..size)
            .map_err(|e| e.to_string())
    }

    fn port_counter(&mut self, name: &str, port: usize) -> Result<(u64, u64), String> {
        let c = self
            .target
            .read_counter(name, port as u64)
            .map_err(|e| e.to_string())?;
        Ok((c.packets, c.bytes))
    }
}
