//! Loading the switch: the plan's tables, groups and settings installed over P4Runtime as
//! `switch-ctl load` does, after checking the switch runs this program (or pushing the
//! compiled P4 program first on bmv2); again after a restart (`--restart-switch-after`).

use std::path::Path;

use anyhow::Result;
use sgnn_plan::Plan;

use super::procs::binary;
use super::veth;

/// Installs the plan into the switch over P4Runtime, as `switch-ctl load` does (pushing the
/// compiled P4 program first on bmv2).
pub(super) fn load_switch(
    plan_dir: &Path,
    addr: &str,
    bmv2: bool,
    drop_prob: f64,
    out: &Path,
) -> Result<switch_ctl::backend::P4RuntimeTarget> {
    let plan = Plan::load(plan_dir)?;
    let expected = sgnn_p4rt::schema::switchgnn_p4info();
    let mut target = if bmv2 {
        let (p4info, json) = veth::compile_p4(out)?;
        switch_ctl::backend::P4RuntimeTarget::connect_and_install(
            addr,
            0,
            1,
            Default::default(),
            &p4info,
            json,
        )?
    } else {
        switch_ctl::backend::P4RuntimeTarget::connect(addr, 0, 1, &expected).map_err(|e| {
            let differs = matches!(e, switch_ctl::backend::TargetError::Mismatch { .. });
            let hint = if differs {
                let bin = binary("softswitch", "SGNN_SOFTSWITCH")
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| "softswitch".into());
                format!(
                    " (the software switch {bin} runs another version of the program than this sgnn: if you updated the sources, rebuild every binary with `cargo build --release --workspace`)"
                )
            } else {
                String::new()
            };
            anyhow::anyhow!("{e}{hint}")
        })?
    };
    install_plan(&mut target, &plan, addr, drop_prob)?;
    Ok(target)
}

/// Installs `plan`'s tables, groups and settings into a connected switch (`switch-ctl load`).
pub(super) fn install_plan(
    target: &mut switch_ctl::backend::P4RuntimeTarget,
    plan: &Plan,
    addr: &str,
    drop_prob: f64,
) -> Result<()> {
    use switch_ctl::install::{install, sizes_of};
    use switch_ctl::program::{program_for, Deployment};
    let mut dep = Deployment::standard(plan.workers());
    dep.drop_probability = drop_prob;
    // A fresh job value per load, as `switch-ctl load` chooses (sgnn_switch::admission): the
    // daemons learn it from their probes, and a switch loaded again mid-run is told apart.
    dep.job = sgnn_switch::config::Settings::fresh_job();
    let sizes = sizes_of(target)?;
    let prog = program_for(plan, &dep, &sizes)?;
    let r = install(target, &prog, 1000, &mut |_, _| {})?;
    eprintln!(
        "switch-ctl load: {} operations in {:.2} s ({:.0}/s) into {addr}",
        r.entries,
        r.seconds,
        r.rate()
    );
    Ok(())
}
