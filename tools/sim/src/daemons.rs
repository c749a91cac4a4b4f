//! The hosts' side of a run: options (rate control, recovery timeout, background traffic,
//! loss, verification) and counters. The hosts themselves are the daemons' engines
//! (`strategies::RealTraffic`).

use crate::background::BackgroundConfig;
use crate::cc::CcConfig;
use crate::net::{Time, PS_PER_US};
use sgnn_transport::Pacing;

/// Default recovery timeout (`--timeout-us`): the daemon's `--fetch-timeout-ms` and
/// `--advance-timeout-ms` defaults, 20 ms. A receiver cannot tell a slow block from a lost
/// frame, so a timeout shorter than the longest silence of a block (e.g. behind a long
/// recirculation backlog) fetches what was only late; lossy runs that want fast recovery set
/// a shorter one and check the fetch counters.
pub const DEFAULT_TIMEOUT: Time = 20_000 * PS_PER_US;

/// Host logic options of a run (what is not network or switch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DaemonOptions {
    /// Rate control of the strategies that have it (`switchgnn`; `switchgnn_no_cc` ignores
    /// it).
    pub cc: CcConfig,
    /// Planned pacing of the SwitchGNN workers (the daemon's `--pace`; the host-based
    /// baseline is never paced by a plan).
    pub pacing: Pacing,
    /// Loss-recovery timeout (`None`: no recovery, a lost frame leaves the layer incomplete).
    pub timeout: Option<Time>,
    /// Background flows next to the strategy.
    pub background: BackgroundConfig,
    /// The switch's drop simulator (the strategies the real code runs): the probability of
    /// dropping each SwitchGNN frame a worker sends, as the testbed's `--loss` does.
    pub loss: f64,
    /// On a leaf-spine: the probability of dropping each SwitchGNN frame one switch sends
    /// another (partials, spine Results, a leaf's BlockDone, the root's advance, frames
    /// forwarded between leaves), at the receiving switch. `loss` is the hosts' frames only,
    /// as on a star.
    pub fabric_loss: f64,
    /// Check every worker's sums against the single-process reference at the end (the
    /// strategies the real code runs; costs one pass over the graph's edges per feature).
    pub verify: bool,
}

impl Default for DaemonOptions {
    fn default() -> Self {
        DaemonOptions {
            cc: CcConfig::default(),
            pacing: Pacing::Planned,
            timeout: Some(DEFAULT_TIMEOUT),
            background: BackgroundConfig::default(),
            loss: 0.0,
            fabric_loss: 0.0,
            verify: false,
        }
    }
}

/// What the hosts of a run did besides their first transmissions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaemonCounters {
    /// Recovery timeouts that found something missing and fetched it.
    pub fetch_timeouts: u64,
    /// Fetch requests sent (one per missing contribution and segment).
    pub fetch_requests: u64,
    /// Raw frames sent in answer to fetch requests (retransmitted data).
    pub fetch_replies: u64,
    /// Raw frames received that were new (not already held).
    pub fetched_new: u64,
    /// Cells (destination, segment) completed from fetched raw values instead of a Result.
    pub cells_by_fetch: u64,
    /// BlockDone frames sent again after a timeout.
    pub block_done_resends: u64,
    /// Results or raw frames for something already complete (ignored).
    pub duplicates: u64,
    /// Frames of a block the host had already left (ignored).
    pub stale: u64,
    /// ECN-marked frames received.
    pub ecn_signals: u64,
    /// Congestion notifications sent by receivers of marked frames to their senders (the real
    /// code; `sgnn_wire::CNP`).
    pub cnps_sent: u64,
    /// Congestion notifications received (each a congestion signal for the receiver's rate
    /// control).
    pub cnps_received: u64,
    /// Rate halvings, all hosts.
    pub rate_decreases: u64,
    /// Data frames sent again because the switch NACKed them (the daemon's sender-driven
    /// recovery).
    pub retransmissions: u64,
    /// Tail probes sent again because the switch did not answer in time (the real code).
    pub resend_timeouts: u64,
    /// Acks sent (tail probes to the switch).
    pub acks: u64,
    /// Pulls of a missing Result sent to the switch (the real code; FetchReq frames answered
    /// by the switch, not a peer).
    pub pulls: u64,
    /// Cells (destination, segment) completed from a Result (the real code).
    pub cells_by_result: u64,
    /// Cells completed from raw values instead: fetched, bypassed or replicated (the real
    /// code; in the host-based mode, every cell).
    pub cells_by_raw: u64,
}

impl DaemonCounters {
    /// Frames sent for loss recovery (fetch requests, replies, BlockDone resends,
    /// retransmissions, pulls).
    pub fn recovery_frames(&self) -> u64 {
        self.fetch_requests
            + self.fetch_replies
            + self.block_done_resends
            + self.retransmissions
            + self.pulls
    }
}
