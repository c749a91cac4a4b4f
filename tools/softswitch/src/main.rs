//! `softswitch`: the SwitchGNN software switch on UDP (one Ethernet frame per datagram).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;
use sgnn_plan::Plan;
use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use softswitch::udp::UdpSwitch;
use softswitch::{Pipeline, SwitchConfig, Tables, WorkerPort};

const ABOUT: &str = "SwitchGNN software switch: the P4 pipeline's model, serving workers over UDP.

Each UDP datagram carries one Ethernet frame of the SwitchGNN protocol (docs/protocol.md).
Worker w is port w, reached at the w-th --worker address, with MAC 02:00:00:00:hi:lo and IPv4
10.1.hi.lo. The switch loads every block's aggregation entries from the plan, prints
`listening on ADDR` once ready, and on exit (stdin closed, or --exit-after-blocks reached)
prints its counters as JSON (and writes them to --stats-json).

  softswitch --plan plan/ --listen 127.0.0.1:9000 --worker 127.0.0.1:9100 --worker 127.0.0.1:9101";

#[derive(Parser)]
#[command(name = "softswitch", version, about = ABOUT, long_about = ABOUT)]
struct Args {
    /// Plan directory (from `switch-ctl plan --out`).
    #[arg(long)]
    plan: PathBuf,
    /// UDP address to listen on (port 0 picks a free port; the real one is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// UDP address of worker 0, 1, ... in order; one per worker of the plan.
    #[arg(long = "worker", value_name = "ADDR")]
    workers: Vec<SocketAddr>,
    /// Aggregators (register size); default: what the plan's switch memory holds.
    #[arg(long)]
    aggregators: Option<u32>,
    /// Egress queue depth (packets) above which frames are ECN-marked.
    #[arg(long, default_value_t = u32::MAX)]
    ecn_threshold: u32,
    /// Drop simulator: drop each SwitchGNN packet with this probability (0..1).
    #[arg(long, default_value_t = 0.0)]
    drop_prob: f64,
    /// Drop simulator seed.
    #[arg(long, default_value_t = 1)]
    drop_seed: u64,
    /// Exit after this many block advances (default: run until stdin closes).
    #[arg(long)]
    exit_after_blocks: Option<u64>,
    /// Write the counters as JSON here on exit.
    #[arg(long)]
    stats_json: Option<PathBuf>,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let plan = match Plan::load(&a.plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: loading plan {}: {e}", a.plan.display());
            return ExitCode::FAILURE;
        }
    };
    if a.workers.len() != plan.workers() as usize {
        eprintln!(
            "error: the plan has {} workers but {} --worker addresses were given; pass one per worker, in order",
            plan.workers(),
            a.workers.len()
        );
        return ExitCode::FAILURE;
    }
    let ports: Vec<WorkerPort> = (0..plan.workers() as u16)
        .map(|w| WorkerPort {
            port: w,
            mac: worker_mac(w),
            ip: worker_ip(w),
        })
        .collect();
    let cfg = SwitchConfig {
        aggregators: a
            .aggregators
            .unwrap_or(plan.manifest.aggregators.min(u32::MAX as u64) as u32),
        workers: plan.workers() as u16,
        blocks_per_round: plan.blocks.len() as u16,
        ecn_threshold: a.ecn_threshold,
        mac: SWITCH_MAC,
        ip: SWITCH_IP,
        drop_probability: a.drop_prob,
        drop_seed: a.drop_seed,
        ..SwitchConfig::default()
    };
    let pipeline = Pipeline::new(cfg, Tables::from_plan(&plan, &ports));
    let mut sw = match UdpSwitch::bind(a.listen, a.workers.clone(), pipeline) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", a.listen);
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {}", sw.socket.local_addr().unwrap());
    let closed = Arc::new(AtomicBool::new(false));
    {
        let closed = closed.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            closed.store(true, Ordering::Relaxed);
        });
    }
    let limit = a.exit_after_blocks;
    let result = sw.run(|p| {
        closed.load(Ordering::Relaxed) || limit.is_some_and(|l| p.counters.block_advance >= l)
    });
    let c = &sw.pipeline.counters;
    println!("counters: {}", counters_json(c, sw.tx_errors).trim_end());
    if let Some(path) = &a.stats_json {
        let json = counters_json(c, sw.tx_errors);
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("error: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: socket: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The counters as a JSON object (field names as in `Counters`), plus `tx_errors`.
fn counters_json(c: &softswitch::Counters, tx_errors: u64) -> String {
    let mut v = serde_json::to_value(c).expect("counters serialise");
    v["tx_errors"] = tx_errors.into();
    v.to_string() + "\n"
}
