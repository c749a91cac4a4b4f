//! [`SwitchCounters`]: what the switches of a run did, summed over them (the real
//! exchange's pipelines, `RealTraffic::switch_counters`, and the single-round models of
//! [`super::OneShot`]).

use crate::net::Time;

/// Counters of the switch logic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    /// Contributions added (passes, all segments).
    pub contributions: u64,
    /// Passes on the recirculation path.
    pub recirculations: u64,
    /// Of them, harvest passes (a TNA switch's lane pairs: `SimConfig::harvest_passes`).
    pub harvest_passes: u64,
    /// Results emitted.
    pub results: u64,
    /// Data frames of a block other than the current one (dropped by the switch).
    pub stale: u64,
    /// Largest recirculation backlog, in picoseconds of work waiting.
    pub max_recirc_backlog: Time,
    /// Largest number of aggregators in use at once on one switch (each counted from the
    /// arrival of the first frame that feeds it to its last contribution's pass).
    pub peak_aggregators: u64,
    /// Largest number of aggregators in use at once, per switch (index among switches).
    pub peak_aggregators_per_switch: Vec<u64>,
    /// Results a leaf completed itself (every contributor under the destination's leaf) and
    /// sent straight down; on a star, every result.
    pub leaf_results: u64,
    /// Partial aggregates leaves sent up to a spine.
    pub leaf_partials: u64,
    /// Partial aggregates spines added.
    pub spine_partials: u64,
    /// Results spines completed and sent down.
    pub spine_results: u64,
    /// Aggregators still holding a partial sum when their block advanced (released then).
    pub released: u64,
    /// BlockDone of a block the switch had already advanced, answered with its BlockAdvance.
    pub advance_resends: u64,
    /// Recycled aggregators (`--recycle`) that a contribution of a newer generation reached
    /// while the older generation's sum was still incomplete: where the P4 switch would
    /// reclaim the aggregator and the older sum's receiver would fetch its contributions. The
    /// simulator counts them and completes both sums as if they had not met, so the time is
    /// exact only when this is 0 (the planner's slack held).
    pub generation_conflicts: u64,
}

impl SwitchCounters {
    /// Switch `si` has had `peak` aggregators in use at once.
    pub(crate) fn note_peak(&mut self, si: usize, peak: u64) {
        let p = &mut self.peak_aggregators_per_switch[si];
        *p = (*p).max(peak);
        self.peak_aggregators = self.peak_aggregators.max(peak);
    }
}
