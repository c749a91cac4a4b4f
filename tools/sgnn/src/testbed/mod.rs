//! `sgnn testbed`: a whole SwitchGNN cluster on this machine.
//!
//! Plans the graph, starts the software switch and one `sgnn-hostd` per worker (over UDP on
//! loopback), runs L layers forward and backward with real feature values, checks every
//! worker's sums against a single-process reference, runs the host-based baseline the same
//! way, and reports both side by side. Children are killed on any failure and on Ctrl-C. The
//! last line printed starts with `verified:` or `FAILED:`, and the exit code agrees.
//!
//! Here: the entry point (that last line and the exit code) and the order of the steps. Each
//! step has its file: [`args`] (the flags and their checks), [`plan`] (a plan per delivery),
//! [`cluster`] (the switch started on its network, and the daemons' command lines), [`load`]
//! (the plan loaded into the switch), [`run`] (the daemons started, supervised and their
//! results collected), [`verify`] (every sum against the reference), [`report`] (the table,
//! `report.json` and the summary), [`tcp`] (the reference row: a plain TCP all-to-all of
//! host-based's bytes, no switch); [`procs`] supervises the children, [`veth`] builds the
//! namespaces and runs bmv2.

mod args;
pub mod cluster;
mod load;
mod plan;
pub mod procs;
mod report;
mod run;
pub(crate) mod tcp;
mod verify;
mod veth;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use sgnn_plan::Plan;

pub(crate) use args::parse_aggregate;
pub use args::{Net, SwitchKind, TestbedArgs};
pub(crate) use plan::{plan_graph, PlanOptions};
use procs::{install_interrupt_handler, Supervisor};

/// Runs the testbed; prints the report and the final `verified:`/`FAILED:` line.
pub fn main(args: TestbedArgs) -> ExitCode {
    if matches!(args.net, Net::Memif | Net::VethDpdk) && !cfg!(feature = "dpdk") {
        let net = if args.net == Net::Memif {
            "memif"
        } else {
            "veth-dpdk"
        };
        println!(
            "FAILED: this sgnn was built without DPDK, which --net {net} needs: run it as \
             `cargo run --release -p sgnn --features dpdk -- testbed --net {net}` (the cargo \
             feature `dpdk` builds the daemons and the switch with DPDK too; needs the Debian \
             packages {})",
            sgnn_netdev::dpdk_args::DPDK_PACKAGES
        );
        return ExitCode::from(2);
    }
    install_interrupt_handler();
    let sup = Supervisor::default();
    let result = run(&args, &sup);
    sup.kill_all();
    if let Some(dir) = args.pcap.as_ref().filter(|d| d.is_dir()) {
        let modes = if args.no_baseline {
            "switchgnn/"
        } else {
            "switchgnn/ and host-based/"
        };
        let switch = if args.switch == SwitchKind::Bmv2 {
            ""
        } else {
            "switch.pcapng, "
        };
        eprintln!(
            "captures in {}: {modes} hold {switch}w0..w{}.pcapng; open one with \
             `wireshark -X lua_script:tools/wireshark/sgnn.lua FILE`",
            dir.display(),
            args.workers.saturating_sub(1)
        );
    }
    match result {
        Ok(summary) => {
            println!("verified: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let msg = format!("{e:#}").replace('\n', " | ");
            println!("FAILED: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// A run to make: its name (`switchgnn`, `switchgnn-NAME`, `host-based`), the daemons' mode
/// (`switchgnn` or `host-based`) and its plan, with the plan's directory.
struct Planned {
    label: String,
    mode: &'static str,
    dir: PathBuf,
    plan: Plan,
}

fn run(a: &TestbedArgs, sup: &Supervisor) -> Result<String> {
    args::check_args(a)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    // Held until the run ends, whichever way (removed on drop).
    let _lock = procs::OutLock::take(&a.out)?;
    // One plan per delivery (the first in `plan/`, the others in `plan-NAME/`); the baseline
    // runs on the first.
    let mut plans = Vec::new();
    for (i, &m) in a.aggregate.iter().enumerate() {
        let dir = if i == 0 {
            a.out.join("plan")
        } else {
            a.out.join(format!("plan-{}", m.name()))
        };
        let plan = plan::make_the_plan(a, m, &dir)?;
        plans.push(Planned {
            label: plan::run_name(m),
            mode: "switchgnn",
            dir,
            plan,
        });
    }
    if !a.no_baseline {
        let first = &plans[0];
        plans.push(Planned {
            label: "host-based".to_string(),
            mode: "host-based",
            dir: first.dir.clone(),
            plan: first.plan.clone(),
        });
    }
    // From here on the daemons: one per core of each worker (`--cores`), each with its
    // share of the columns.
    let cores = a.cores;
    let a = &a.per_core();
    let mut runs = Vec::new();
    let mut checked = 0;
    for p in &plans {
        let label = &p.label;
        let out = a.out.join(label);
        let _ = std::fs::remove_dir_all(&out);
        let r = run::run_mode(a, sup, &p.dir, p.mode, label, &out)?;
        checked += verify::verify(&p.plan, a, &out).with_context(|| format!("{label} sums"))?;
        runs.push(r);
    }
    // The reference beside the baseline: the same workers exchanging host-based's bytes
    // over plain loopback TCP, no switch (tcp.rs).
    let reference = if a.no_baseline {
        None
    } else {
        let bytes = tcp::pair_bytes(&plans[0].plan, a.feature_dim)?;
        Some(tcp::run(bytes, 2 * a.layer_count() as usize).context("the TCP all-to-all")?)
    };
    let blocks: Vec<usize> = plans.iter().map(|p| p.plan.blocks.len()).collect();
    report::report(a, cores, &runs, reference.as_ref(), &blocks, checked)
}
