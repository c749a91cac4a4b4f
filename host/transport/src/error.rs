//! Errors of the transport: [`TransportError`] and, one per kind of failure, the variants of
//! its groups ([`UnusablePlan`], [`BadInput`], [`WrongState`], [`ProtocolError`], [`Stall`]).
//! Each variant carries the data a caller would match on; its text
//! ([`Display`](std::fmt::Display)) is the message for the user and says what to fix.

use std::fmt;

use crate::engine::{Direction, Layer};
use sgnn_wire::LANES;

/// Everything that can stop a worker.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The plan cannot be used by this worker (wrong worker id, inconsistent files, too small
    /// for the requested feature size, ...).
    #[error(transparent)]
    Plan(#[from] UnusablePlan),
    /// The plan directory could not be read.
    #[error(transparent)]
    PlanIo(#[from] sgnn_plan::PlanError),
    /// The application passed features that do not fit the plan or the round.
    #[error(transparent)]
    BadInput(#[from] BadInput),
    /// An operation was called in a state where it makes no sense (e.g. a second round
    /// started while one is running).
    #[error(transparent)]
    State(#[from] WrongState),
    /// The switch or a peer sent something that only a different plan or a misconfigured
    /// testbed produces.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// Nothing moved for longer than the stall timeout; the variant says what the worker was
    /// waiting for and from whom.
    #[error(transparent)]
    Stalled(#[from] Stall),
    /// A peer answered none of this worker's liveness hellos for
    /// `EngineConfig::liveness_ns` while this worker waited: it is dead or cut off.
    #[error("worker {me}: worker {worker} is not answering: no answer to the liveness hellos sent to it over {asked_s:.1} s ({}) while this worker waited ({doing}): its daemon died or its link to the switch is down. Stop every worker and start the job again", last_heard(*.last_heard_s))]
    PeerSilent {
        /// This worker.
        me: u16,
        /// The silent peer.
        worker: u16,
        /// Seconds since the first unanswered hello.
        asked_s: f64,
        /// Seconds since anything was heard from the peer (`None`: never).
        last_heard_s: Option<f64>,
        /// Where this worker was ([`Engine::describe`](crate::Engine::describe)).
        doing: String,
    },
    /// The datapath failed.
    #[error("datapath: {0}")]
    Io(#[from] std::io::Error),
}

/// Why a plan cannot be used by this worker (`WorkerView::new`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnusablePlan {
    /// The worker id is not one of the plan's.
    #[error("worker id {worker} is not in this plan: it has {workers} workers (ids 0..={}); pass a --worker-id below {workers} or use a plan made with --workers {}", .workers.saturating_sub(1), .worker + 1)]
    WorkerNotInPlan {
        /// The worker id given.
        worker: u32,
        /// Workers of the plan.
        workers: u32,
    },
    /// More workers than the Worker_id field can name.
    #[error("the plan has {workers} workers but the Worker_id field holds 65536")]
    TooManyWorkers {
        /// Workers of the plan.
        workers: u32,
    },
    /// `partition.npy` and the graph disagree on the number of vertices.
    #[error("partition.npy has {entries} entries but the graph has {vertices} vertices: the plan is inconsistent, re-run `switch-ctl plan`")]
    PartitionLength {
        /// Entries of `partition.npy`.
        entries: usize,
        /// Vertices of the graph.
        vertices: usize,
    },
    /// A block's source that is neither a vertex nor a partial.
    #[error("block {block}: source {src} is neither a vertex (n = {vertices}) nor one of the plan's {partials} partials; run `switch-ctl plan --verify`")]
    UnknownSource {
        /// The block.
        block: usize,
        /// The source.
        src: u32,
        /// Vertices of the graph.
        vertices: usize,
        /// Partials of the plan.
        partials: usize,
    },
    /// A source feeding an aggregator row the block does not have.
    #[error("block {block}: source {src} feeds aggregator row {row}, beyond the block's {rows} rows; run `switch-ctl plan --verify`")]
    RowOutOfRange {
        /// The block.
        block: usize,
        /// The source.
        src: u32,
        /// The row it feeds.
        row: u32,
        /// Rows of the block.
        rows: usize,
    },
    /// A vertex replicated to a worker that holds none of its neighbours.
    #[error("block {block}: vertex {vertex} is replicated to worker {worker}, which holds none of its neighbours; run `switch-ctl plan --verify`")]
    UselessReplica {
        /// The block.
        block: usize,
        /// The replicated vertex.
        vertex: u32,
        /// The worker it is replicated to.
        worker: u32,
    },
    /// A local edge (source and destination on the same worker) in a block.
    #[error("block {block}: vertex {src} feeds {dst} on its own worker {worker} through the switch; local edges must not be in blocks (run `switch-ctl plan --verify`)")]
    LocalEdgeInBlock {
        /// The block.
        block: usize,
        /// The source.
        src: u32,
        /// The destination.
        dst: u32,
        /// The worker holding both.
        worker: u32,
    },
    /// A source with more passes than the Pass field holds.
    #[error(
        "block {block}: source {src} has more than 255 passes; run `switch-ctl plan --verify`"
    )]
    TooManyPasses {
        /// The block.
        block: usize,
        /// The source.
        src: u32,
    },
    /// A destination fed by another number of sources than its aggregator expects.
    #[error("block {block}: destination {dst} expects {expected} contributions but {fed} sources feed it; run `switch-ctl plan --verify`")]
    ContributionCount {
        /// The block.
        block: usize,
        /// The destination.
        dst: u32,
        /// Contributions its aggregator expects.
        expected: u32,
        /// Sources that feed it.
        fed: usize,
    },
    /// A segment count of 0 or more than the Segment field holds.
    #[error("the plan's segment count {segments} does not fit the Segment field")]
    SegmentField {
        /// The plan's segment count.
        segments: u32,
    },
    /// `plan.json`'s segment count disagrees with its feature dimension.
    #[error("plan.json says {segments} segments but feature_dim {feature_dim} needs {needed}")]
    SegmentCount {
        /// The plan's segment count.
        segments: u32,
        /// The plan's feature dimension.
        feature_dim: u32,
        /// Segments that dimension needs.
        needed: u32,
    },
    /// A worker's schedule file that does not match the plan's blocks.
    #[error("workers/{worker:03}/{file} does not match the plan's blocks: the directory mixes files of different plans; re-run `switch-ctl plan` (or `switch-ctl plan --verify` to see the first difference)")]
    ScheduleMismatch {
        /// The worker.
        worker: u32,
        /// The file (`sends.npy` or `receives.npy`).
        file: &'static str,
    },
}

/// Features the application passed that do not fit the plan or the round.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadInput {
    /// A feature dimension of 0.
    #[error("feature dimension must be at least 1")]
    ZeroFeatureDim,
    /// A feature dimension wider than the plan's aggregators.
    #[error("a feature vector of {dim} values needs {need} aggregators per vertex but the plan allocated {segments} ({} values, planned for --feature-dim {feature_dim}); re-plan with `switch-ctl plan --feature-dim {dim}` or use at most {} values", *.segments as usize * LANES, *.segments as usize * LANES)]
    FeatureDimTooLarge {
        /// The dimension given.
        dim: usize,
        /// Aggregators per vertex it needs.
        need: usize,
        /// Aggregators per vertex of the plan.
        segments: u16,
        /// The plan's `--feature-dim`.
        feature_dim: u32,
    },
    /// Another number of feature values than the worker's vertices times the dimension.
    #[error("expected {vertices} x {dim} = {} feature values for worker {worker}'s {vertices} vertices, got {got}", .vertices * .dim)]
    FeatureCount {
        /// The worker.
        worker: u16,
        /// Its vertices.
        vertices: usize,
        /// The dimension.
        dim: usize,
        /// Values given.
        got: usize,
    },
}

/// An operation called in a state where it makes no sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WrongState {
    /// A round started while one is running (or after the worker finished).
    #[error("a round is already running (or the worker finished); wait for its sums first")]
    RoundRunning,
    /// A round started before the previous round's sums were taken.
    #[error("the previous round's sums were not taken")]
    SumsNotTaken,
    /// `finish()` during a round.
    #[error("finish() called while a round is running")]
    FinishDuringRound,
    /// A round that ended without sums.
    #[error("round ended without sums")]
    NoSums,
}

/// What the switch or a peer sent that only a different plan or a misconfigured testbed
/// produces.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    /// The switch answered none of the health probes sent while a block made no progress.
    #[error("the switch answered none of {probes} probes sent over {secs:.1} s while this worker's block made no progress: it is down, or it restarted and lost its tables (it cannot route the probe back). Restart it, reload it with `switch-ctl load --plan DIR --target ADDR`, and start the job again")]
    SwitchUnanswered {
        /// Probes sent.
        probes: u32,
        /// Seconds they span.
        secs: f64,
    },
    /// The switch delivered another worker's start-up probe to this one.
    #[error("the switch delivered worker {probe_of}'s start-up probe to worker {worker}: its --worker list does not match the workers' ids (worker w must be the w-th --worker address)")]
    WrongPort {
        /// The worker whose probe it was.
        probe_of: u16,
        /// This worker.
        worker: u16,
    },
    /// The switch holds another job than this daemon's `--job`.
    #[error("the switch was loaded with job {switch_job}, but this daemon was started with --job {job}: another job holds the switch (or it was loaded again). Start the daemon with --job {switch_job} if this is that job, or reload the switch with `switch-ctl load --plan DIR --target ADDR --job {job}`")]
    JobMismatch {
        /// The switch's job.
        switch_job: u16,
        /// This daemon's `--job`.
        job: u16,
    },
    /// The switch holds no plan.
    #[error("the switch holds no plan (it answered the start-up probe with plan tag 0), and this daemon's plan has tag {plan_tag:08x}: load it first with `switch-ctl load --plan DIR --target ADDR` (or start the software switch with --plan DIR)")]
    NoPlanOnSwitch {
        /// This daemon's plan tag.
        plan_tag: u32,
    },
    /// The switch holds another plan.
    #[error("the switch holds the plan with tag {switch_tag:08x}, but this daemon's plan has tag {plan_tag:08x}: the switch was loaded with another plan (or the plan was made again after loading). Load this plan with `switch-ctl load --plan DIR`, or start the daemon with the plan the switch holds (`switch-ctl plan` and `sgnn-hostd` print a plan's tag)")]
    OtherPlanOnSwitch {
        /// The switch's plan tag.
        switch_tag: u32,
        /// This daemon's plan tag.
        plan_tag: u32,
    },
    /// At start-up, the switch is past round 0, block 0: it holds an earlier run's state.
    #[error("the switch is at round {round} block {block}: it still holds the state of an earlier run of this plan (or a worker of this job restarted after it began). Reload it with `switch-ctl load --plan DIR --target ADDR` (or restart the software switch) and start every worker again")]
    StaleSwitch {
        /// The switch's round.
        round: u16,
        /// The switch's block.
        block: u16,
    },
    /// Mid-run, the switch lost this plan's tables or fell behind this worker's block.
    #[error("the switch restarted or was reloaded mid-run: {holds} but is at round {round} block {block}{}, so the partial sums it held are lost. Reload it with `switch-ctl load --plan DIR --target ADDR` and start the job again", at_suffix(.worker_at))]
    SwitchRestarted {
        /// What the switch holds now.
        holds: SwitchHolds,
        /// The switch's round.
        round: u16,
        /// The switch's block.
        block: u16,
        /// This worker's round and block, if it was in one.
        worker_at: Option<(u16, u16)>,
    },
}

/// What a switch that restarted mid-run holds ([`ProtocolError::SwitchRestarted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchHolds {
    /// This plan, loaded again under another job.
    SamePlanOtherJob {
        /// The switch's job.
        job: u16,
        /// This worker's job.
        ours: u16,
    },
    /// This plan, loaded again.
    SamePlan,
    /// No plan.
    NoPlan,
    /// Another plan.
    OtherPlan {
        /// The switch's plan tag.
        tag: u32,
        /// This worker's plan tag.
        ours: u32,
    },
}

impl fmt::Display for SwitchHolds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchHolds::SamePlanOtherJob { job, ours } => write!(
                f,
                "it holds this plan again under job {job} (this worker's is {ours})"
            ),
            SwitchHolds::SamePlan => f.write_str("it holds this plan again"),
            SwitchHolds::NoPlan => f.write_str("it holds no plan"),
            SwitchHolds::OtherPlan { tag, ours } => write!(
                f,
                "it holds the plan with tag {tag:08x}, not this worker's {ours:08x}"
            ),
        }
    }
}

/// What a worker that made no progress for the stall timeout waited for, and from whom. Every
/// variant names the worker and how long (`secs`) it waited.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Stall {
    /// The switch answered the start-up probe but some peers never answered the start hello.
    #[error("worker {worker}: the switch answered, but {} never answered this daemon's start hello for {secs:.1} s (not running, or its port is down): start every daemon of the plan (one per worker id), and check that the switch forwards between their ports", workers(.missing))]
    PeerHellos {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
        /// The peers that never answered.
        missing: Vec<u16>,
    },
    /// The switch never answered the start-up probe.
    #[error("worker {worker}: no answer from the switch to the start-up probe for {secs:.1} s: check that the switch is running and that this daemon is its port {worker} (UDP: --switch is the switch's listen address and its worker list has this daemon's address as worker {worker}; AF_PACKET or DPDK: this daemon's interface or ethdev leads to the switch's port {worker})")]
    SwitchProbe {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
    },
    /// A block's aggregates are missing.
    #[error("worker {worker}: no progress for {secs:.1} s in {at}, block {block}/{blocks}: {missing} of {cells} aggregates missing; their contributions come from {} ({fetches_sent} fetches sent, none answered since); a worker may have died: restart the run", heard_list(.from))]
    Aggregates {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
        /// The round.
        at: RoundAt,
        /// The block.
        block: usize,
        /// Blocks of the plan.
        blocks: usize,
        /// Aggregates missing.
        missing: usize,
        /// Aggregates of the block.
        cells: usize,
        /// The workers whose contributions are missing.
        from: Vec<Heard>,
        /// Fetches sent so far.
        fetches_sent: u64,
    },
    /// The worker is still sending its block.
    #[error("worker {worker}: no progress for {secs:.1} s in {at}, block {block}: still sending (rate {rate_mbps:.0} Mbit/s)")]
    Sending {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
        /// The round.
        at: RoundAt,
        /// The block.
        block: usize,
        /// The sending rate, Mbit/s.
        rate_mbps: f64,
    },
    /// The worker finished its block but the switch has not advanced it.
    #[error("worker {worker}: {at}, block {block}/{blocks}: this worker finished the block and sent BlockDone {done_sent} times, but the switch has not advanced it for {secs:.1} s: another worker has not finished (it may have died) or the switch is gone; peers: {}", heard_list(.peers))]
    BlockDone {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
        /// The round.
        at: RoundAt,
        /// The block.
        block: usize,
        /// Blocks of the plan.
        blocks: usize,
        /// BlockDones sent.
        done_sent: u32,
        /// The other workers.
        peers: Vec<Heard>,
    },
    /// Host-based mode: remote feature segments are missing.
    #[error("worker {worker}: no progress for {secs:.1} s in {at} (host-based): {missing} remote feature segments missing, owned by {}; a worker may have died: restart the run", heard_list(.from))]
    HostSegments {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
        /// The round.
        at: RoundAt,
        /// Segments missing.
        missing: usize,
        /// Their owners.
        from: Vec<Heard>,
    },
    /// The final barrier does not complete.
    #[error("worker {worker}: final barrier: sent BlockDone {sent} times but the switch has not advanced for {secs:.1} s: another worker has not finished (it may have died), or the switch is not fresh (the baseline's barrier is block 0 of round 0)")]
    FinalBarrier {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
        /// BlockDones sent.
        sent: u32,
    },
    /// No progress, in no particular phase.
    #[error("worker {worker}: no progress for {secs:.1} s")]
    NoProgress {
        /// This worker.
        worker: u16,
        /// Seconds without progress.
        secs: f64,
    },
}

/// The round (and layer) a [`Stall`] happened in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundAt {
    /// The round.
    pub round: u16,
    /// Its layer, if a round was running.
    pub layer: Option<Layer>,
}

impl fmt::Display for RoundAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.layer {
            Some(l) => write!(
                f,
                "round {} ({} layer {})",
                self.round,
                match l.direction {
                    Direction::Forward => "forward",
                    Direction::Backward => "backward",
                },
                l.index
            ),
            None => write!(f, "round {}", self.round),
        }
    }
}

/// A peer and when it was last heard from ([`Stall`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Heard {
    /// The peer.
    pub worker: u16,
    /// Seconds since it was last heard from (`None`: never).
    pub last_heard_s: Option<f64>,
}

impl fmt::Display for Heard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.last_heard_s {
            Some(s) => write!(f, "worker {} (last heard {s:.1} s ago)", self.worker),
            None => write!(f, "worker {} (never heard from)", self.worker),
        }
    }
}

fn heard_list(peers: &[Heard]) -> String {
    peers
        .iter()
        .map(Heard::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn workers(ids: &[u16]) -> String {
    match ids {
        [one] => format!("worker {one}"),
        _ => format!(
            "workers {}",
            ids.iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn last_heard(s: Option<f64>) -> String {
    match s {
        Some(s) => format!("last heard {s:.1} s ago"),
        None => "never heard from".to_string(),
    }
}

fn at_suffix(at: &Option<(u16, u16)>) -> String {
    at.map_or(String::new(), |(r, b)| {
        format!(" while this worker is at round {r} block {b}")
    })
}

impl Stall {
    /// The worker that stalled.
    pub fn worker(&self) -> u16 {
        match self {
            Stall::PeerHellos { worker, .. }
            | Stall::SwitchProbe { worker, .. }
            | Stall::Aggregates { worker, .. }
            | Stall::Sending { worker, .. }
            | Stall::BlockDone { worker, .. }
            | Stall::HostSegments { worker, .. }
            | Stall::FinalBarrier { worker, .. }
            | Stall::NoProgress { worker, .. } => *worker,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> RoundAt {
        RoundAt {
            round: 2,
            layer: Some(Layer::forward(1)),
        }
    }

    fn heard() -> Vec<Heard> {
        vec![
            Heard {
                worker: 1,
                last_heard_s: Some(2.5),
            },
            Heard {
                worker: 3,
                last_heard_s: None,
            },
        ]
    }

    /// The texts are those of the `String` errors these variants replaced, word for word.
    #[test]
    fn messages_are_the_old_strings() {
        let cases: Vec<(TransportError, &str)> = vec![
            (
                UnusablePlan::WorkerNotInPlan { worker: 4, workers: 4 }.into(),
                "worker id 4 is not in this plan: it has 4 workers (ids 0..=3); pass a --worker-id below 4 or use a plan made with --workers 5",
            ),
            (
                UnusablePlan::TooManyWorkers { workers: 70000 }.into(),
                "the plan has 70000 workers but the Worker_id field holds 65536",
            ),
            (
                UnusablePlan::PartitionLength { entries: 3, vertices: 4 }.into(),
                "partition.npy has 3 entries but the graph has 4 vertices: the plan is inconsistent, re-run `switch-ctl plan`",
            ),
            (
                UnusablePlan::UnknownSource { block: 1, src: 9, vertices: 8, partials: 0 }.into(),
                "block 1: source 9 is neither a vertex (n = 8) nor one of the plan's 0 partials; run `switch-ctl plan --verify`",
            ),
            (
                UnusablePlan::RowOutOfRange { block: 1, src: 2, row: 7, rows: 3 }.into(),
                "block 1: source 2 feeds aggregator row 7, beyond the block's 3 rows; run `switch-ctl plan --verify`",
            ),
            (
                UnusablePlan::UselessReplica { block: 0, vertex: 5, worker: 2 }.into(),
                "block 0: vertex 5 is replicated to worker 2, which holds none of its neighbours; run `switch-ctl plan --verify`",
            ),
            (
                UnusablePlan::LocalEdgeInBlock { block: 0, src: 5, dst: 6, worker: 1 }.into(),
                "block 0: vertex 5 feeds 6 on its own worker 1 through the switch; local edges must not be in blocks (run `switch-ctl plan --verify`)",
            ),
            (
                UnusablePlan::TooManyPasses { block: 3, src: 4 }.into(),
                "block 3: source 4 has more than 255 passes; run `switch-ctl plan --verify`",
            ),
            (
                UnusablePlan::ContributionCount { block: 0, dst: 1, expected: 3, fed: 2 }.into(),
                "block 0: destination 1 expects 3 contributions but 2 sources feed it; run `switch-ctl plan --verify`",
            ),
            (
                UnusablePlan::SegmentField { segments: 0 }.into(),
                "the plan's segment count 0 does not fit the Segment field",
            ),
            (
                UnusablePlan::SegmentCount { segments: 2, feature_dim: 100, needed: 4 }.into(),
                "plan.json says 2 segments but feature_dim 100 needs 4",
            ),
            (
                UnusablePlan::ScheduleMismatch { worker: 3, file: "sends.npy" }.into(),
                "workers/003/sends.npy does not match the plan's blocks: the directory mixes files of different plans; re-run `switch-ctl plan` (or `switch-ctl plan --verify` to see the first difference)",
            ),
            (
                BadInput::ZeroFeatureDim.into(),
                "feature dimension must be at least 1",
            ),
            (
                BadInput::FeatureDimTooLarge { dim: 100, need: 4, segments: 2, feature_dim: 64 }.into(),
                &*format!(
                    "a feature vector of 100 values needs 4 aggregators per vertex but the plan allocated 2 ({} values, planned for --feature-dim 64); re-plan with `switch-ctl plan --feature-dim 100` or use at most {} values",
                    2 * LANES, 2 * LANES
                ).leak(),
            ),
            (
                BadInput::FeatureCount { worker: 1, vertices: 3, dim: 2, got: 5 }.into(),
                "expected 3 x 2 = 6 feature values for worker 1's 3 vertices, got 5",
            ),
            (
                WrongState::RoundRunning.into(),
                "a round is already running (or the worker finished); wait for its sums first",
            ),
            (WrongState::SumsNotTaken.into(), "the previous round's sums were not taken"),
            (WrongState::FinishDuringRound.into(), "finish() called while a round is running"),
            (WrongState::NoSums.into(), "round ended without sums"),
            (
                ProtocolError::SwitchUnanswered { probes: 5, secs: 2.5 }.into(),
                "the switch answered none of 5 probes sent over 2.5 s while this worker's block made no progress: it is down, or it restarted and lost its tables (it cannot route the probe back). Restart it, reload it with `switch-ctl load --plan DIR --target ADDR`, and start the job again",
            ),
            (
                ProtocolError::WrongPort { probe_of: 2, worker: 1 }.into(),
                "the switch delivered worker 2's start-up probe to worker 1: its --worker list does not match the workers' ids (worker w must be the w-th --worker address)",
            ),
            (
                ProtocolError::JobMismatch { switch_job: 7, job: 3 }.into(),
                "the switch was loaded with job 7, but this daemon was started with --job 3: another job holds the switch (or it was loaded again). Start the daemon with --job 7 if this is that job, or reload the switch with `switch-ctl load --plan DIR --target ADDR --job 3`",
            ),
            (
                ProtocolError::NoPlanOnSwitch { plan_tag: 0xab }.into(),
                "the switch holds no plan (it answered the start-up probe with plan tag 0), and this daemon's plan has tag 000000ab: load it first with `switch-ctl load --plan DIR --target ADDR` (or start the software switch with --plan DIR)",
            ),
            (
                ProtocolError::OtherPlanOnSwitch { switch_tag: 0xcd, plan_tag: 0xab }.into(),
                "the switch holds the plan with tag 000000cd, but this daemon's plan has tag 000000ab: the switch was loaded with another plan (or the plan was made again after loading). Load this plan with `switch-ctl load --plan DIR`, or start the daemon with the plan the switch holds (`switch-ctl plan` and `sgnn-hostd` print a plan's tag)",
            ),
            (
                ProtocolError::StaleSwitch { round: 1, block: 2 }.into(),
                "the switch is at round 1 block 2: it still holds the state of an earlier run of this plan (or a worker of this job restarted after it began). Reload it with `switch-ctl load --plan DIR --target ADDR` (or restart the software switch) and start every worker again",
            ),
            (
                ProtocolError::SwitchRestarted {
                    holds: SwitchHolds::SamePlanOtherJob { job: 4, ours: 3 },
                    round: 0,
                    block: 0,
                    worker_at: Some((1, 2)),
                }
                .into(),
                "the switch restarted or was reloaded mid-run: it holds this plan again under job 4 (this worker's is 3) but is at round 0 block 0 while this worker is at round 1 block 2, so the partial sums it held are lost. Reload it with `switch-ctl load --plan DIR --target ADDR` and start the job again",
            ),
            (
                ProtocolError::SwitchRestarted {
                    holds: SwitchHolds::SamePlan,
                    round: 0,
                    block: 0,
                    worker_at: None,
                }
                .into(),
                "the switch restarted or was reloaded mid-run: it holds this plan again but is at round 0 block 0, so the partial sums it held are lost. Reload it with `switch-ctl load --plan DIR --target ADDR` and start the job again",
            ),
            (
                ProtocolError::SwitchRestarted {
                    holds: SwitchHolds::NoPlan,
                    round: 0,
                    block: 0,
                    worker_at: None,
                }
                .into(),
                "the switch restarted or was reloaded mid-run: it holds no plan but is at round 0 block 0, so the partial sums it held are lost. Reload it with `switch-ctl load --plan DIR --target ADDR` and start the job again",
            ),
            (
                ProtocolError::SwitchRestarted {
                    holds: SwitchHolds::OtherPlan { tag: 1, ours: 2 },
                    round: 0,
                    block: 0,
                    worker_at: None,
                }
                .into(),
                "the switch restarted or was reloaded mid-run: it holds the plan with tag 00000001, not this worker's 00000002 but is at round 0 block 0, so the partial sums it held are lost. Reload it with `switch-ctl load --plan DIR --target ADDR` and start the job again",
            ),
            (
                Stall::PeerHellos { worker: 0, secs: 3.0, missing: vec![2] }.into(),
                "worker 0: the switch answered, but worker 2 never answered this daemon's start hello for 3.0 s (not running, or its port is down): start every daemon of the plan (one per worker id), and check that the switch forwards between their ports",
            ),
            (
                Stall::PeerHellos { worker: 0, secs: 3.0, missing: vec![2, 3] }.into(),
                "worker 0: the switch answered, but workers 2, 3 never answered this daemon's start hello for 3.0 s (not running, or its port is down): start every daemon of the plan (one per worker id), and check that the switch forwards between their ports",
            ),
            (
                Stall::SwitchProbe { worker: 1, secs: 3.0 }.into(),
                "worker 1: no answer from the switch to the start-up probe for 3.0 s: check that the switch is running and that this daemon is its port 1 (UDP: --switch is the switch's listen address and its worker list has this daemon's address as worker 1; AF_PACKET or DPDK: this daemon's interface or ethdev leads to the switch's port 1)",
            ),
            (
                Stall::Aggregates {
                    worker: 0,
                    secs: 3.0,
                    at: at(),
                    block: 1,
                    blocks: 4,
                    missing: 2,
                    cells: 8,
                    from: heard(),
                    fetches_sent: 6,
                }
                .into(),
                "worker 0: no progress for 3.0 s in round 2 (forward layer 1), block 1/4: 2 of 8 aggregates missing; their contributions come from worker 1 (last heard 2.5 s ago), worker 3 (never heard from) (6 fetches sent, none answered since); a worker may have died: restart the run",
            ),
            (
                Stall::Sending { worker: 0, secs: 3.0, at: RoundAt { round: 5, layer: None }, block: 1, rate_mbps: 999.7 }.into(),
                "worker 0: no progress for 3.0 s in round 5, block 1: still sending (rate 1000 Mbit/s)",
            ),
            (
                Stall::BlockDone {
                    worker: 0,
                    secs: 3.0,
                    at: RoundAt { round: 2, layer: Some(Layer::backward(0)) },
                    block: 1,
                    blocks: 4,
                    done_sent: 9,
                    peers: heard(),
                }
                .into(),
                "worker 0: round 2 (backward layer 0), block 1/4: this worker finished the block and sent BlockDone 9 times, but the switch has not advanced it for 3.0 s: another worker has not finished (it may have died) or the switch is gone; peers: worker 1 (last heard 2.5 s ago), worker 3 (never heard from)",
            ),
            (
                Stall::HostSegments { worker: 0, secs: 3.0, at: at(), missing: 4, from: heard() }.into(),
                "worker 0: no progress for 3.0 s in round 2 (forward layer 1) (host-based): 4 remote feature segments missing, owned by worker 1 (last heard 2.5 s ago), worker 3 (never heard from); a worker may have died: restart the run",
            ),
            (
                Stall::FinalBarrier { worker: 2, secs: 3.0, sent: 5 }.into(),
                "worker 2: final barrier: sent BlockDone 5 times but the switch has not advanced for 3.0 s: another worker has not finished (it may have died), or the switch is not fresh (the baseline's barrier is block 0 of round 0)",
            ),
            (
                Stall::NoProgress { worker: 2, secs: 3.0 }.into(),
                "worker 2: no progress for 3.0 s",
            ),
            (
                TransportError::PeerSilent {
                    me: 0,
                    worker: 3,
                    asked_s: 1.0,
                    last_heard_s: Some(1.5),
                    doing: "idle before round 0".into(),
                },
                "worker 0: worker 3 is not answering: no answer to the liveness hellos sent to it over 1.0 s (last heard 1.5 s ago) while this worker waited (idle before round 0): its daemon died or its link to the switch is down. Stop every worker and start the job again",
            ),
            (
                TransportError::PeerSilent {
                    me: 0,
                    worker: 3,
                    asked_s: 1.0,
                    last_heard_s: None,
                    doing: "finished".into(),
                },
                "worker 0: worker 3 is not answering: no answer to the liveness hellos sent to it over 1.0 s (never heard from) while this worker waited (finished): its daemon died or its link to the switch is down. Stop every worker and start the job again",
            ),
            (
                std::io::Error::other("boom").into(),
                "datapath: boom",
            ),
            (
                sgnn_plan::PlanError::Format {
                    path: "plan/plan.json".into(),
                    message: "bad".into(),
                }
                .into(),
                "plan/plan.json: bad",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text, "{e:?}");
        }
        assert_eq!(
            Stall::NoProgress {
                worker: 7,
                secs: 1.0
            }
            .worker(),
            7
        );
    }
}
