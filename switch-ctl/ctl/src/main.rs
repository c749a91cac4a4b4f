//! `switch-ctl`: plans a SwitchGNN deployment, installs it into a switch and reads it back.
//!
//! This file is the command line's top level and the dispatch; each subcommand's flags and
//! output are in [`cmd`] (`cmd/plan.rs`, `cmd/show.rs`, ...), and what they compute is in the
//! libraries (`sgnn-planner`, `sgnn-plan` and this crate's `switch_ctl`).

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cmd::bench::BenchArgs;
use cmd::dump::DumpArgs;
use cmd::load::LoadArgs;
use cmd::plan::PlanArgs;
use cmd::show::ShowArgs;
use cmd::target::TargetArgs;

const ABOUT: &str = "SwitchGNN control plane: turns a graph into switch tables and host schedules.

A plan decides, once, everything the switch and the hosts need for in-network multicast and
aggregation (SwitchGNN paper, sections 3.2-3.3): which worker owns each vertex, how the
cross-partition edges are cut into blocks that fit the switch's aggregator memory, the order in
which each block's vertices are sent (graph-aware multicast reordering), and which aggregator
sums each destination's features.

Typical use:
  switch-ctl plan --graph rmat:scale=14,edge_factor=16 --workers 8 --switch-mem 10MB --out plan/
  switch-ctl plan --verify plan/
  switch-ctl show --plan plan/ --block 0";

#[derive(Parser)]
#[command(name = "switch-ctl", version, about = ABOUT, long_about = ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan a graph for M workers and a switch (or verify an existing plan with --verify DIR).
    ///
    /// Writes a plan directory (format documented in docs/formats.md): plan.json, the graph,
    /// the partition, per-block switch tables, per-worker schedules and report.json with the
    /// traffic model, which is also printed as a table.
    Plan(PlanArgs),
    /// Print a plan's summary, one block's switch table (--block) or one worker's schedule
    /// (--worker).
    Show(ShowArgs),
    /// Measure planning time and memory against a plain `gpmetis` k-way run on the same graph,
    /// and the scaling of every stage over graph sizes.
    Bench(BenchArgs),
    /// Install a plan into a running switch over P4Runtime: settings, workers, forwarding,
    /// priorities, the block-advance multicast group, the recirculation clone session and every
    /// block's aggregation entries.
    ///
    /// The target is bmv2 (`simple_switch_grpc --no-p4 -- --grpc-server-addr 127.0.0.1:9559`,
    /// then pass --p4info and --device-config to push the compiled program), a Tofino's
    /// P4Runtime server, or the software switch (`softswitch --p4runtime 127.0.0.1:9559 ...`).
    /// Checks that the switch runs the SwitchGNN P4 program (docs/switch-interface.md) and
    /// that the plan fits its sizes before writing anything.
    Load(LoadArgs),
    /// Print what a running switch holds: entries per table, settings, multicast group, event
    /// and port counters, and the block-synchronisation registers where readable.
    Dump(DumpArgs),
    /// Remove everything `load` installed and restore the initial settings.
    Clear(TargetArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(a) => cmd::plan::run(&a),
        Command::Show(a) => cmd::show::run(&a),
        Command::Bench(a) => cmd::bench::run(&a),
        Command::Load(a) => cmd::load::run(&a),
        Command::Dump(a) => cmd::dump::run(&a),
        Command::Clear(a) => cmd::clear::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
