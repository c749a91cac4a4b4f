//! `switch-ctl load`: installs a plan into a running switch (optionally pushing the P4
//! program first), with a progress bar, and prints what it installed.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_plan::Plan;

use super::target::{connect, TargetArgs};

#[derive(Args)]
pub struct LoadArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Plan directory (from `switch-ctl plan --out`).
    #[arg(long, value_name = "DIR")]
    plan: PathBuf,
    /// Push this P4Info (binary .bin or text .txtpb from p4c --p4runtime-files) with
    /// --device-config before installing (bmv2 started with --no-p4).
    #[arg(long, value_name = "FILE", requires = "device_config")]
    p4info: Option<PathBuf>,
    /// The target binary to push (bmv2: the JSON p4c wrote).
    #[arg(long, value_name = "FILE", requires = "p4info")]
    device_config: Option<PathBuf>,
    /// Switch port of worker 0, 1, ... (default: worker w on port w).
    #[arg(long = "worker-port", value_name = "PORT", value_delimiter = ',')]
    worker_ports: Vec<u32>,
    /// Port of the recirculation clone session (default: one past the last worker port).
    #[arg(long, value_name = "PORT")]
    recirculation_port: Option<u32>,
    /// Egress queue depth (packets) above which the switch marks ECN (default: never).
    #[arg(long, value_name = "PKTS")]
    ecn_threshold: Option<u32>,
    /// Drop simulator: drop every n-th SwitchGNN frame from a host (0: off).
    #[arg(long, default_value_t = 0)]
    drop_every: u32,
    /// Drop simulator: drop each SwitchGNN frame from a host with this probability.
    #[arg(long, default_value_t = 0.0)]
    drop_prob: f64,
    /// Updates per P4Runtime WriteRequest.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Loads the plan into the switch of `--target` (after pushing `--p4info` and
/// `--device-config`, if given) and prints what it installed.
pub fn run(a: &LoadArgs) -> Result<()> {
    use switch_ctl::install::{install, sizes_of};
    use switch_ctl::program::{program_for, Deployment};
    use switch_ctl::target::P4RuntimeTarget;
    let plan = Plan::load(&a.plan).with_context(|| format!("loading plan {}", a.plan.display()))?;
    let t = &a.target;
    let mut target: Box<dyn switch_ctl::Target> = match (&a.p4info, &a.device_config) {
        (Some(_), Some(_)) if t.target.starts_with("bfrt://") => bail!(
            "--p4info/--device-config push a pipeline over P4Runtime; a bfrt:// switch loads its program with bf_switchd (docs/tofino.md)"
        ),
        (Some(info), Some(cfg)) => {
            let p4info = sgnn_p4rt::p4info::load_p4info(info)?;
            let expected = sgnn_p4rt::schema::switchgnn_p4info_for(sgnn_p4rt::schema::arch_of(&p4info));
            let diffs = sgnn_p4rt::schema::compare_p4info(&expected, &p4info);
            if !diffs.is_empty() {
                bail!(
                    "{} is not the SwitchGNN program's P4Info (docs/switch-interface.md):\n  {}",
                    info.display(),
                    diffs.join("\n  ")
                );
            }
            let bytes = std::fs::read(cfg).with_context(|| format!("reading {}", cfg.display()))?;
            eprintln!(
                "pushing {} and {} to {}",
                info.display(),
                cfg.display(),
                t.target
            );
            Box::new(P4RuntimeTarget::connect_and_install(
                &t.target,
                t.device_id,
                t.election_id,
                t.client_options()?,
                &p4info,
                bytes,
            )?)
        }
        _ => connect(t)?,
    };
    let workers = plan.workers();
    let mut dep = Deployment::standard(workers);
    if !a.worker_ports.is_empty() {
        dep.worker_ports = a.worker_ports.clone();
        dep.recirculation_port = a.worker_ports.iter().max().copied().unwrap_or(0) + 1;
    }
    if let Some(p) = a.recirculation_port {
        dep.recirculation_port = p;
    }
    if let Some(e) = a.ecn_threshold {
        dep.ecn_threshold = e;
    }
    dep.drop_every = a.drop_every;
    if !(0.0..=1.0).contains(&a.drop_prob) {
        bail!("--drop-prob is a probability in 0..1, got {}", a.drop_prob);
    }
    dep.drop_probability = a.drop_prob;
    let sizes = sizes_of(target.as_ref())?;
    let prog = program_for(&plan, &dep, &sizes)?;
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1).with_style(
            ProgressStyle::with_template(
                "{spinner} load [{elapsed_precise}] {wide_bar} {pos}/{len} ops {per_sec}",
            )
            .unwrap(),
        )
    };
    let report = install(target.as_mut(), &prog, a.batch, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if report.cleared > 0 {
        eprintln!("removed {} entries of an earlier plan", report.cleared);
    }
    if report.registers_skipped {
        eprintln!(
            "note: this switch does not write registers over P4Runtime (bmv2's PI); the sync registers keep their values (0 after a pipeline push: use --p4info/--device-config for a fresh start)"
        );
    }
    println!(
        "loaded {}: {} workers, {} blocks, {} aggregation entries, {} operations in {:.2} s ({:.0} entries/s) into {}",
        a.plan.display(),
        workers,
        plan.blocks.len(),
        prog.agg_entries(),
        report.entries,
        report.seconds,
        report.rate(),
        t.target
    );
    Ok(())
}
