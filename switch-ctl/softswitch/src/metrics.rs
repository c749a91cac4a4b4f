//! `softswitch --metrics ADDR`: the switch's counters in the Prometheus (OpenMetrics) text
//! format on `GET /metrics`, read from the pipeline at scrape time.
//!
//! The HTTP side is a thread on a `std::net::TcpListener` answering one request per
//! connection ([`serve_http`]); [`render`] locks the pipeline once per scrape, copies what it
//! needs and encodes after unlocking. [`MetricsPorts`] wraps the datapath (only with
//! `--metrics`) to make its send errors and backend counters readable from that thread.
//! The metric names are documented in docs/host.md ("Metrics").

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::pipeline::{Counters, Pipeline, PortCount};
use crate::ports::{DatapathStats, Ports};
use crate::tables::PortId;

pub use sgnn_netdev::metrics_http::CONTENT_TYPE;

/// Serves `GET /metrics` on `addr` from a thread, answering with `render()`
/// ([`sgnn_netdev::metrics_http::serve`]). Returns the bound address.
pub fn serve_http(
    addr: SocketAddr,
    render: impl Fn() -> String + Send + 'static,
) -> io::Result<SocketAddr> {
    sgnn_netdev::metrics_http::serve(addr, render)
}

/// What the datapath thread publishes for the metrics thread (only with `--metrics`).
#[derive(Debug, Default)]
pub struct Live {
    /// Sends and flushes that failed: the datapath's `tx_errors`, counted as `serve` does.
    pub tx_errors: AtomicU64,
    /// The backend's own counters ([`Ports::counters`]), refreshed at most every 100 ms.
    pub backend: Mutex<Vec<(String, u64)>>,
    /// `serve`'s own counters (queue drops, deepest queue, injected faults), as it last
    /// published them ([`Ports::publish`]).
    pub datapath: Mutex<DatapathStats>,
    /// Per host port, when it last received a frame: milliseconds after [`Live::since`] plus
    /// one (0: never). A dead worker's port falls silent while its peers' liveness hellos
    /// still go to it (`sgnn_switch_port_silent_seconds`).
    pub last_rx_ms: Vec<AtomicU64>,
    /// When the switch started serving.
    pub since: Option<Instant>,
}

impl Live {
    /// For a switch with `host_ports` worker ports, starting now.
    pub fn new(host_ports: usize) -> Live {
        Live {
            last_rx_ms: (0..host_ports).map(|_| AtomicU64::new(0)).collect(),
            since: Some(Instant::now()),
            ..Live::default()
        }
    }

    /// Milliseconds since [`Live::since`], plus one (the `last_rx_ms` of a frame now).
    fn now_ms(&self) -> u64 {
        self.since
            .map_or(0, |t0| t0.elapsed().as_millis() as u64 + 1)
    }

    /// `port` received a frame at `now_ms` ([`Live::now_ms`]).
    fn heard(&self, port: PortId, now_ms: u64) {
        if let Some(c) = self.last_rx_ms.get(port as usize) {
            c.store(now_ms, Ordering::Relaxed);
        }
    }
}

/// Refresh interval of [`Live::backend`].
const BACKEND_REFRESH: Duration = Duration::from_millis(100);

/// A datapath that counts its failed sends and flushes into a [`Live`] and copies the
/// backend's counters there now and then; otherwise it passes everything through.
pub struct MetricsPorts {
    inner: Box<dyn Ports>,
    live: Arc<Live>,
    refreshed: Instant,
}

impl MetricsPorts {
    /// Wraps `inner`, publishing into `live`.
    pub fn new(inner: Box<dyn Ports>, live: Arc<Live>) -> MetricsPorts {
        *live.backend.lock().expect("metrics lock") = inner.counters();
        MetricsPorts {
            inner,
            live,
            refreshed: Instant::now(),
        }
    }

    fn failed<T>(&self, r: io::Result<T>) -> io::Result<T> {
        if r.is_err() {
            self.live.tx_errors.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
}

impl Ports for MetricsPorts {
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<(PortId, usize)>> {
        let r = self.inner.recv(buf, timeout);
        if let Ok(Some((port, _))) = &r {
            self.live.heard(*port, self.live.now_ms());
        }
        r
    }

    fn send(&mut self, port: PortId, frame: &[u8]) -> io::Result<()> {
        let r = self.inner.send(port, frame);
        self.failed(r)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn recv_burst(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
        deliver: &mut dyn FnMut(PortId, &[u8]),
    ) -> io::Result<usize> {
        let live = &self.live;
        // One clock read per burst, not per frame: the metric counts milliseconds.
        let mut now = None;
        self.inner.recv_burst(buf, timeout, &mut |port, f| {
            live.heard(port, *now.get_or_insert_with(|| live.now_ms()));
            deliver(port, f)
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        if self.refreshed.elapsed() >= BACKEND_REFRESH {
            self.refreshed = Instant::now();
            let c = self.inner.counters();
            if !c.is_empty() {
                *self.live.backend.lock().expect("metrics lock") = c;
            }
        }
        self.failed(r)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.inner.counters()
    }

    fn publish(&mut self, stats: &DatapathStats) {
        *self.live.datapath.lock().expect("metrics lock") = stats.clone();
        self.inner.publish(stats)
    }
}

/// `(port, rx, tx, tx failed)` of one port.
type PortSample = (usize, PortCount, PortCount, PortCount);

/// What one scrape reads from the pipeline (copied under its lock).
struct Snapshot {
    counters: Counters,
    /// `(port, rx, tx)` of the host ports and of any other port that saw traffic.
    ports: Vec<PortSample>,
    aggregators: u32,
    busy: usize,
    workers: u16,
    blocks_per_round: u16,
    sync_round: u16,
    sync_block: u16,
    sync_count: u16,
    queue_depth: Vec<u32>,
}

impl Snapshot {
    fn take(p: &Pipeline, host_ports: usize) -> Snapshot {
        let ports = p
            .port_rx
            .iter()
            .zip(&p.port_tx)
            .zip(&p.port_tx_failed)
            .enumerate()
            .filter(|(i, ((rx, tx), failed))| {
                *i < host_ports || rx.packets > 0 || tx.packets > 0 || failed.packets > 0
            })
            .map(|(i, ((rx, tx), failed))| (i, *rx, *tx, *failed))
            .collect();
        Snapshot {
            counters: p.counters.clone(),
            ports,
            aggregators: p.config.aggregators,
            busy: p.busy_aggregators(),
            workers: p.config.workers,
            blocks_per_round: p.config.blocks_per_round,
            sync_round: p.regs.sync_round,
            sync_block: p.regs.sync_block,
            sync_count: p.regs.sync_count,
            queue_depth: p.queue_depth.clone(),
        }
    }
}

type Labels = Vec<(String, String)>;

fn label(k: &str, v: impl ToString) -> Labels {
    vec![(k.to_string(), v.to_string())]
}

fn counter(r: &mut Registry, name: &str, help: &str, v: u64) {
    let c: Counter = Counter::default();
    c.inc_by(v);
    r.register(name, help, c);
}

fn gauge(r: &mut Registry, name: &str, help: &str, v: i64) {
    let g: Gauge = Gauge::default();
    g.set(v);
    r.register(name, help, g);
}

/// The exposition of `pipeline` (locked once, briefly) with `host_ports` ports and, when
/// given, the datapath's [`Live`] counters.
pub fn render(pipeline: &Mutex<Pipeline>, host_ports: usize, live: Option<&Live>) -> String {
    let s = {
        let p = pipeline.lock().expect("pipeline lock");
        Snapshot::take(&p, host_ports)
    };
    let mut r = Registry::default();
    let events = Family::<Labels, Counter>::default();
    for (name, v) in Counters::NAMES.iter().zip(s.counters.to_array()) {
        events.get_or_create(&label("event", name)).inc_by(v);
    }
    r.register(
        "sgnn_switch_events",
        "Pipeline events and drops by reason (the P4 program's events counter; names as in the stats JSON)",
        events,
    );
    let per_port = |r: &mut Registry, name: &str, help: &str, f: &dyn Fn(&PortSample) -> u64| {
        let fam = Family::<Labels, Counter>::default();
        for p in &s.ports {
            fam.get_or_create(&label("port", p.0)).inc_by(f(p));
        }
        r.register(name, help, fam);
    };
    per_port(
        &mut r,
        "sgnn_switch_port_rx_frames",
        "Frames received per ingress port",
        &|p| p.1.packets,
    );
    per_port(
        &mut r,
        "sgnn_switch_port_rx_bytes",
        "Bytes of the frames received per ingress port",
        &|p| p.1.bytes,
    );
    per_port(
        &mut r,
        "sgnn_switch_port_tx_frames",
        "Frames sent per egress port",
        &|p| p.2.packets,
    );
    per_port(
        &mut r,
        "sgnn_switch_port_tx_bytes",
        "Bytes of the frames sent per egress port",
        &|p| p.2.bytes,
    );
    per_port(
        &mut r,
        "sgnn_switch_port_tx_failed_frames",
        "Frames the pipeline sent to a port that the datapath could not send (not in port_tx)",
        &|p| p.3.packets,
    );
    gauge(
        &mut r,
        "sgnn_switch_aggregators",
        "Aggregators the switch has (register array size)",
        s.aggregators as i64,
    );
    gauge(
        &mut r,
        "sgnn_switch_aggregators_busy",
        "Aggregators summing now (state active)",
        s.busy as i64,
    );
    gauge(
        &mut r,
        "sgnn_switch_workers",
        "Workers taking part in block synchronisation",
        s.workers as i64,
    );
    gauge(
        &mut r,
        "sgnn_switch_blocks_per_round",
        "Blocks per round of the loaded plan",
        s.blocks_per_round as i64,
    );
    gauge(
        &mut r,
        "sgnn_switch_sync_round",
        "Round being exchanged (sync_round register)",
        s.sync_round as i64,
    );
    gauge(
        &mut r,
        "sgnn_switch_sync_block",
        "Block being exchanged (sync_block register)",
        s.sync_block as i64,
    );
    gauge(
        &mut r,
        "sgnn_switch_sync_done_workers",
        "Workers that reported the current block done (sync_count register)",
        s.sync_count as i64,
    );
    if !s.queue_depth.is_empty() {
        let fam = Family::<Labels, Gauge>::default();
        for (p, d) in s.queue_depth.iter().enumerate() {
            fam.get_or_create(&label("port", p)).set(*d as i64);
        }
        r.register(
            "sgnn_switch_queue_depth",
            "Egress queue depth per port in frames, as the pipeline last saw it (with --port-rate)",
            fam,
        );
    }
    let dp = &live.map_or_else(DatapathStats::default, |l| {
        l.datapath.lock().expect("metrics lock").clone()
    });
    counter(
        &mut r,
        "sgnn_switch_queue_drops",
        "Frames dropped because their egress queue was full (with --port-rate)",
        dp.queue_drops,
    );
    gauge(
        &mut r,
        "sgnn_switch_max_queue_depth",
        "Deepest egress queue seen so far, frames (with --port-rate)",
        dp.max_queue_depth as i64,
    );
    let faults = Family::<Labels, Counter>::default();
    for (kind, v) in [
        ("dropped", dp.fault_dropped),
        ("duplicated", dp.fault_duplicated),
        ("reordered", dp.fault_reordered),
    ] {
        faults.get_or_create(&label("fault", kind)).inc_by(v);
    }
    r.register(
        "sgnn_switch_egress_faults",
        "Frames the egress fault injector dropped, sent twice or held back (--egress-loss, --egress-duplicate, --egress-reorder)",
        faults,
    );
    if let Some(live) = live {
        if live.since.is_some() {
            let now = live.now_ms();
            let silent = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
            for (port, c) in live.last_rx_ms.iter().enumerate() {
                let last = c.load(Ordering::Relaxed);
                // Never heard from: silent since the switch started.
                let ms = now.saturating_sub(last.max(1));
                silent
                    .get_or_create(&label("port", port))
                    .set(ms as f64 / 1e3);
            }
            r.register(
                "sgnn_switch_port_silent_seconds",
                "Seconds since each worker port last received a frame (a dead worker's port stays silent while its peers' liveness hellos go to it)",
                silent,
            );
        }
        counter(
            &mut r,
            "sgnn_switch_tx_errors",
            "Sends and flushes of the datapath that failed",
            live.tx_errors.load(Ordering::Relaxed),
        );
        let backend = live.backend.lock().expect("metrics lock").clone();
        if !backend.is_empty() {
            let fam = Family::<Labels, Gauge>::default();
            for (k, v) in backend {
                fam.get_or_create(&label("counter", k))
                    .set(v.min(i64::MAX as u64) as i64);
            }
            r.register(
                "sgnn_switch_datapath",
                "The datapath backend's own counters by name (DPDK, capture), refreshed every 100 ms",
                fam,
            );
        }
    }
    let mut out = String::new();
    encode(&mut out, &r).expect("encoding into a String");
    out
}
