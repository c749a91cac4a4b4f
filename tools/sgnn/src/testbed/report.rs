//! The report of a testbed run: the table of runs side by side and each run's links and
//! memory on stderr, `report.json` in the output directory, and the summary that follows
//! `verified:` on the last line.

use anyhow::Result;
use serde_json::{json, Value};

use super::run::ModeRun;
use super::tcp::{self, TcpRun};
use super::TestbedArgs;

/// Prints the table (with the TCP reference row last, where it ran), the links and the
/// memory of `runs` (whose plans have `blocks` blocks each, run by run), writes `report.json`
/// with `checked` values verified, and returns the summary.
pub(super) fn report(
    a: &TestbedArgs,
    cores: u32,
    runs: &[ModeRun],
    reference: Option<&TcpRun>,
    blocks: &[usize],
    checked: u64,
) -> Result<String> {
    eprintln!("\n{}", table(runs, reference));
    for r in runs {
        eprintln!("{} links: {}", r.mode, links(r));
    }
    for r in runs {
        eprintln!(
            "{} memory MiB (after 1 s -> at the end): {}",
            r.mode,
            memory(r)
        );
    }
    for r in runs {
        let c = cpu(r);
        if !c.is_empty() {
            eprintln!(
                "{} exchange CPU seconds (frames in and out per CPU-second): {c}",
                r.mode
            );
        }
    }
    let rows: Vec<Value> = runs.iter().zip(blocks).map(|(r, &b)| row(r, b)).collect();
    let mut report = json!({
        "graph": a.graph,
        "workers": a.workers / cores,
        "cores": cores,
        "feature_dim": a.feature_dim * cores,
        "layers": a.layer_count(),
        "blocks": blocks[0],
        "loss": a.loss, "reorder": a.reorder, "duplicate": a.duplicate,
        "values_checked": checked,
        "runs": rows,
    });
    if let Some(t) = reference {
        report["tcp_all_to_all"] = tcp_row(t);
    }
    let rp = a.out.join("report.json");
    std::fs::write(&rp, serde_json::to_string_pretty(&report)? + "\n")?;
    eprintln!("report: {}", rp.display());
    Ok(summary(a, cores, runs, reference, checked))
}

fn mb(b: u64) -> String {
    format!("{:.2} MB", b as f64 / 1e6)
}

/// One line per run: time, time per layer, bytes on the links, frames into the switch, and
/// the workers' retransmissions, fetches and ECN marks (the header line first).
fn table(runs: &[ModeRun], reference: Option<&TcpRun>) -> String {
    let mut table = String::new();
    table += &format!(
        "{:<18} {:>9} {:>12} {:>12} {:>10} {:>8} {:>8} {:>8}\n",
        "mode", "time", "ms/layer", "link bytes", "switch rx", "retx", "fetches", "ecn"
    );
    for r in runs {
        table += &format!(
            "{:<18} {:>8.2}s {:>12.1} {:>12} {:>10} {:>8} {:>8} {:>8}\n",
            r.mode,
            r.seconds,
            r.ms_per_layer(),
            mb(r.link_total()),
            r.switch["rx"].as_u64().unwrap_or(0),
            r.worker_sum("retransmissions"),
            r.worker_sum("fetches_sent"),
            r.worker_sum("ecn_marks"),
        );
    }
    if let Some(t) = reference {
        table += &format!(
            "{:<18} {:>8.2}s {:>12.1} {:>12} {:>10} {:>8} {:>8} {:>8}\n",
            tcp::MODE,
            t.seconds,
            t.ms_per_layer(),
            mb(t.link_total()),
            "-",
            "-",
            "-",
            "-",
        );
    }
    table
}

/// The TCP reference's entry in `report.json` (`tcp_all_to_all`): its times, the bytes every
/// worker sent each peer per round (`pair_bytes_per_round[w][p]`), their total over the run
/// (`payload_bytes`: host-based's first transmissions), and per worker the bytes up and down
/// (`link_bytes`: both, as the switch counts a star's links).
fn tcp_row(t: &TcpRun) -> Value {
    json!({
        "mode": tcp::MODE,
        "seconds": t.seconds,
        "round_seconds": t.round_seconds,
        "ms_per_layer": t.ms_per_layer(),
        "pair_bytes_per_round": t.pair_bytes,
        "payload_bytes_per_round": t.bytes_per_round(),
        "payload_bytes": t.payload_bytes(),
        "link_bytes_up": t.up(),
        "link_bytes_down": t.down(),
        "link_bytes": t.link_total(),
    })
}

/// A run's entry in `report.json`'s `runs`.
fn row(r: &ModeRun, blocks: usize) -> Value {
    json!({
        "mode": r.mode,
        "blocks": blocks,
        "seconds": r.seconds,
        "round_seconds": r.round_seconds,
        "ms_per_layer": r.ms_per_layer(),
        "link_bytes_up": r.link_bytes(sgnn_switch::counters::PORT_RX.name),
        "link_bytes_down": r.link_bytes(sgnn_switch::counters::PORT_TX.name),
        "retransmissions": r.worker_sum("retransmissions"),
        "fetches": r.worker_sum("fetches_sent"),
        "nacks": r.worker_sum("nacks"),
        "pulls": r.worker_sum("pulls"),
        "tail_probes_resent": r.worker_sum("resend_timeouts"),
        "ecn_marks": r.worker_sum("ecn_marks"),
        "switch": r.switch,
        "cpu": r.cpu().iter().map(|(n, c, f)| json!({"process": n, "exchange_cpu_seconds": c, "frames": f})).collect::<Vec<_>>(),
        "rss_kib": r.rss.iter().map(|(n, f, l, m)| json!({"process": n, "first": f, "last": l, "max": m})).collect::<Vec<_>>(),
    })
}

/// `w0 up X MB down Y MB, w1 ...`.
fn links(r: &ModeRun) -> String {
    let up = r.link_bytes(sgnn_switch::counters::PORT_RX.name);
    let down = r.link_bytes(sgnn_switch::counters::PORT_TX.name);
    let links: Vec<String> = (0..up.len())
        .map(|w| format!("w{w} up {} down {}", mb(up[w]), mb(down[w])))
        .collect();
    links.join(", ")
}

/// `switch 0.21 (245 k/s), w0 0.05 (180 k/s), ...`: each process's CPU seconds and the
/// frames it received and sent per CPU-second.
fn cpu(r: &ModeRun) -> String {
    r.cpu()
        .iter()
        .map(|(n, c, f)| {
            let rate = if *c > 0.0 {
                format!("{:.0} k/s", *f as f64 / c / 1e3)
            } else {
                "-".into()
            };
            format!("{n} {c:.2} ({rate})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every process's memory in MiB, then the switch's aggregators left in use where it counts
/// them (the software switch).
fn memory(r: &ModeRun) -> String {
    let mem: Vec<String> = r
        .rss
        .iter()
        .map(|(n, f, l, m)| {
            format!(
                "{n} {:.1}->{:.1} (max {:.1})",
                *f as f64 / 1024.0,
                *l as f64 / 1024.0,
                *m as f64 / 1024.0
            )
        })
        .collect();
    let aggs = match (
        r.switch["busy_aggregators"].as_u64(),
        r.switch["stale_aggregators"].as_u64(),
    ) {
        (Some(b), Some(s)) => format!("; aggregators left busy {b}, stale {s}"),
        _ => String::new(),
    };
    format!("{}{aggs}", mem.join(", "))
}

/// What follows `verified:`: the rounds checked, then each run's time per layer and bytes,
/// the TCP reference's last.
fn summary(
    a: &TestbedArgs,
    cores: u32,
    runs: &[ModeRun],
    reference: Option<&TcpRun>,
    checked: u64,
) -> String {
    let sg = &runs[0];
    let workers = if cores > 1 {
        format!(
            "{} workers ({} x {cores} cores)",
            a.workers,
            a.workers / cores
        )
    } else {
        format!("{} workers", a.workers)
    };
    let mut summary = format!(
        "{} x {} rounds exact ({} values); {} {:.1} ms/layer, {} on links",
        workers,
        2 * a.layer_count(),
        checked,
        sg.mode,
        sg.ms_per_layer(),
        mb(sg.link_total())
    );
    for r in &runs[1..] {
        summary += &format!(
            "; {} {:.1} ms/layer, {}",
            r.mode,
            r.ms_per_layer(),
            mb(r.link_total())
        );
    }
    if let Some(t) = reference {
        summary += &format!(
            "; {} {:.1} ms/layer, {}",
            tcp::MODE,
            t.ms_per_layer(),
            mb(t.link_total())
        );
    }
    summary
}
