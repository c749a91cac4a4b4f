//! `softswitch`: the SwitchGNN software switch on UDP (one Ethernet frame per datagram), on
//! interfaces (AF_PACKET) or on DPDK ethdevs.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use clap::Parser;
use sgnn_plan::Plan;
use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use softswitch::capture::CapturePorts;
use softswitch::metrics;
use softswitch::ports::{
    serve, AfPacketPorts, EgressFaults, EgressQueues, PortRate, Ports, UdpPorts,
};
use softswitch::{Pipeline, SwitchConfig, Tables, WorkerPort};

const ABOUT: &str =
    "SwitchGNN software switch: the P4 pipeline's model, serving workers over UDP, veths or DPDK.

Ports are either UDP peers (`--worker ADDR`, repeated: port i is the i-th address; each datagram
carries one Ethernet frame; no privileges needed), network interfaces (`--iface NAME`,
repeated: port i is the i-th interface, raw frames over AF_PACKET; needs root), or DPDK
ethdevs (`--dpdk -- EAL ARGS`: port i is the i-th ethdev, e.g. one `net_memif` server per
worker; cargo feature `dpdk`). Worker w sits on port w with MAC 02:00:00:00:hi:lo and IPv4
10.1.hi.lo.

With --plan the switch loads worker addresses and every block's aggregation entries itself.
The switch prints `listening on ADDR` (UDP), `serving af_packet on IFACES` or
`serving dpdk on PORTS` once ready, and
on exit (stdin closed, or --exit-after-blocks reached) prints its counters as JSON (and writes
them to --stats-json).

  softswitch --plan plan/ --listen 127.0.0.1:9000 --worker 127.0.0.1:9100 --worker 127.0.0.1:9101
  softswitch --plan plan/ --iface sw0 --iface sw1
  softswitch --plan plan/ --dpdk -- --no-huge -m 256 --no-pci --no-shconf --no-telemetry \\
      --vdev=net_memif0,role=server,socket=/tmp/sw0.sock,socket-abstract=no \\
      --vdev=net_memif1,role=server,socket=/tmp/sw1.sock,socket-abstract=no";

#[derive(Parser)]
#[command(
    name = "softswitch",
    version,
    about = ABOUT,
    long_about = ABOUT,
    args_override_self = true
)]
struct Args {
    /// Read flags from this TOML file first (keys are flag names: `worker = ["127.0.0.1:9001",
    /// ...]`, `p4runtime = "unix:/run/sgnn/p4rt.sock"`, `eal = [...]`); flags on the command
    /// line override it (docs/host.md, "Running under systemd").
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check everything serving needs and exit: the plan (if any) loads and its digests match,
    /// the flags and --config agree, every port opens, P4Runtime and metrics can be served.
    /// Prints `check: ok ...` (exit 0) or the first problem (exit 1).
    #[arg(long)]
    check: bool,
    /// Plan directory (from `switch-ctl plan --out`): load its tables and settings at start.
    /// Without it the switch starts empty and waits for `switch-ctl load` over --p4runtime.
    #[arg(long)]
    plan: Option<PathBuf>,
    /// With --plan: the job value every SwitchGNN frame must carry (0..65535; default: a
    /// fresh random one). Daemons learn it from the answer to their start-up probe
    /// (sgnn-hostd --job pins it); frames of another job are dropped and counted
    /// `drop_foreign_job`. `switch-ctl load --job` sets it on a running switch.
    #[arg(long, value_name = "N", requires = "plan")]
    job: Option<u16>,
    /// Serve P4Runtime here (host:port, or unix:/path to reach the switch across network
    /// namespaces); `switch-ctl load|dump|clear --target` talk to it.
    #[arg(long, value_name = "ADDR")]
    p4runtime: Option<softswitch::p4rt::Listen>,
    /// Serve P4Runtime over TLS with this certificate (chain, PEM); needs
    /// --p4runtime-tls-key and a host:port --p4runtime. Clients: `switch-ctl --tls-ca`.
    #[arg(long, value_name = "FILE", requires = "p4runtime_tls_key")]
    p4runtime_tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --p4runtime-tls-cert.
    #[arg(long, value_name = "FILE", requires = "p4runtime_tls_cert")]
    p4runtime_tls_key: Option<PathBuf>,
    /// P4Runtime device id.
    #[arg(long, default_value_t = 0)]
    device_id: u64,
    /// UDP address to listen on (port 0 picks a free port; the real one is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// UDP address of worker 0, 1, ... in order; one per worker of the plan.
    #[arg(long = "worker", value_name = "ADDR", conflicts_with = "ifaces")]
    workers: Vec<SocketAddr>,
    /// Interface of port 0, 1, ... in order (AF_PACKET); one per worker of the plan.
    #[arg(long = "iface", value_name = "NAME", conflicts_with = "dpdk")]
    ifaces: Vec<String>,
    /// Ports on DPDK ethdevs, one per worker in ethdev order; EAL arguments after `--`.
    #[arg(long, conflicts_with = "workers")]
    dpdk: bool,
    /// With --dpdk and no --plan: how many ethdevs are ports (0..N).
    #[arg(long, value_name = "N")]
    dpdk_ports: Option<usize>,
    /// DPDK: after 100 us without frames, sleep this long between polls (0: poll without
    /// pause, one core at 100%).
    #[arg(long, default_value_t = 50, value_name = "US")]
    dpdk_idle_sleep_us: u64,
    /// EAL arguments for --dpdk (after `--`).
    #[arg(last = true, value_name = "EAL ARGS")]
    eal: Vec<String>,
    /// Aggregators (register size); default: the P4 program's AGGREGATORS (65536).
    #[arg(long)]
    aggregators: Option<u32>,
    /// Egress queue depth (packets) above which frames are ECN-marked.
    #[arg(long, default_value_t = u32::MAX)]
    ecn_threshold: u32,
    /// Egress rate of every port in frames per second (a queue builds when senders are faster;
    /// its depth drives ECN marking). Default: no queueing, frames leave at once.
    #[arg(long, value_name = "PPS")]
    port_rate: Option<f64>,
    /// Egress rate of every port in Mbit/s of bytes on the wire, as a link of that speed (a
    /// queue builds when senders are faster). Instead of --port-rate.
    #[arg(long, value_name = "MBPS", conflicts_with = "port_rate")]
    port_rate_mbps: Option<f64>,
    /// With --port-rate or --port-rate-mbps: mark ECN CE in the IPv4 header of every frame
    /// that finds at least this many bytes (on the wire) queued at its egress port, as a
    /// switch's egress queue marks (the simulator's `--ecn-threshold`; the daemons echo the
    /// marks to the senders). Default: no egress marking.
    #[arg(long, value_name = "BYTES")]
    ecn_threshold_bytes: Option<u64>,
    /// Frames an egress queue holds before tail drop (with --port-rate or --port-rate-mbps).
    #[arg(long, default_value_t = 1024)]
    queue_capacity: usize,
    /// Drop simulator: drop each SwitchGNN packet from a host with this probability (0..1).
    #[arg(long, default_value_t = 0.0)]
    drop_prob: f64,
    /// Drop simulator: drop every n-th SwitchGNN packet from a host (0: off).
    #[arg(long, default_value_t = 0)]
    drop_every: u64,
    /// Egress faults (for loss tests over UDP): drop each frame the switch sends with this
    /// probability.
    #[arg(long, default_value_t = 0.0)]
    egress_loss: f64,
    /// Egress faults: send a frame twice with this probability.
    #[arg(long, default_value_t = 0.0)]
    egress_duplicate: f64,
    /// Egress faults: hold a frame back behind the next one to its port with this probability.
    #[arg(long, default_value_t = 0.0)]
    egress_reorder: f64,
    /// Seed of the drop simulator and the egress faults.
    #[arg(long, default_value_t = 1)]
    drop_seed: u64,
    /// Exit after this many block advances (default: run until stdin closes).
    #[arg(long)]
    exit_after_blocks: Option<u64>,
    /// Write the counters as JSON here on exit.
    #[arg(long)]
    stats_json: Option<PathBuf>,
    /// Capture every frame received and sent, with its timestamp, in this pcapng file: one
    /// interface per port (`port0`, `port1`, ..., and `unknown` for UDP senders that are no
    /// port), direction in each frame's flags. Frames are written as Ethernet frames also on
    /// UDP (the datagram's payload). Wireshark decodes them with tools/wireshark/sgnn.lua.
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// Stop capturing once the --pcap file has this many bytes (says so once on stderr).
    #[arg(long, value_name = "N", default_value_t = softswitch::capture::DEFAULT_MAX_BYTES)]
    pcap_max_bytes: u64,
    /// Serve the counters in the Prometheus text format on http://ADDR/metrics, read live
    /// at each scrape (port 0 picks a free port; `metrics on http://ADDR/metrics` is printed
    /// on stderr). Metric names: docs/host.md, "Metrics".
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
}

fn main() -> ExitCode {
    let a: Args = sgnn_netdev::cli_config::parse("softswitch");
    if a.dpdk && !cfg!(feature = "dpdk") {
        eprintln!(
            "error: {}",
            sgnn_netdev::dpdk_args::not_built_with_dpdk("softswitch", "--dpdk")
        );
        return ExitCode::from(2);
    }
    let plan = match &a.plan {
        Some(dir) => match Plan::load(dir) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("error: loading plan {}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    if !a.dpdk && !a.eal.is_empty() {
        eprintln!("error: EAL arguments after `--` are for --dpdk");
        return ExitCode::FAILURE;
    }
    for (flag, rate) in [
        ("--port-rate", a.port_rate),
        ("--port-rate-mbps", a.port_rate_mbps),
    ] {
        if rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            eprintln!("error: {flag} must be a positive number");
            return ExitCode::FAILURE;
        }
    }
    if a.ecn_threshold_bytes.is_some() && a.port_rate.is_none() && a.port_rate_mbps.is_none() {
        eprintln!(
            "error: --ecn-threshold-bytes marks frames queued at an egress port; give the ports a rate (--port-rate-mbps MBPS) so that queues build"
        );
        return ExitCode::FAILURE;
    }
    let nports = match (&plan, a.dpdk) {
        (Some(p), true) => p.workers() as usize,
        (None, true) => a.dpdk_ports.unwrap_or(0),
        (_, false) => a.workers.len().max(a.ifaces.len()),
    };
    if a.dpdk && nports == 0 {
        eprintln!(
            "error: with --dpdk and no --plan, say how many ethdevs are ports with --dpdk-ports N"
        );
        return ExitCode::FAILURE;
    }
    // The P4 program's sizes: a hardware switch would refuse more (issue 31).
    let agg_entries = plan.as_ref().map_or(0, |p| {
        p.blocks.iter().map(|b| b.num_contributions()).sum::<u64>()
    });
    if let Err(e) =
        softswitch::limits::check(nports, plan.as_ref().map(|p| p.workers()), agg_entries)
    {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    if let Some(plan) = &plan {
        if nports != plan.workers() as usize {
            eprintln!(
                "error: the plan has {} workers but {} ports were given; pass one --worker ADDR (UDP) or one --iface NAME (veth) per worker, in order",
                plan.workers(),
                nports
            );
            return ExitCode::FAILURE;
        }
    }
    let ports: Vec<WorkerPort> = (0..nports as u16)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect();
    let mut cfg = SwitchConfig {
        aggregators: a.aggregators.unwrap_or(1 << 16),
        workers: 0,
        blocks_per_round: 1,
        ecn_threshold: a.ecn_threshold,
        mac: SWITCH_MAC,
        ip: SWITCH_IP,
        drop_probability: a.drop_prob,
        drop_every: a.drop_every,
        drop_seed: a.drop_seed,
        plan_tag: 0,
        // The program's build, what its P4Runtime server describes to `switch-ctl load`.
        seen_cells: softswitch::pipeline::SEEN_CELLS as u32,
        role: softswitch::FabricRole::Star,
        job: 0,
    };
    let tables = match &plan {
        Some(plan) => {
            let planned = SwitchConfig::for_plan(plan);
            cfg.aggregators = a.aggregators.unwrap_or(planned.aggregators.max(1 << 16));
            cfg.workers = planned.workers;
            cfg.blocks_per_round = planned.blocks_per_round;
            cfg.plan_tag = planned.plan_tag;
            cfg.job = a
                .job
                .unwrap_or_else(sgnn_switch::config::Settings::fresh_job);
            Tables::from_plan(plan, &ports)
        }
        None => Tables::default(),
    };
    let mut pipe = Pipeline::new(cfg, tables);
    // The control plane refuses workers on ports this switch does not have (load fails with a
    // message instead of a run timing out).
    pipe.host_ports = Some(nports.min(u16::MAX as usize) as u16);
    let pipeline = Arc::new(Mutex::new(pipe));
    let mut datapath: Box<dyn Ports> = if a.dpdk {
        match open_dpdk(&a, nports) {
            Ok(p) => {
                println!("serving {}", p.describe());
                p
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else if a.ifaces.is_empty() {
        match UdpPorts::bind(a.listen, a.workers.clone()) {
            Ok(p) => {
                println!("listening on {}", p.socket.local_addr().unwrap());
                Box::new(p)
            }
            Err(e) => {
                eprintln!("error: cannot listen on {}: {e}", a.listen);
                return ExitCode::FAILURE;
            }
        }
    } else {
        match AfPacketPorts::open(&a.ifaces) {
            Ok(p) => {
                println!("serving {}", p.describe());
                Box::new(p)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    if let Some(path) = &a.pcap {
        let describe = |p: usize| {
            if a.dpdk {
                format!("worker {p}, DPDK ethdev {p}")
            } else if let Some(i) = a.ifaces.get(p) {
                format!("worker {p}, interface {i}")
            } else {
                format!("worker {p}, UDP {}", a.workers[p])
            }
        };
        match CapturePorts::create(datapath, nports, describe, path, a.pcap_max_bytes) {
            Ok(c) => datapath = Box::new(c),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(addr) = a.metrics {
        let live = Arc::new(metrics::Live::new(nports));
        datapath = Box::new(metrics::MetricsPorts::new(datapath, live.clone()));
        let pipeline = pipeline.clone();
        match metrics::serve_http(addr, move || {
            metrics::render(&pipeline, nports, Some(&live))
        }) {
            Ok(bound) => eprintln!("metrics on http://{bound}/metrics"),
            Err(e) => {
                eprintln!("error: cannot serve metrics on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(listen) = a.p4runtime.clone() {
        let tls = match (&a.p4runtime_tls_cert, &a.p4runtime_tls_key) {
            (Some(c), Some(k)) => {
                let read = |p: &PathBuf| {
                    std::fs::read(p).map_err(|e| format!("--p4runtime-tls: {}: {e}", p.display()))
                };
                match (read(c), read(k)) {
                    (Ok(cert_pem), Ok(key_pem)) => {
                        Some(softswitch::p4rt::ServerTls { cert_pem, key_pem })
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            _ => None,
        };
        match softswitch::p4rt::spawn_with(pipeline.clone(), a.device_id, listen, tls) {
            Ok(addr) => println!("p4runtime on {addr}"),
            Err(e) => {
                eprintln!("error: cannot serve P4Runtime: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let closed = Arc::new(AtomicBool::new(false));
    {
        let closed = closed.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            closed.store(true, Ordering::Relaxed);
        });
    }
    let limit = a.exit_after_blocks;
    for (name, p) in [
        ("--drop-prob", a.drop_prob),
        ("--egress-loss", a.egress_loss),
        ("--egress-duplicate", a.egress_duplicate),
        ("--egress-reorder", a.egress_reorder),
    ] {
        if !(0.0..=1.0).contains(&p) {
            eprintln!("error: {name} is a probability in 0..1, got {p}");
            return ExitCode::FAILURE;
        }
    }
    if a.check {
        let p = pipeline.lock().unwrap();
        println!(
            "check: ok: {nports} ports open, {}",
            match &a.plan {
                Some(d) => format!(
                    "plan {} loaded (tag {:08x}, job {}, {} workers, {} blocks)",
                    d.display(),
                    p.config.plan_tag,
                    p.config.job,
                    p.config.workers,
                    p.config.blocks_per_round
                ),
                None => "no plan (tables come over P4Runtime)".to_string(),
            }
        );
        return ExitCode::SUCCESS;
    }
    let rate = match (a.port_rate, a.port_rate_mbps) {
        (Some(pps), _) => Some(PortRate::Pps(pps)),
        (None, Some(mbps)) => Some(PortRate::Bps(mbps * 1e6)),
        (None, None) => None,
    };
    let mut queues = EgressQueues::with_rate(nports, rate, a.queue_capacity, a.ecn_threshold_bytes);
    let mut faults = EgressFaults::new(
        a.egress_loss,
        a.egress_duplicate,
        a.egress_reorder,
        a.drop_seed ^ 0x5eed,
    );
    let result = serve(&mut *datapath, &pipeline, &mut queues, &mut faults, |p| {
        closed.load(Ordering::Relaxed) || limit.is_some_and(|l| p.counters.block_advance >= l)
    });
    let dp = result.as_ref().cloned().unwrap_or_default();
    let p = pipeline.lock().unwrap();
    let mut json = softswitch::stats::to_json(&p, &dp, &datapath.counters());
    // The process's CPU time (start-up and plan included), and since the first frame
    // arrived (the exchange alone), for frames per CPU-second.
    let cpu = sgnn_netdev::cpu::process_cpu_seconds();
    json["cpu_seconds"] = cpu.into();
    if let Some(first) = dp.cpu_at_first_frame {
        json["exchange_cpu_seconds"] = (cpu - first).max(0.0).into();
    }
    let json = json.to_string() + "\n";
    // Whoever started the switch may have stopped reading its stdout; that is not an error.
    let _ = writeln!(std::io::stdout(), "counters: {}", json.trim_end());
    if let Some(path) = &a.stats_json {
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("error: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: datapath: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "dpdk")]
fn open_dpdk(a: &Args, nports: usize) -> Result<Box<dyn Ports>, String> {
    use softswitch::ports::{DpdkPorts, DpdkPortsConfig};
    let cfg = DpdkPortsConfig {
        idle_sleep: std::time::Duration::from_micros(a.dpdk_idle_sleep_us),
        ..DpdkPortsConfig::default()
    };
    DpdkPorts::open(&a.eal, nports, &cfg)
        .map(|p| Box::new(p) as Box<dyn Ports>)
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_: &Args, _: usize) -> Result<Box<dyn Ports>, String> {
    // `main` refuses `--dpdk` before getting here.
    Err(sgnn_netdev::dpdk_args::not_built_with_dpdk(
        "softswitch",
        "--dpdk",
    ))
}
