//! The strategies the simulator runs and the plan each needs.

use crate::SimError;
use sgnn_plan::{Partitioner, PlanConfig, SendOrder};

/// Strategies the simulator runs. `tools/sim/README.md` has a table of their models and
/// sources; each has a module doc under `src/strategies/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// BNS-GCN with p = 1 (host-to-host all-to-all).
    HostBased,
    /// The plan's blocks with in-network aggregation and block sync, hosts with rate control.
    SwitchGnn,
    /// G3: G3-partitioned plan, vertex-major peer-to-peer push by priority.
    G3,
    /// Paper 2.3.2: in-network, no block planning, first-come aggregators, overflow raw.
    Strawman,
    /// SwitchGNN with unlimited switch memory: one block, no block sync.
    Unlimited,
    /// SwitchGNN on a plan with a graph-agnostic (random) send order instead of GAMR.
    SwitchGnnNoGamr,
    /// SuperGCN: minimum-vertex-cover pre/post aggregation at the hosts.
    SuperGcn,
    /// Host-based exchange scheduled as Hermod: DSCP class, rounds of matchings.
    Hermod,
    /// APPROXIMATE: Emma's source chunking, one chunk's push per iteration.
    Emma,
    /// APPROXIMATE: Grappa's gradient-only ring all-reduce plus amortised repartitioning.
    Grappa,
    /// APPROXIMATE: DGS-style sampled mini-batch feature pulls.
    Dgs,
    /// `SwitchGnn` without host rate control (the paper's "SwitchGNN w/o CC").
    SwitchGnnNoCc,
    /// Every pair of partitions multicast: raw features replicated by the switch, summed on
    /// the receiving host (`sgnn_delivery`, `M`).
    Multicast,
    /// Every pair pre-aggregated on the sending host and summed in the switch in one pass
    /// (`A`).
    Partials,
    /// Multicast, partials or per-edge aggregation per pair, chosen by the planner's cost model
    /// for this simulation's link and recirculation rates (`--aggregate auto`).
    SwitchGnnAuto,
    /// `HostBased` without rate control: the workers send at line rate and ignore the
    /// receivers' congestion notifications (`host_based` runs the daemons' rate control, with
    /// the receivers echoing ECN marks to the senders).
    HostBasedNoCc,
}

/// Planner options a strategy needs different from the user's (`None`: keep the user's).
/// A caller with one base [`PlanConfig`] plans once per distinct [`PlanVariant::apply`] result
/// and runs each strategy on its own plan; [`run_strategy`] rejects a plan that does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PlanVariant {
    /// Partitioner (`--partitioner`).
    pub partitioner: Option<Partitioner>,
    /// Send order inside a block (`--order`).
    pub order: Option<SendOrder>,
}

impl std::fmt::Display for PlanVariant {
    /// The planner flags of the variant (`--partitioner g3`, `--order random`), or "the
    /// user's options".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(p) = self.partitioner {
            parts.push(format!("--partitioner {}", p.name()));
        }
        if let Some(o) = self.order {
            parts.push(format!("--order {}", o.name()));
        }
        if parts.is_empty() {
            write!(f, "the user's options")
        } else {
            write!(f, "{}", parts.join(" "))
        }
    }
}

impl PlanVariant {
    /// `base` with this variant's options.
    pub fn apply(&self, base: &PlanConfig) -> PlanConfig {
        let mut c = base.clone();
        if let Some(p) = self.partitioner {
            c.partitioner = p;
        }
        if let Some(o) = self.order {
            c.order = o;
        }
        c
    }

    /// Whether `cfg` was planned with this variant's options.
    pub fn matches(&self, cfg: &PlanConfig) -> bool {
        self.partitioner.is_none_or(|p| cfg.partitioner == p)
            && self.order.is_none_or(|o| cfg.order == o)
    }
}

impl Strategy {
    /// All strategies, in output order.
    pub const ALL: [Strategy; 16] = [
        Strategy::HostBased,
        Strategy::SwitchGnn,
        Strategy::G3,
        Strategy::Strawman,
        Strategy::Unlimited,
        Strategy::SwitchGnnNoGamr,
        Strategy::SuperGcn,
        Strategy::Hermod,
        Strategy::Emma,
        Strategy::Grappa,
        Strategy::Dgs,
        Strategy::SwitchGnnNoCc,
        Strategy::Multicast,
        Strategy::Partials,
        Strategy::SwitchGnnAuto,
        Strategy::HostBasedNoCc,
    ];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::HostBased => "host_based",
            Strategy::SwitchGnn => "switchgnn",
            Strategy::G3 => "g3",
            Strategy::Strawman => "strawman",
            Strategy::Unlimited => "unlimited",
            Strategy::SwitchGnnNoGamr => "switchgnn_no_gamr",
            Strategy::SuperGcn => "supergcn",
            Strategy::Hermod => "hermod",
            Strategy::Emma => "emma",
            Strategy::Grappa => "grappa",
            Strategy::Dgs => "dgs",
            Strategy::SwitchGnnNoCc => "switchgnn_no_cc",
            Strategy::Multicast => "multicast",
            Strategy::Partials => "partials",
            Strategy::SwitchGnnAuto => "switchgnn_auto",
            Strategy::HostBasedNoCc => "host_based_no_cc",
        }
    }

    /// Name of the strategy whose bytes `sgnn_plan::traffic` models for it (rate control
    /// changes when frames leave, not which).
    pub fn model_name(self) -> &'static str {
        match self {
            Strategy::SwitchGnnNoCc => "switchgnn",
            Strategy::HostBasedNoCc => "host_based",
            s => s.name(),
        }
    }

    /// Approximate methods (they change what is computed, not only how it is sent): their
    /// traffic follows the strategy's own documented formula, not the planner's model, and
    /// every output labels them.
    pub fn approximate(self) -> bool {
        matches!(self, Strategy::Emma | Strategy::Grappa | Strategy::Dgs)
    }

    /// The planner options this strategy's plan needs.
    pub fn plan_variant(self) -> PlanVariant {
        match self {
            Strategy::G3 => PlanVariant {
                partitioner: Some(Partitioner::G3),
                order: None,
            },
            Strategy::SwitchGnnNoGamr => PlanVariant {
                partitioner: None,
                order: Some(SendOrder::Random),
            },
            _ => PlanVariant::default(),
        }
    }

    /// The `sgnn_plan::traffic` strategy whose bytes (on this strategy's plan) the simulator
    /// must reproduce exactly; `None` for approximate strategies. The delivery strategies
    /// (`multicast`, `partials`, `switchgnn_auto`) are modelled by `sgnn_delivery` for the
    /// run's profile: their model is in [`RunReport::model_traffic`].
    pub fn traffic_model(self) -> Option<&'static str> {
        match self {
            Strategy::Multicast | Strategy::Partials | Strategy::SwitchGnnAuto => Some(self.name()),
            Strategy::HostBased | Strategy::HostBasedNoCc | Strategy::G3 | Strategy::Hermod => {
                Some("host_based")
            }
            Strategy::SwitchGnn | Strategy::SwitchGnnNoGamr | Strategy::SwitchGnnNoCc => {
                Some("switchgnn")
            }
            Strategy::Strawman => Some("strawman"),
            Strategy::Unlimited => Some("unlimited"),
            Strategy::SuperGcn => Some("supergcn_mvc"),
            Strategy::Emma | Strategy::Grappa | Strategy::Dgs => None,
        }
    }

    /// Every name, approximate ones marked, for help and error texts.
    pub fn names() -> String {
        Strategy::ALL
            .map(|x| {
                if x.approximate() {
                    format!("{} (approximate)", x.name())
                } else {
                    x.name().to_string()
                }
            })
            .join(", ")
    }
}

impl std::str::FromStr for Strategy {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        Strategy::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| SimError::UnknownStrategy {
                name: s.to_string(),
            })
    }
}
