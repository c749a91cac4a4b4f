//! `switch-ctl dump`: prints what a running switch holds ([`switch_ctl::dump::Dump`]), as
//! text or as JSON.

use anyhow::Result;
use clap::Args;
use switch_ctl::dump::Dump;

use super::target::{connect, TargetArgs};

#[derive(Args)]
pub struct DumpArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Also list the entries of this table (agg_table, worker_table, port_worker,
    /// worker_addr, ipv4_forward, dscp_priority).
    #[arg(long, value_name = "NAME")]
    table: Option<String>,
    /// Print at most this many entries of --table.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Print the whole dump as JSON instead.
    #[arg(long)]
    json: bool,
}

/// Reads the switch of `--target` and prints the dump, as text or with `--json` as JSON.
pub fn run(a: &DumpArgs) -> Result<()> {
    let mut target = connect(&a.target)?;
    let dump = Dump::read(
        target.as_mut(),
        &a.target.target,
        a.table.as_deref(),
        a.limit,
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&dump.to_json())?);
    } else {
        print!("{dump}");
    }
    Ok(())
}
