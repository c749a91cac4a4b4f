//! Text summary and CSV of simulated runs.

use std::fmt::Write;

use crate::net::PS_PER_US;
use crate::{RunReport, Time};

/// Microseconds with three decimals, or `incomplete`.
pub fn fmt_time(t: Option<crate::Time>) -> String {
    match t {
        Some(t) => format!("{:.3}", t as f64 / PS_PER_US as f64),
        None => "incomplete".into(),
    }
}

/// How one simulated layer exchange becomes an epoch.
///
/// A full-graph GCN epoch of `layers` layers exchanges boundary features once per layer on
/// the forward pass and, on the backward pass, the gradients of every layer's input but the
/// first (the input features need none): `layers + (layers - 1)` exchanges, each of the same
/// volume on an undirected graph. The simulator runs one exchange; the epoch's communication
/// time is that time multiplied, plus a fixed `compute` time per epoch (the paper's section 6
/// adds the testbed's measured computation to NS3's communication). Every exchange is taken
/// to carry `--feature-dim` values per vertex; a model whose hidden layers are narrower
/// exchanges less after the first layer, so this is an upper bound for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epoch {
    /// GNN layers (at least 1).
    pub layers: u32,
    /// Count the backward pass's gradient exchanges.
    pub backward: bool,
    /// Computation per epoch, ps.
    pub compute: Time,
}

impl Default for Epoch {
    /// The paper's section 6: a 4-layer GCN, forward and backward, communication only.
    fn default() -> Self {
        Epoch {
            layers: 4,
            backward: true,
            compute: 0,
        }
    }
}

impl Epoch {
    /// Layer exchanges per epoch: `layers`, plus `layers - 1` backward.
    pub fn exchanges(&self) -> u32 {
        self.layers
            + if self.backward {
                self.layers.saturating_sub(1)
            } else {
                0
            }
    }

    /// Epoch time for a layer exchange of `layer` (`None` if the layer did not complete).
    pub fn time(&self, layer: Option<Time>) -> Option<Time> {
        layer.map(|t| t * self.exchanges() as Time + self.compute)
    }
}

/// Header of `runs.csv`.
pub const CSV_HEADER: &str = "strategy,complete,time_per_layer_us,total_bytes,upload_bytes,download_bytes,frames,dropped_frames,dropped_bytes,ecn_marked,max_queue_bytes,recirculations,events,wall_seconds,events_per_second,fetch_timeouts,fetch_requests,fetch_replies,block_done_resends,rate_decreases,bg_flows,bg_completed,bg_offered_bytes,bg_fct_mean_us,bg_fct_p99_us,approximate,layers,exchanges_per_epoch,compute_us,time_per_epoch_us,bg_cnps_sent,bg_cnps_received,bg_rate_decreases,predicted_us,generation_conflicts";

/// One `runs.csv` row; `epoch` turns the layer time into the epoch columns.
pub fn csv_row(r: &RunReport, epoch: &Epoch) -> String {
    let max_q = r
        .links
        .iter()
        .map(|l| l.stats.max_queue_bytes)
        .max()
        .unwrap_or(0);
    let h = &r.hosts;
    let bg = r.background.as_ref();
    let us = |t: Time| format!("{:.3}", t as f64 / PS_PER_US as f64);
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3},{:.0},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
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
        r.events_per_second(),
        h.fetch_timeouts,
        h.fetch_requests,
        h.fetch_replies,
        h.block_done_resends,
        h.rate_decreases,
        bg.map_or(0, |b| b.flows),
        bg.map_or(0, |b| b.completed),
        bg.map_or(0, |b| b.offered_bytes),
        bg.map_or(String::new(), |b| us(b.fct_mean)),
        bg.map_or(String::new(), |b| us(b.fct_p99)),
        r.approximate,
        epoch.layers,
        epoch.exchanges(),
        us(epoch.compute),
        epoch.time(r.time).map_or(String::new(), us),
        bg.map_or(0, |b| b.cnps_sent),
        bg.map_or(0, |b| b.cnps_received),
        bg.map_or(0, |b| b.rate_decreases),
        r.predicted
            .as_ref()
            .map_or(String::new(), |p| format!("{:.3}", p.time_us)),
        r.switch.as_ref().map_or(0, |s| s.generation_conflicts),
    )
}

/// Every host's rate changes (`strategy,host,time_us,gbps`), for runs with rate control; the
/// background flows' controllers (`--background-cc on`) under `STRATEGY/background`.
pub fn rates_csv(runs: &[RunReport]) -> String {
    let mut s = String::from("strategy,host,time_us,gbps\n");
    for r in runs {
        let bg = r.background.as_ref().map_or(&[][..], |b| &b.rates[..]);
        for (name, rates) in [
            (r.strategy.clone(), &r.rates[..]),
            (format!("{}/background", r.strategy), bg),
        ] {
            for (h, samples) in rates.iter().enumerate() {
                for &(t, bps) in samples {
                    writeln!(
                        s,
                        "{},{},{:.3},{}",
                        name,
                        h,
                        t as f64 / PS_PER_US as f64,
                        bps as f64 / 1e9
                    )
                    .unwrap();
                }
            }
        }
    }
    s
}

/// `exact`, or `APPROXIMATE` for approximate methods ([`crate::Strategy::approximate`]).
pub fn model_label(r: &RunReport) -> &'static str {
    if r.approximate {
        "APPROXIMATE"
    } else {
        "exact"
    }
}

/// The summary table of several runs (time per layer and per `epoch`), the switch counters,
/// and (if `links`) every link.
pub fn summary(header: &str, runs: &[RunReport], epoch: &Epoch, links: bool) -> String {
    let mut s = String::new();
    writeln!(s, "{header}").unwrap();
    writeln!(
        s,
        "epoch: {} layers, {} exchanges ({}), plus {} us computation",
        epoch.layers,
        epoch.exchanges(),
        if epoch.backward {
            "forward and backward"
        } else {
            "forward only"
        },
        fmt_time(Some(epoch.compute))
    )
    .unwrap();
    writeln!(
        s,
        "{:<18} {:<11} {:>16} {:>15} {:>16} {:>14} {:>14} {:>14} {:>9} {:>10} {:>12} {:>12} {:>12}",
        "strategy",
        "model",
        "time/layer (us)",
        "predicted (us)",
        "time/epoch (us)",
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
            "{:<18} {:<11} {:>16} {:>15} {:>16} {:>14} {:>14} {:>14} {:>9} {:>10} {:>12} {:>12} {:>12.0}",
            r.strategy,
            model_label(r),
            fmt_time(r.time),
            r.predicted
                .as_ref()
                .map_or("-".to_string(), |p| format!("{:.3}", p.time_us)),
            fmt_time(epoch.time(r.time)),
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
        if r.approximate {
            write!(
                s,
                "{} (APPROXIMATE model, see its module doc): ",
                r.strategy
            )
            .unwrap();
        } else {
            write!(s, "{}: ", r.strategy).unwrap();
        }
        if let Some(sw) = &r.switch {
            writeln!(
                s,
                "{} contributions, {} recirculation passes (max backlog {:.3} us), {} results, peak {} aggregators, {} stale, {} released at advance, {} BlockAdvance resends",
                sw.contributions,
                sw.recirculations,
                sw.max_recirc_backlog as f64 / PS_PER_US as f64,
                sw.results,
                sw.peak_aggregators,
                sw.stale,
                sw.released,
                sw.advance_resends
            )
            .unwrap();
            if sw.generation_conflicts > 0 {
                writeln!(
                    s,
                    "  RECYCLING CONFLICTS: {} contributions reached a recycled aggregator before its older generation completed (raise --recycle-slack; the time above treats them as free)",
                    sw.generation_conflicts
                )
                .unwrap();
            }
            if sw.leaf_partials + sw.spine_results > 0 {
                writeln!(
                    s,
                    "  two levels: {} results from leaves, {} partials leaf->spine, {} results from spines; peak aggregators per switch {:?}",
                    sw.leaf_results, sw.leaf_partials, sw.spine_results, sw.peak_aggregators_per_switch
                )
                .unwrap();
            }
        } else {
            writeln!(s, "switch forwards only").unwrap();
        }
        if let Some(f) = &r.failure {
            writeln!(s, "  INCOMPLETE: {f}").unwrap();
        }
        let h = &r.hosts;
        if r.overhead.is_some() {
            writeln!(
                s,
                "  daemons: {} fetch timeouts, {} fetch requests, {} answered, {} resend timeouts, {} RESEND frames, {} BlockDone resends, {} acks, {} cells by result, {} from raw values, {} duplicates, {} stale, {} ECN marks received, {} congestion notifications sent, {} received, {} rate halvings",
                h.fetch_timeouts,
                h.fetch_requests,
                h.fetch_replies,
                h.resend_timeouts,
                h.retransmissions,
                h.block_done_resends,
                h.acks,
                h.cells_by_result,
                h.cells_by_raw,
                h.duplicates,
                h.stale,
                h.ecn_signals,
                h.cnps_sent,
                h.cnps_received,
                h.rate_decreases
            )
            .unwrap();
        } else {
            writeln!(
            s,
            "  hosts: {} fetch timeouts, {} fetch requests, {} raw replies ({} new), {} cells by fetch, {} BlockDone resends, {} duplicates, {} stale, {} ECN signals, {} rate halvings",
            h.fetch_timeouts,
            h.fetch_requests,
            h.fetch_replies,
            h.fetched_new,
            h.cells_by_fetch,
            h.block_done_resends,
            h.duplicates,
            h.stale,
            h.ecn_signals,
            h.rate_decreases
        )
        .unwrap();
        }
        if let Some(b) = &r.background {
            writeln!(
                s,
                "  background (load {}): {} flows ({} completed), {} B offered, FCT mean {:.3} us, p99 {:.3} us",
                b.load,
                b.flows,
                b.completed,
                b.offered_bytes,
                b.fct_mean as f64 / PS_PER_US as f64,
                b.fct_p99 as f64 / PS_PER_US as f64
            )
            .unwrap();
            if b.cc {
                writeln!(
                    s,
                    "  background rate control: {} frames marked, {} CNPs sent, {} received, {} rate halvings",
                    b.ecn_marked, b.cnps_sent, b.cnps_received, b.rate_decreases
                )
                .unwrap();
            } else {
                writeln!(s, "  background open loop: {} frames marked", b.ecn_marked).unwrap();
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_is_forward_and_backward_exchanges_plus_computation() {
        let e = Epoch {
            layers: 4,
            backward: true,
            compute: 5,
        };
        assert_eq!(e.exchanges(), 7);
        assert_eq!(e.time(Some(100)), Some(705));
        assert_eq!(e.time(None), None);
        let fwd = Epoch {
            backward: false,
            ..e
        };
        assert_eq!(fwd.exchanges(), 4);
        assert_eq!(fwd.time(Some(100)), Some(405));
        let one = Epoch {
            layers: 1,
            backward: true,
            compute: 0,
        };
        assert_eq!(one.exchanges(), 1, "one layer has no backward exchange");
    }
}
