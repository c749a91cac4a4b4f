//! `--metrics ADDR`: the daemon's counters in the Prometheus (OpenMetrics) text format on
//! `GET /metrics`. The session runs on the main thread; it publishes a [`Snapshot`] at hooks
//! (after the probe, after each round or request, every 100 ms while serving idle, at the
//! end) and the HTTP thread encodes the latest one at each scrape. Without `--metrics` there
//! is no publisher and each hook is one `Option` check. Metric names: docs/host.md.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sgnn_transport::datapath::Datapath;
use sgnn_transport::stats::{PerClass, Stats, Traffic};
use sgnn_transport::Session;

/// Most often [`Publisher::tick`] publishes.
const PERIOD: Duration = Duration::from_millis(100);

/// What the session loop last published.
struct Snapshot {
    stats: Stats,
    rate_mbps: f64,
    round: u16,
    block: Option<usize>,
    datapath: Vec<(&'static str, u64)>,
    at: Instant,
}

/// The session loop's side: publishes snapshots for the HTTP thread.
pub struct Publisher {
    shared: Arc<Mutex<Option<Snapshot>>>,
    last: Instant,
}

impl Publisher {
    /// Serves `addr` from a thread (port 0 picks a free port) and prints the bound address
    /// on stderr as `metrics on http://ADDR/metrics`.
    pub fn start(addr: SocketAddr, labels: Vec<(String, String)>) -> Result<Publisher> {
        let shared: Arc<Mutex<Option<Snapshot>>> = Arc::new(Mutex::new(None));
        let s = shared.clone();
        let bound = sgnn_netdev::metrics_http::serve(addr, move || {
            render(s.lock().expect("metrics lock").as_ref(), &labels)
        })
        .with_context(|| format!("serving metrics on {addr}"))?;
        eprintln!("metrics on http://{bound}/metrics");
        Ok(Publisher {
            shared,
            last: Instant::now(),
        })
    }

    /// Publishes the session's counters now.
    pub fn publish<D: Datapath>(&mut self, s: &Session<D>) {
        let mut stats = s.stats();
        // Time series that the exposition does not carry.
        stats.rate_mbps = Vec::new();
        let snap = Snapshot {
            stats,
            rate_mbps: s.engine().rate_mbps(),
            round: s.engine().round(),
            block: s.engine().block(),
            datapath: s.datapath().counters(),
            at: Instant::now(),
        };
        *self.shared.lock().expect("metrics lock") = Some(snap);
        self.last = Instant::now();
    }

    /// Publishes if the last snapshot is older than 100 ms.
    pub fn tick<D: Datapath>(&mut self, s: &Session<D>) {
        if self.last.elapsed() >= PERIOD {
            self.publish(s);
        }
    }
}

/// Publishes through `p` if there is one (the hook without `--metrics`: one check).
pub fn publish<D: Datapath>(p: &mut Option<Publisher>, s: &Session<D>) {
    if let Some(p) = p {
        p.publish(s);
    }
}

type Labels = Vec<(String, String)>;
/// One field of a [`Traffic`].
type Field = fn(&Traffic) -> u64;

/// Help of the `Stats` counters by field name; a field not listed here still becomes a
/// metric, with a generic help.
const HELP: &[(&str, &str)] = &[
    (
        "retransmissions",
        "Data frames sent again on a NACK from the switch",
    ),
    ("fetches_sent", "FetchReq frames sent"),
    (
        "fetches_answered",
        "FetchReq frames answered with a RESEND Bypass",
    ),
    (
        "fetch_timeouts",
        "Times the fetch timer fired with incomplete cells",
    ),
    (
        "resend_timeouts",
        "Tail probes sent again because the switch did not answer in time",
    ),
    (
        "block_done_resent",
        "BlockDone frames sent again because no BlockAdvance came",
    ),
    ("ecn_marks", "ECN-marked Results and Acks received"),
    ("rate_decreases", "Rate halvings on congestion"),
    ("results_used", "Results completing a cell"),
    (
        "results_ignored",
        "Results for a cell already complete (late or duplicate)",
    ),
    ("raw_cached", "Raw contributions stored in the cache"),
    (
        "raw_duplicate",
        "Raw contributions already in the cache (duplicates)",
    ),
    ("cells_by_result", "Cells completed by a switch Result"),
    ("cells_by_raw", "Cells completed from raw contributions"),
    ("acks_sent", "Acks sent (tail probes)"),
    (
        "acks_used",
        "Tail-probe answers and all-sent notices acted on",
    ),
    ("nacks", "NACK frames received from the switch"),
    ("tail_probes", "Tail probes sent to the switch"),
    ("all_sent", "All-sent notices received from the switch"),
    ("pulls", "Pulls of a missing Result sent to the switch"),
    (
        "pulled_results",
        "Pull answers carrying the complete aggregate",
    ),
    (
        "pulled_partials",
        "Pull answers carrying a partial aggregate",
    ),
    ("pulled_gone", "Pull answers saying the aggregate is gone"),
    ("stale", "Frames for an earlier block or round, ignored"),
    (
        "early_buffered",
        "Frames for the next round buffered before it started",
    ),
    ("malformed", "Frames that were not valid SwitchGNN frames"),
    (
        "foreign_job",
        "Frames of another job than this worker's, dropped unread",
    ),
    (
        "unexpected",
        "Valid frames that make no sense for this plan or worker, dropped",
    ),
    (
        "clamped_values",
        "Values clamped by the fixed-point encoder",
    ),
    ("saturated_lanes", "Lanes that saturated while summing"),
    (
        "implicit_advances",
        "Block advances inferred from a frame of the next block",
    ),
];

fn classes(p: &PerClass) -> [(&'static str, Traffic); 5] {
    [
        ("control", p.control),
        ("result", p.result),
        ("recovery", p.recovery),
        ("data", p.data),
        ("background", p.background),
    ]
}

fn gauge(r: &mut Registry, name: &str, help: &str, v: i64) {
    let g: Gauge = Gauge::default();
    g.set(v);
    r.register(name, help, g);
}

/// The exposition of `snap` (before the first snapshot: the info metric only).
fn render(snap: Option<&Snapshot>, labels: &Labels) -> String {
    let mut r = Registry::default();
    let info = Family::<Labels, Gauge>::default();
    info.get_or_create(labels).set(1);
    r.register(
        "sgnn_host_info",
        "This daemon: worker id, mode and datapath (value 1)",
        info,
    );
    if let Some(s) = snap {
        for (dir, per) in [("sent", &s.stats.sent), ("received", &s.stats.received)] {
            let fams: [(&str, &str, Field); 3] = [
                ("frames", "Frames", |t| t.packets),
                (
                    "bytes",
                    "Frame bytes (Ethernet header to the end of the lanes)",
                    |t| t.bytes,
                ),
                (
                    "wire_bytes",
                    "Bytes on a link (FCS, padding, preamble and gap added)",
                    |t| t.wire_bytes,
                ),
            ];
            for (what, help, f) in fams {
                let fam = Family::<Labels, Counter>::default();
                for (class, t) in classes(per) {
                    fam.get_or_create(&vec![("class".to_string(), class.to_string())])
                        .inc_by(f(&t));
                }
                r.register(
                    format!("sgnn_host_{dir}_{what}"),
                    format!("{help} {dir}, per traffic class"),
                    fam,
                );
            }
        }
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&s.stats) {
            for (k, v) in m {
                let Some(v) = v.as_u64() else { continue };
                let help = HELP
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map_or_else(|| format!("The stats JSON's `{k}`"), |(_, h)| h.to_string());
                let c: Counter = Counter::default();
                c.inc_by(v);
                r.register(format!("sgnn_host_{k}"), help, c);
            }
        }
        let c: Counter = Counter::default();
        c.inc_by(s.stats.rounds.len() as u64);
        r.register("sgnn_host_rounds", "Rounds (layers) completed", c);
        let g = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        g.set(s.rate_mbps);
        r.register(
            "sgnn_host_rate_mbps",
            "Current send rate of the rate controller, Mbit/s on the wire",
            g,
        );
        gauge(
            &mut r,
            "sgnn_host_round",
            "The round running, or the next one when idle",
            s.round as i64,
        );
        gauge(
            &mut r,
            "sgnn_host_block",
            "The block being exchanged (SwitchGNN; -1 between rounds and in host-based mode)",
            s.block.map_or(-1, |b| b as i64),
        );
        let g = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        g.set(s.at.elapsed().as_secs_f64());
        r.register(
            "sgnn_host_snapshot_age_seconds",
            "Seconds since the session published these values",
            g,
        );
        if !s.datapath.is_empty() {
            let fam = Family::<Labels, Gauge>::default();
            for (k, v) in &s.datapath {
                fam.get_or_create(&vec![("counter".to_string(), k.to_string())])
                    .set((*v).min(i64::MAX as u64) as i64);
            }
            r.register(
                "sgnn_host_datapath",
                "The datapath's own counters by name (as `datapath` in the stats JSON)",
                fam,
            );
        }
    }
    let mut out = String::new();
    encode(&mut out, &r).expect("encoding into a String");
    out
}
