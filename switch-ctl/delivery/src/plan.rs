//! Planning one mode's delivery ([`plan_delivery`]): `multicast` and `partials` are one uniform
//! choice, `auto` the search's candidates ([`crate::auto`]); every candidate within
//! [`REPLAY_MARGIN`] of the best bound is laid out ([`crate::layout`]) and replayed
//! ([`crate::cost::Replay`]), and the fastest replay wins.

use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::{AggregateMode, Plan};

use crate::auto::auto_candidates;
use crate::choice::{Choice, Delivery};
use crate::cost::{evaluate, Planned, Sizes};
use crate::layout::{Layout, RawOrder, Tables};
use crate::pair_index::PairIndex;

/// The delivery of `mode` (not `paper`) for `plan` under `prof`, with its tables and its time
/// replayed ([`Tables::replay`]).
pub fn plan_delivery(
    plan: &Plan,
    idx: &PairIndex,
    mode: AggregateMode,
    prof: &SwitchProfile,
) -> Planned {
    plan_delivery_with(plan, idx, mode, prof, true)
}

/// Candidates whose bound is within this factor of the best bound are replayed, and `auto`
/// keeps the one whose replay is fastest: the bound cannot see a drain, so choices it ranks
/// alike can differ by the drain (per-edge sums fed by many senders).
pub const REPLAY_MARGIN: f64 = 1.25;

/// [`plan_delivery`], with `allow_r = false` keeping `auto` from per-edge sums (`R`): what a
/// plan falls back to when its `R` choice does not fit the switch's pass limit.
///
/// `auto` takes [`auto_candidates`]; each candidate within
/// [`REPLAY_MARGIN`] of the best bound is replayed, a candidate with `R` in both raw orders
/// ([`RawOrder`]), and the fastest replay wins.
pub fn plan_delivery_with(
    plan: &Plan,
    idx: &PairIndex,
    mode: AggregateMode,
    prof: &SwitchProfile,
    allow_r: bool,
) -> Planned {
    plan_delivery_laid_out(plan, idx, mode, prof, allow_r, Layout::Spread)
}

/// [`plan_delivery_with`], its tables in `layout`.
pub fn plan_delivery_laid_out(
    plan: &Plan,
    idx: &PairIndex,
    mode: AggregateMode,
    prof: &SwitchProfile,
    allow_r: bool,
    layout: Layout,
) -> Planned {
    let sizes = Sizes::for_switch(plan, prof);
    let owner = &plan.partition;
    let uniform = |d| evaluate(idx, owner, &Choice::uniform(idx.workers, d), prof, sizes);
    let candidates = match mode {
        AggregateMode::Multicast => vec![uniform(Delivery::M)],
        AggregateMode::Partials => vec![uniform(Delivery::A)],
        AggregateMode::Auto | AggregateMode::Paper => {
            let allowed: &[Delivery] = if allow_r {
                &[Delivery::M, Delivery::A, Delivery::C, Delivery::R]
            } else {
                &[Delivery::M, Delivery::A, Delivery::C]
            };
            auto_candidates(idx, owner, prof, sizes, allowed, 64)
        }
    };
    let best_bound = candidates
        .iter()
        .map(|c| c.prediction.bound_us)
        .fold(f64::INFINITY, f64::min);
    let mut best: Option<Planned> = None;
    let mut replayed: Vec<Choice> = Vec::new();
    for mut r in candidates {
        let bound = r.prediction.bound_us;
        if !bound.is_finite() || bound > best_bound * REPLAY_MARGIN {
            continue;
        }
        // The searches with and without `R` often end at the same choice: its tables and
        // replay would be the same, and the earlier candidate wins a tie anyway.
        if replayed.contains(&r.choice) {
            continue;
        }
        replayed.push(r.choice.clone());
        let mut tables = Tables::laid_out(idx, &plan.graph, owner, &r.choice, sizes, layout);
        r.prediction.time_us = tables.replay(owner, prof, sizes).time_us;
        if !tables.r_rows.is_empty() {
            let other = tables.clone().reordered(RawOrder::FanOut);
            let t = other.replay(owner, prof, sizes).time_us;
            if t < r.prediction.time_us {
                r.prediction.time_us = t;
                tables = other;
            }
        }
        if tables.blocks as u64 != r.prediction.blocks {
            r.with_blocks(tables.blocks as u64, prof);
        }
        r.tables = tables;
        if best
            .as_ref()
            .is_none_or(|b| r.prediction.time_us < b.prediction.time_us)
        {
            best = Some(r);
        }
    }
    best.expect("at least one candidate has the best bound")
}
