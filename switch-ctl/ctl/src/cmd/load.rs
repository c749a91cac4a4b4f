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
    /// Load one switch of a leaf-spine fabric (docs/switch-interface.md, "Leaf-spine
    /// fabric"): LEAVES,SPINES, with the plan's workers spread evenly over the leaves (worker
    /// w on leaf w / (workers / LEAVES)). Needs --fabric-switch. The v1model program (bmv2,
    /// the software switch) has the roles; the TNA program does not.
    #[arg(
        long,
        value_name = "LEAVES,SPINES",
        requires = "fabric_switch",
        conflicts_with = "worker_ports"
    )]
    fabric: Option<String>,
    /// Which switch of --fabric this is: leaf:N or spine:N (spine:0 synchronises the
    /// blocks). Ports: a leaf's workers on ports 0.., then one uplink per spine; a spine's
    /// port l leads to leaf l.
    #[arg(long, value_name = "leaf:N|spine:N", requires = "fabric")]
    fabric_switch: Option<String>,
    /// The job value every SwitchGNN frame must carry while this plan runs (0..65535;
    /// default: a fresh random one per load). The switch drops frames of another job
    /// (`drop_foreign_job`), so a stale or foreign job's frames never mix into this one's
    /// sums; daemons learn it from the switch (or pin it with `sgnn-hostd --job`). Give the
    /// same value again to reload a switch under a running job.
    #[arg(long, value_name = "N")]
    job: Option<u16>,
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
    use switch_ctl::backend::P4RuntimeTarget;
    use switch_ctl::install::{install, sizes_of};
    use switch_ctl::program::{program_for, Deployment};
    let plan = Plan::load(&a.plan).with_context(|| format!("loading plan {}", a.plan.display()))?;
    // Checked before the switch is reached: a bad argument is the first thing to fix.
    let fabric = match (&a.fabric, &a.fabric_switch) {
        (Some(f), Some(sw)) => Some(parse_fabric(f, sw, plan.workers())?),
        _ => None,
    };
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
    dep.job = a
        .job
        .unwrap_or_else(sgnn_switch::config::Settings::fresh_job);
    let sizes = sizes_of(target.as_ref())?;
    let prog = match fabric {
        Some((fabric, switch)) => {
            if a.recirculation_port.is_none() {
                // One past the fabric's ports.
                dep.recirculation_port = match switch {
                    sgnn_switch::fabric::FabricSwitch::Leaf(_) => {
                        u32::from(fabric.uplink_port(fabric.spines))
                    }
                    sgnn_switch::fabric::FabricSwitch::Spine(_) => fabric.leaves,
                };
            }
            switch_ctl::program::program_for_fabric(&plan, &fabric, switch, &dep, &sizes)?
        }
        None => program_for(&plan, &dep, &sizes)?,
    };
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
        "loaded {}: {} workers, {} blocks, {} aggregation entries, {} operations in {:.2} s ({:.0} entries/s) into {} (job {})",
        a.plan.display(),
        workers,
        plan.blocks.len(),
        prog.agg_entries(),
        report.entries,
        report.seconds,
        report.rate(),
        t.target,
        dep.job
    );
    Ok(())
}

/// `--fabric LEAVES,SPINES` and `--fabric-switch leaf:N|spine:N` for a plan of `workers`.
fn parse_fabric(
    fabric: &str,
    switch: &str,
    workers: u32,
) -> Result<(
    sgnn_switch::fabric::Fabric,
    sgnn_switch::fabric::FabricSwitch,
)> {
    use sgnn_switch::fabric::{Fabric, FabricSwitch};
    let nums: Vec<u32> = fabric
        .split(',')
        .map(|x| x.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .ok()
        .filter(|v: &Vec<u32>| v.len() == 2)
        .with_context(|| format!("--fabric {fabric:?}: want LEAVES,SPINES, e.g. 8,8"))?;
    let f = Fabric::new(workers, nums[0], nums[1]).with_context(|| format!("--fabric {fabric}"))?;
    let (kind, n) = switch.split_once(':').with_context(|| {
        format!("--fabric-switch {switch:?}: want leaf:N or spine:N, e.g. leaf:0")
    })?;
    let n: u32 = n
        .parse()
        .with_context(|| format!("--fabric-switch {switch:?}: N is a number"))?;
    let sw = match kind {
        "leaf" if n < f.leaves => FabricSwitch::Leaf(n),
        "spine" if n < f.spines => FabricSwitch::Spine(n),
        "leaf" | "spine" => bail!(
            "--fabric-switch {switch}: the fabric has leaves 0..{} and spines 0..{}",
            f.leaves,
            f.spines
        ),
        _ => bail!("--fabric-switch {switch:?}: want leaf:N or spine:N"),
    };
    Ok((f, sw))
}
