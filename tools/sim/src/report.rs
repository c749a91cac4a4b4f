//! Text summary and CSV of simulated runs.

use std::fmt::Write;

use crate::net::PS_PER_US;
use crate::RunReport;

/// Microseconds with three decimals, or `incomplete`.
pub fn fmt_time(t: Option<crate::Time>) -> String {
    match t {
        Some(t) => format!("{:.3}", t as f64 / PS_PER_US as f64),
        None => "incomplete".into(),
    }
}

/// Header of `runs.csv`.
pub const CSV_HEADER: &str = "strategy,complete,time_per_layer_us,total_bytes,upload_bytes,download_bytes,frames,dropped_frames,dropped_bytes,ecn_marked,max_queue_bytes,recirculations,events,wall_seconds,events_per_second";

/// One `runs.csv` row.
pub fn csv_row(r: &RunReport) -> String {
    let max_q = r
        .links
        .iter()
        .map(|l| l.stats.max_queue_bytes)
        .max()
        .unwrap_or(0);
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3},{:.0}",
        r.strategy,
        r.time.is_some(),
        r.time
            .map_or(String::new(), |t| format!("{:.3}", t as f64 / 1e6)),
        r.total_bytes(),
        r.host_uplink.iter().sum::<u64>(),
        r.host_downlink.iter().sum::<u64>(),
        r.links.iter().map(|l| l.stats.frames).sum::<u64>(),
        r.net.dropped_frames,
        r.net.dropped_bytes,
        r.ecn_marked(),
        max_q,
        r.switch.as_ref().map_or(0, |s| s.recirculations),
        r.net.events,
        r.wall_seconds,
        r.events_per_second()
    )
}

/// The summary table of several runs, the switch counters, and (if `links`) every link.
pub fn summary(header: &str, runs: &[RunReport], links: bool) -> String {
    let mut s = String::new();
    writeln!(s, "{header}").unwrap();
    writeln!(
        s,
        "{:<12} {:>16} {:>14} {:>14} {:>14} {:>9} {:>10} {:>12} {:>12} {:>12}",
        "strategy",
        "time/layer (us)",
        "total bytes",
        "upload",
        "download",
        "dropped",
        "ecn marks",
        "max queue B",
        "events",
        "events/s"
    )
    .unwrap();
    for r in runs {
        let max_q = r
            .links
            .iter()
            .map(|l| l.stats.max_queue_bytes)
            .max()
            .unwrap_or(0);
        writeln!(
            s,
            "{:<12} {:>16} {:>14} {:>14} {:>14} {:>9} {:>10} {:>12} {:>12} {:>12.0}",
            r.strategy,
            fmt_time(r.time),
            r.total_bytes(),
            r.host_uplink.iter().sum::<u64>(),
            r.host_downlink.iter().sum::<u64>(),
            r.net.dropped_frames,
            r.ecn_marked(),
            max_q,
            r.net.events,
            r.events_per_second()
        )
        .unwrap();
    }
    for r in runs {
        writeln!(s).unwrap();
        write!(s, "{}: ", r.strategy).unwrap();
        if let Some(sw) = &r.switch {
            writeln!(
                s,
                "{} contributions, {} recirculation passes (max backlog {:.3} us), {} results, peak {} aggregators, {} stale",
                sw.contributions,
                sw.recirculations,
                sw.max_recirc_backlog as f64 / PS_PER_US as f64,
                sw.results,
                sw.peak_aggregators,
                sw.stale
            )
            .unwrap();
        } else {
            writeln!(s, "switch forwards only").unwrap();
        }
        if !links {
            continue;
        }
        writeln!(
            s,
            "  {:<10} {:>14} {:>10} {:>9} {:>10} {:>12}",
            "link", "bytes", "frames", "dropped", "ecn", "max queue B"
        )
        .unwrap();
        for l in &r.links {
            writeln!(
                s,
                "  {:<10} {:>14} {:>10} {:>9} {:>10} {:>12}",
                format!("{}->{}", l.from, l.to),
                l.stats.bytes,
                l.stats.frames,
                l.stats.dropped_frames,
                l.stats.ecn_marked,
                l.stats.max_queue_bytes
            )
            .unwrap();
        }
    }
    s
}

/// Per-link rows (`strategy,from,to,bytes,frames,dropped_frames,dropped_bytes,ecn_marked,max_queue_bytes`).
pub fn links_csv(runs: &[RunReport]) -> String {
    let mut s = String::from(
        "strategy,from,to,bytes,frames,dropped_frames,dropped_bytes,ecn_marked,max_queue_bytes\n",
    );
    for r in runs {
        for l in &r.links {
            writeln!(
                s,
                "{},{},{},{},{},{},{},{},{}",
                r.strategy,
                l.from,
                l.to,
                l.stats.bytes,
                l.stats.frames,
                l.stats.dropped_frames,
                l.stats.dropped_bytes,
                l.stats.ecn_marked,
                l.stats.max_queue_bytes
            )
            .unwrap();
        }
    }
    s
}

/// Header of `series.csv` (one row per strategy and sample; see `tools/sim/README.md`).
pub fn series_csv_header() -> String {
    let mut h = String::from(
        "strategy,t_us,interval_us,queue_max_bytes,queue_sum_bytes,queue_peak_bytes,\
         aggregators_in_use,contributions,contributions_per_s,delivered_bytes,delivered_gbps",
    );
    for i in 1..=crate::net::TOP_QUEUES {
        write!(h, ",top{i}_link,top{i}_bytes").unwrap();
    }
    h
}

/// `series.csv`: every sample of every run, times in microseconds (6 decimals: exact to the
/// picosecond), rates over the sample's interval.
pub fn series_csv(runs: &[RunReport]) -> String {
    let mut s = series_csv_header();
    s.push('\n');
    let us = |t: crate::Time| format!("{:.6}", t as f64 / PS_PER_US as f64);
    for r in runs {
        for x in &r.series {
            write!(
                s,
                "{},{},{},{},{},{},{},{},{:.0},{},{:.3}",
                r.strategy,
                us(x.t),
                us(x.interval),
                x.queue_max_bytes,
                x.queue_sum_bytes,
                x.queue_peak_bytes,
                x.aggregators_in_use,
                x.contributions,
                x.contributions_per_s(),
                x.delivered_bytes,
                x.delivered_bps() / 1e9
            )
            .unwrap();
            for i in 0..crate::net::TOP_QUEUES {
                match x.top_queues.get(i) {
                    Some(&(c, b)) => {
                        let l = &r.links[c as usize];
                        write!(s, ",{}->{},{}", l.from, l.to, b).unwrap();
                    }
                    None => s.push_str(",,"),
                }
            }
            s.push('\n');
        }
    }
    s
}
