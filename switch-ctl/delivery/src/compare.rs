//! Every mode side by side ([`compare`]): the rows `switch-ctl plan` prints and writes into
//! `report.json` (`host_based`, `paper`, `multicast`, `partials`, `auto`), each the mode's
//! prediction and its bytes on the host links.

use serde::{Deserialize, Serialize};
use sgnn_plan::profile::SwitchProfile;
use sgnn_plan::{AggregateMode, Plan};

use crate::cost::Sizes;
use crate::cost::{bound_paper, predict_host_based, predict_paper, Planned, Prediction};
use crate::pair_index::PairIndex;
use crate::plan::plan_delivery;

/// One row of the comparison `switch-ctl plan` prints and writes into `report.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModeRow {
    /// `host_based`, `paper`, `multicast`, `partials` or `auto`.
    pub mode: String,
    /// The prediction.
    pub prediction: Prediction,
    /// Bytes on the host links (uplinks plus downlinks).
    pub total_bytes: u64,
    /// The prediction and the bytes are lower bounds, not the mode's own plan: the paper's
    /// row when its multi-level blocks were not computed ([`bound_paper`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
}

/// Predicts every mode for a plan under a profile. `paper` is the plan's own blocks; the
/// others are computed from its partition.
pub fn compare(plan: &Plan, prof: &SwitchProfile) -> Vec<ModeRow> {
    compare_with(plan, &PairIndex::new(plan), prof, true, None).0
}

/// [`compare`] on a pair index already built, and the delivery of `keep` (not `paper`) as
/// it was planned for its row, so that the caller lowers it without planning it again
/// ([`crate::lower::deliver_planned`]). With `paper_blocks` false the plan's blocks are not
/// the paper's (a plan made without them, or a delivery plan), and the paper's row is
/// [`bound_paper`], marked [`ModeRow::lower_bound`], its bytes those of every boundary vertex
/// sent and received once.
pub fn compare_with(
    plan: &Plan,
    idx: &PairIndex,
    prof: &SwitchProfile,
    paper_blocks: bool,
    keep: Option<AggregateMode>,
) -> (Vec<ModeRow>, Option<Planned>) {
    let sizes = Sizes::for_switch(plan, prof);
    let owner = &plan.partition;
    let mut rows = Vec::new();
    let hb = predict_host_based(idx, owner, prof, sizes);
    rows.push(ModeRow {
        mode: "host_based".into(),
        total_bytes: hb.traffic.total,
        prediction: hb.prediction,
        lower_bound: false,
    });
    rows.push(if paper_blocks {
        ModeRow {
            mode: "paper".into(),
            total_bytes: sgnn_plan::traffic::switchgnn(plan).total,
            prediction: predict_paper(plan, prof),
            lower_bound: false,
        }
    } else {
        ModeRow {
            mode: "paper".into(),
            total_bytes: sgnn_plan::traffic::unlimited(plan).total,
            prediction: bound_paper(plan, idx, prof),
            lower_bound: true,
        }
    });
    let mut kept = None;
    for mode in [
        AggregateMode::Multicast,
        AggregateMode::Partials,
        AggregateMode::Auto,
    ] {
        let r = plan_delivery(plan, idx, mode, prof);
        rows.push(ModeRow {
            mode: mode.name().into(),
            total_bytes: r.traffic.total,
            prediction: r.prediction.clone(),
            lower_bound: false,
        });
        if keep == Some(mode) {
            kept = Some(r);
        }
    }
    (rows, kept)
}
