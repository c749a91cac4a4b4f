//! Counters a worker keeps (written as JSON by `sgnn-hostd --stats-json`).

use serde::Serialize;

use crate::class::TrafficClass;

/// Packets and bytes of one class in one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// Frames.
    pub packets: u64,
    /// Frame bytes (Ethernet header to the end of the lanes, no FCS): the UDP payload.
    pub bytes: u64,
    /// Bytes on a link (FCS, padding, preamble and inter-frame gap added).
    pub wire_bytes: u64,
}

impl Traffic {
    /// Counts one frame of `len` bytes.
    pub fn add(&mut self, len: usize) {
        self.packets += 1;
        self.bytes += len as u64;
        self.wire_bytes += sgnn_wire::wire_bytes(len);
    }
}

/// Traffic per class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PerClass {
    /// Block control.
    pub control: Traffic,
    /// Results and acks.
    pub result: Traffic,
    /// Fetch and bypass.
    pub recovery: Traffic,
    /// Feature data.
    pub data: Traffic,
    /// Background.
    pub background: Traffic,
}

impl PerClass {
    /// The counter of `class`.
    pub fn get_mut(&mut self, class: TrafficClass) -> &mut Traffic {
        match class {
            TrafficClass::Control => &mut self.control,
            TrafficClass::Result => &mut self.result,
            TrafficClass::Recovery => &mut self.recovery,
            TrafficClass::Data => &mut self.data,
            TrafficClass::Background => &mut self.background,
        }
    }

    /// Sum over classes.
    pub fn total(&self) -> Traffic {
        let mut t = Traffic::default();
        for c in [
            self.control,
            self.result,
            self.recovery,
            self.data,
            self.background,
        ] {
            t.packets += c.packets;
            t.bytes += c.bytes;
            t.wire_bytes += c.wire_bytes;
        }
        t
    }
}

/// One propagation round as the worker saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RoundStats {
    /// Round number (the header's `round`).
    pub round: u16,
    /// Application layer index.
    pub layer: u32,
    /// `forward` or `backward`.
    pub direction: String,
    /// Feature values per vertex.
    pub dim: usize,
    /// Seconds from the start of the round to the sums being ready.
    pub seconds: f64,
    /// Wire bytes sent during the round.
    pub sent_wire_bytes: u64,
    /// Wire bytes received during the round.
    pub received_wire_bytes: u64,
    /// Cells (destination x segment) completed by a switch Result.
    pub cells_by_result: u64,
    /// Cells completed from raw contributions (bypass, fetch replies, baseline frames).
    pub cells_by_raw: u64,
}

/// Everything a worker counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Frames sent, per class.
    pub sent: PerClass,
    /// Frames received, per class.
    pub received: PerClass,
    /// Data frames sent again because the switch's NACK (or its answer to a tail probe) named
    /// them missing.
    pub retransmissions: u64,
    /// FetchReq frames sent.
    pub fetches_sent: u64,
    /// FetchReq frames answered (Bypass with RESEND sent to the requester).
    pub fetches_answered: u64,
    /// Times the fetch timer fired with incomplete cells.
    pub fetch_timeouts: u64,
    /// Tail probes sent again because the switch had not answered the last one in time.
    pub resend_timeouts: u64,
    /// BlockDone frames sent again because no BlockAdvance came.
    pub block_done_resent: u64,
    /// ECN-marked frames received (Results, raw frames, the switch's Acks).
    pub ecn_marks: u64,
    /// Congestion notifications sent to peers whose frames (or sums they fed) came marked.
    pub cnps_sent: u64,
    /// Congestion notifications received from peers (each a congestion signal).
    pub cnps_received: u64,
    /// Rate halvings.
    pub rate_decreases: u64,
    /// Results completing a cell.
    pub results_used: u64,
    /// Results for a cell already complete (late or duplicate): ignored.
    pub results_ignored: u64,
    /// Raw contributions taken: stored in the cache (SwitchGNN), or summed into their
    /// consumers and marked received (the baseline).
    pub raw_cached: u64,
    /// Raw contributions already in the cache (duplicates): ignored.
    pub raw_duplicate: u64,
    /// Start-barrier hellos and answers received from peers (`sgnn_wire::PEER_HELLO`).
    pub peer_hellos: u64,
    /// Probes sent while a block made no progress, to learn whether the switch restarted.
    pub health_probes: u64,
    /// Liveness hellos sent to peers while waiting (engine/liveness.rs).
    pub liveness_hellos: u64,
    /// Replicated raw vertex segments added into their local neighbours (a delivery plan's
    /// `M`, from the switch or a fetch).
    pub replicas_used: u64,
    /// Cells completed by a Result.
    pub cells_by_result: u64,
    /// Cells completed from raw contributions.
    pub cells_by_raw: u64,
    /// Acks sent: tail probes to the switch.
    pub acks_sent: u64,
    /// Acks received that this worker acted on: the switch's answers to its tail probes and
    /// its all-sent notices.
    pub acks_used: u64,
    /// NACK frames received from the switch (a Data frame that revealed a gap in this
    /// worker's numbers, or a tail probe's answer naming one).
    pub nacks: u64,
    /// Tail probes sent (after a block's last Data frame, and again on the resend timeout).
    pub tail_probes: u64,
    /// All-sent notices received from the switch (once per block: every worker's tail probe
    /// found nothing missing).
    pub all_sent: u64,
    /// Pulls sent to the switch (a FetchReq asking an aggregator for a missing Result).
    pub pulls: u64,
    /// Pull answers carrying the complete aggregate (its Result had been lost).
    pub pulled_results: u64,
    /// Pull answers carrying a partial aggregate (or nothing yet).
    pub pulled_partials: u64,
    /// Pull answers saying the aggregate is gone (the cell is completed from raw values).
    pub pulled_gone: u64,
    /// Cells given up on their aggregate although the all-sent notice had come (the switch
    /// holds every frame, yet the partial sum stopped growing): 0 unless a contribution was
    /// lost where recovery cannot see it (the switch lost state).
    pub given_up_after_all_sent: u64,
    /// Frames for an earlier block or round: ignored.
    pub stale: u64,
    /// Frames for the next round received before it started: buffered and replayed.
    pub early_buffered: u64,
    /// Frames that were not valid SwitchGNN frames.
    pub malformed: u64,
    /// Frames of another job than this worker's (`EngineConfig::job`): dropped unread.
    pub foreign_job: u64,
    /// Valid frames that make no sense for this plan or worker (wrong vertex, worker,
    /// fraction bits, count): dropped.
    pub unexpected: u64,
    /// Values clamped by the fixed-point encoder (|x| beyond the plan's range, or NaN).
    pub clamped_values: u64,
    /// Lanes that saturated while summing (never expected within the plan's range).
    pub saturated_lanes: u64,
    /// Block advances inferred from a frame of the next block (the BlockAdvance was lost).
    pub implicit_advances: u64,
    /// Rate samples `(seconds since start, Mbit/s)`.
    pub rate_mbps: Vec<(f64, f64)>,
    /// Per round.
    pub rounds: Vec<RoundStats>,
}
