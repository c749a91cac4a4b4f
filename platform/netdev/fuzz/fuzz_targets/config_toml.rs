//! Fuzzes the `--config FILE` reader of `sgnn-hostd` and `softswitch`
//! (`sgnn_netdev::cli_config::flags_of`, what `merged_args` runs on the file's text): it must
//! never panic or allocate more than the input can justify (alloc_limit.rs), and the command
//! line it makes must then go through a clap parser shaped like `sgnn-hostd`'s (typed values,
//! switches, repeated flags, `--` and EAL arguments) without a panic: a bad value is clap's
//! error, never a crash.
#![no_main]

use std::sync::OnceLock;

use clap::{CommandFactory, Parser};
use libfuzzer_sys::fuzz_target;
use sgnn_netdev::cli_config::flags_of;

#[path = "../../../../contract/graph/fuzz/fuzz_targets/alloc_limit.rs"]
mod alloc_limit;

#[global_allocator]
static ALLOC: alloc_limit::Limited = alloc_limit::Limited;

/// A parser with `sgnn-hostd`'s kinds of flags (its real `Args` is private to the binary).
#[derive(Parser, Debug)]
#[command(name = "sgnn-hostd", args_override_self = true)]
#[allow(dead_code)]
struct Args {
    #[arg(long)]
    plan: Option<std::path::PathBuf>,
    #[arg(long)]
    worker_id: Option<u32>,
    #[arg(long)]
    switch: Option<std::net::SocketAddr>,
    #[arg(long)]
    bind: Option<std::net::SocketAddr>,
    #[arg(long)]
    verify: bool,
    #[arg(long)]
    layers: Option<u32>,
    #[arg(long)]
    timeout: Option<f64>,
    #[arg(long, value_parser = ["udp", "af-packet", "dpdk"])]
    datapath: Option<String>,
    #[arg(long)]
    features: Vec<std::path::PathBuf>,
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    #[arg(last = true)]
    eal: Vec<String>,
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    static KNOWN: OnceLock<Vec<String>> = OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        Args::command()
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect()
    });
    if let Ok((flags, eal)) = flags_of(text, known, "sgnn-hostd") {
        let mut argv = vec!["sgnn-hostd".to_string()];
        argv.extend(flags);
        if !eal.is_empty() {
            argv.push("--".into());
            argv.extend(eal);
        }
        let _ = Args::try_parse_from(argv);
    }
});
