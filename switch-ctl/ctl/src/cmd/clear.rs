//! `switch-ctl clear`: removes everything `load` installed and restores the initial settings.

use anyhow::Result;

use super::target::{connect, TargetArgs};

/// Clears the switch of `--target` and says how many entries went.
pub fn run(t: &TargetArgs) -> Result<()> {
    let mut target = connect(t)?;
    let n = switch_ctl::install::clear(target.as_mut())?;
    println!(
        "cleared {n} entries and restored the initial settings on {}",
        t.target
    );
    Ok(())
}
