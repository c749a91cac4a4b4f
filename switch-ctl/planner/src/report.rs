//! `report.json`: what planning produced and what it cost, plus the traffic model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sgnn_delivery::ModeRow;
use sgnn_plan::model::GraphSummary;
use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::traffic::{StrategyTraffic, STRATEGIES};
use sgnn_plan::AggregateMode;
use sgnn_plan::{Partitioner, SendOrder};

use crate::units::fmt_bytes;

/// Partition quality.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PartitionStats {
    /// Undirected edges whose endpoints are on different workers.
    pub cross_edges: u64,
    /// `cross_edges / edges`.
    pub edge_cut_fraction: f64,
    /// Vertices with at least one remote neighbour.
    pub boundary_vertices: u64,
    /// Fewest vertices on one worker.
    pub min_worker_vertices: u64,
    /// Most vertices on one worker.
    pub max_worker_vertices: u64,
    /// Most remote vertices one worker needs (G3's balance objective).
    pub max_worker_remote_vertices: u64,
    /// Fewest remote vertices one worker needs.
    pub min_worker_remote_vertices: u64,
}

/// Blocks per level.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LevelStats {
    /// Level.
    pub level: u32,
    /// Blocks at this level.
    pub blocks: u64,
    /// Undirected edges served at this level.
    pub edges: u64,
}

/// The block structure.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BlockStats {
    /// Number of blocks.
    pub count: u64,
    /// Number of levels of the multi-level partitioning.
    pub levels: u32,
    /// Per level.
    pub per_level: Vec<LevelStats>,
    /// Most aggregators one block uses.
    pub peak_aggregators: u64,
    /// Aggregators the switch memory holds.
    pub switch_aggregators: u64,
    /// Destinations one block may hold.
    pub capacity_vertices: u64,
    /// Most passes of one source in one block.
    pub max_passes: u32,
    /// Recirculations per layer: every pass after a source's first.
    pub recirculations: u64,
    /// Source uploads per layer summed over blocks (a vertex in k blocks is sent k times).
    pub uploads: u64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Always `sgnn-plan-report`.
    pub format: String,
    /// Report layout version.
    pub version: u32,
    /// The graph.
    pub graph: GraphSummary,
    /// Workers.
    pub workers: u32,
    /// Partitioner used.
    pub partitioner: Partitioner,
    /// Send order used.
    pub order: SendOrder,
    /// Switch memory for aggregators, bytes.
    pub switch_mem_bytes: u64,
    /// Aggregator size, bytes.
    pub agg_bytes: u32,
    /// Feature dimension.
    pub feature_dim: u32,
    /// Aggregators per vertex.
    pub segments: u32,
    /// Partition quality.
    pub partition: PartitionStats,
    /// Blocks.
    pub blocks: BlockStats,
    /// How the plan delivers the sums (`switch-ctl plan --aggregate`): `paper`, `partials`,
    /// `multicast` or `auto`.
    /// The `switchgnn` entry of `traffic_bytes` and `blocks` are this delivery's.
    #[serde(default)]
    pub aggregate: AggregateMode,
    /// What the planner had to change from the request, in words (printed by `switch-ctl plan`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Seconds per planning stage, and `total`.
    pub planning_seconds: BTreeMap<String, f64>,
    /// Peak resident memory of the planning process, bytes (Linux VmHWM).
    pub peak_rss_bytes: u64,
    /// Bytes on the wire per layer, by strategy (see `sgnn_plan::traffic`).
    pub traffic_bytes: BTreeMap<String, StrategyTraffic>,
    /// The switch profile the predictions below assume (`switch-ctl plan --profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<SwitchProfile>,
    /// Predicted time of one layer's exchange per delivery mode (`sgnn_delivery`), in
    /// the order host_based, paper, multicast, partials, auto. The paper's row is a lower bound
    /// (`lower_bound`) unless the plan is the paper's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicted: Vec<ModeRow>,
}

impl Report {
    /// The predicted-time table printed by `switch-ctl plan` (empty without predictions).
    pub fn predicted_table(&self) -> String {
        let Some(base) = self.predicted.iter().find(|r| r.mode == "host_based") else {
            return String::new();
        };
        let base = base.prediction.time_us;
        let mut s = format!(
            "{:<11} {:>11} {:>10} {:>10} {:>10} {:>9} {:>7} {:>12} {:>11} {:>18} {:>11}\n",
            "mode",
            "predicted",
            "uplink",
            "downlink",
            "recirc",
            "barriers",
            "blocks",
            "bytes",
            "vs host",
            "pairs H/M/A/R/C",
            "link bound"
        );
        for r in &self.predicted {
            let p = &r.prediction;
            let speedup = if p.time_us > 0.0 {
                format!("{:.2}x", base / p.time_us)
            } else {
                "-".into()
            };
            // A lower bound reads `>=` before its time (`paper` without its blocks).
            let time = format!(
                "{}{:.1}us",
                if r.lower_bound { ">=" } else { "" },
                p.time_us
            );
            s += &format!(
                "{:<11} {:>11} {:>8.1}us {:>8.1}us {:>8.1}us {:>7.1}us {:>7} {:>12} {:>11} {:>18} {:>9.1}us\n",
                r.mode,
                time,
                p.uplink_us,
                p.downlink_us,
                p.recirc_us,
                p.barriers_us,
                p.blocks,
                fmt_bytes(r.total_bytes),
                speedup,
                if r.mode == "paper" || r.mode == "host_based" {
                    "-".to_string()
                } else {
                    let n = &p.pairs;
                    format!("{}/{}/{}/{}/{}", n[0], n[1], n[2], n[3], n[4])
                },
                p.bound_us
            );
        }
        if self.predicted.iter().any(|r| r.lower_bound) {
            s += "(>= a lower bound, its bytes too: the paper's multi-level blocks are planned only with --aggregate paper)\n";
        }
        s
    }

    /// The traffic table printed by `switch-ctl plan`.
    pub fn traffic_table(&self) -> String {
        let base = self
            .traffic_bytes
            .get("host_based")
            .map(|t| t.total)
            .unwrap_or(0);
        let mut s = format!(
            "{:<14} {:>12} {:>12} {:>12} {:>10} {:>13} {:>13} {:>9}\n",
            "strategy",
            "total",
            "upload",
            "download",
            "control",
            "max up/wkr",
            "max down/wkr",
            "vs host"
        );
        for name in STRATEGIES {
            let Some(t) = self.traffic_bytes.get(name) else {
                continue;
            };
            let rel = if base > 0 {
                format!("{:+.1}%", (t.total as f64 / base as f64 - 1.0) * 100.0)
            } else {
                "-".into()
            };
            s += &format!(
                "{:<14} {:>12} {:>12} {:>12} {:>10} {:>13} {:>13} {:>9}\n",
                name,
                fmt_bytes(t.total),
                fmt_bytes(t.upload),
                fmt_bytes(t.download),
                fmt_bytes(t.control),
                fmt_bytes(t.max_worker_uplink),
                fmt_bytes(t.max_worker_downlink),
                rel
            );
        }
        s
    }
}

/// Peak resident set size of this process (VmHWM), 0 where /proc is unavailable.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}
