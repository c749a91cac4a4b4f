//! [`SimError`]: every way a simulator call can fail.

use std::path::PathBuf;

use crate::PlanVariant;

/// Why the simulator could not parse a name, build a network, run a strategy or draw a plot.
/// Each variant is one kind of failure; its text ([`Display`](std::fmt::Display)) is the
/// message for the user. Errors that wrap another (a run's background rate control, a
/// strategy's fabric, a plot's file) include its text in their own and are not chained as a
/// [`source`](std::error::Error::source), so the message is printed once.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// A worker's engine (`sgnn-transport`) refused its view of the plan or stopped with a
    /// fatal error (the message is the daemon's).
    #[error("worker {worker}: {message}")]
    Engine {
        /// The worker.
        worker: u32,
        /// What its engine said.
        message: String,
    },
    /// A worker's sums differ from the single-process reference (`--verify`).
    #[error(
        "worker {worker}: the sums of vertex {vertex} differ from the single-process reference"
    )]
    WrongSums {
        /// The worker.
        worker: u32,
        /// The first vertex whose sums differ.
        vertex: u32,
    },
    /// A plan the software switch cannot hold (what `switch-ctl load` refuses too): run, its
    /// contributions past the switch's registers would be dropped and recovered by the hosts
    /// as if lost.
    #[error("block {block} has {cells} (source, segment) pairs but the switch's src_seen holds {have} (SEEN_CELLS): `switch-ctl load` refuses this plan; re-plan so blocks have fewer sources (less --switch-mem, or for --aggregate plans fewer partials per block)")]
    SeenCells {
        /// Block.
        block: usize,
        /// Cells it needs: sources times segments.
        cells: u64,
        /// Cells of `src_seen`.
        have: u64,
    },
    /// A delivery could not be lowered into a plan the switch and the daemons run.
    #[error("{0}")]
    Lowering(String),
    /// A strategy name the simulator does not know (`Strategy::from_str`).
    #[error(
        "unknown strategy {name:?}: the simulator has {}",
        crate::Strategy::names()
    )]
    UnknownStrategy {
        /// The name given.
        name: String,
    },
    /// A plot format that is not `svg`, `png`, `both` or `none` (`Formats::from_str`).
    #[error("{given:?}: expected svg, png, both or none")]
    UnknownFormats {
        /// The text given.
        given: String,
    },

    /// A topology link whose ends are out of range or the same node.
    #[error("link {link}: bad ends {a} - {b}")]
    BadLinkEnds {
        /// Index of the link in `Topology::links`.
        link: usize,
        /// One end.
        a: u32,
        /// The other end.
        b: u32,
    },
    /// A topology link of 0 bit/s.
    #[error("link {link}: zero bandwidth")]
    ZeroBandwidth {
        /// Index of the link in `Topology::links`.
        link: usize,
    },
    /// A host with no link or several (routing needs exactly one).
    #[error("host {host} has {links} links; hosts must have exactly one")]
    HostLinkCount {
        /// The host.
        host: usize,
        /// Its links.
        links: usize,
    },
    /// A link between two hosts (no switch tiers).
    #[error("a link joins two hosts")]
    HostToHostLink,
    /// A host with more than one link (no switch tiers).
    #[error("host {host} has more than one link")]
    HostMultiplyLinked {
        /// The host.
        host: u32,
    },
    /// A host with no link (no switch tiers).
    #[error("host {host} has no link")]
    HostUnlinked {
        /// The host.
        host: usize,
    },
    /// Several switches with hosts but no spine to join them.
    #[error("{leaves} switches with hosts and no spine")]
    NoSpine {
        /// Switches with hosts.
        leaves: usize,
    },
    /// Switch-to-switch links that do not join every leaf to every spine and nothing else.
    #[error(
        "not a leaf-spine fabric: {fabric_links} switch-to-switch links, {leaves} leaves x \
         {spines} spines"
    )]
    NotLeafSpine {
        /// Distinct switch-to-switch links.
        fabric_links: usize,
        /// Switches with hosts.
        leaves: usize,
        /// Switches without hosts.
        spines: usize,
    },
    /// `switchgnn` on a topology that is neither a star nor a leaf-spine fabric.
    #[error("switchgnn needs a star or a leaf-spine fabric: {0}")]
    NotAFabric(Box<SimError>),

    /// A rate-control floor of 0 bit/s.
    #[error("the rate floor must be positive")]
    ZeroRateFloor,
    /// A rate-control additive-increase interval of 0.
    #[error("the additive-increase interval must be positive")]
    ZeroIncreaseInterval,
    /// A rate-control ceiling below the floor.
    #[error("the rate ceiling {max_bps} bit/s is below the floor {min_bps} bit/s")]
    CeilingBelowFloor {
        /// The ceiling, bit/s.
        max_bps: u64,
        /// The floor, bit/s.
        min_bps: u64,
    },
    /// A rate-control starting rate outside `[floor, ceiling]`.
    #[error("the starting rate {initial_bps} bit/s must lie between the floor and the ceiling")]
    StartOutsideRange {
        /// The starting rate, bit/s.
        initial_bps: u64,
    },

    /// Invalid rate control of the background flows.
    #[error("background rate control: {0}")]
    BackgroundRateControl(Box<SimError>),
    /// A background load that is negative or not finite.
    #[error("background load must be a fraction >= 0, got {load}")]
    BackgroundLoad {
        /// The load given.
        load: f64,
    },
    /// Background traffic on host links of different rates.
    #[error("background traffic needs every host link at the same rate")]
    BackgroundLinkRates,
    /// A topology whose host count is not the plan's worker count.
    #[error("the topology has {hosts} hosts but the plan {workers} workers")]
    HostCount {
        /// Hosts of the topology.
        hosts: u32,
        /// Workers of the plan.
        workers: u32,
    },
    /// A strategy the real code runs, on a topology that is neither a star nor a leaf-spine
    /// laid out as `Topology::leaf_spine` lays it out.
    #[error(
        "{strategy} runs the daemons' engines and the software switch, on a star or a \
         leaf-spine fabric (--topology star|leaf-spine); topology {topology} is neither"
    )]
    NotStarOrFabric {
        /// The strategy.
        strategy: &'static str,
        /// The topology's name.
        topology: String,
    },
    /// A star-only strategy on a topology of several switches.
    #[error("{strategy} runs on a star only (one switch; got {switches})")]
    StarOnly {
        /// The strategy's name.
        strategy: &'static str,
        /// Switches of the topology.
        switches: u32,
    },
    /// A plan made without the planner options the strategy needs.
    #[error(
        "{strategy} needs a plan made with {needs} (got partitioner {partitioner}, order \
         {order}): plan with Strategy::plan_variant"
    )]
    PlanMismatch {
        /// The strategy's name.
        strategy: &'static str,
        /// The options it needs ([`crate::Strategy::plan_variant`]).
        needs: PlanVariant,
        /// The plan's partitioner.
        partitioner: String,
        /// The plan's send order.
        order: String,
    },

    /// A `plotters` drawing failure (its text).
    #[error("{0}")]
    Draw(String),
    /// No font to draw PNG text with (the text of [`crate::plot::png_font`]).
    #[error("{0}")]
    NoFont(&'static str),
    /// An image file name whose extension is not `.svg` or `.png`.
    #[error("unknown image type {ext:?} (svg or png)")]
    UnknownImageType {
        /// The extension (empty if none).
        ext: String,
    },
    /// Drawing one image file failed.
    #[error("plotting {}: {reason}", .path.display())]
    Plotting {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: Box<SimError>,
    },
    /// A bar chart series without one value per group.
    #[error("series {series:?} has {values} values for {groups} groups")]
    SeriesLength {
        /// The series' name.
        series: String,
        /// Its values.
        values: usize,
        /// The groups.
        groups: usize,
    },
}

impl SimError {
    /// Whether the message contains `pat`. These errors used to be `String`s, and callers
    /// (tests among them) match their text this way; matching the variant is sturdier.
    pub fn contains(&self, pat: &str) -> bool {
        self.to_string().contains(pat)
    }
}

impl From<sgnn_plan::PlanError> for SimError {
    fn from(e: sgnn_plan::PlanError) -> Self {
        SimError::Lowering(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts are those of the `String` errors these variants replaced, word for word.
    #[test]
    fn messages_are_the_old_strings() {
        let cases: Vec<(SimError, &str)> = vec![
            (
                SimError::UnknownFormats {
                    given: "gif".into(),
                },
                "\"gif\": expected svg, png, both or none",
            ),
            (
                SimError::BadLinkEnds {
                    link: 2,
                    a: 1,
                    b: 1,
                },
                "link 2: bad ends 1 - 1",
            ),
            (
                SimError::ZeroBandwidth { link: 0 },
                "link 0: zero bandwidth",
            ),
            (
                SimError::HostLinkCount { host: 3, links: 2 },
                "host 3 has 2 links; hosts must have exactly one",
            ),
            (SimError::HostToHostLink, "a link joins two hosts"),
            (
                SimError::HostMultiplyLinked { host: 1 },
                "host 1 has more than one link",
            ),
            (SimError::HostUnlinked { host: 4 }, "host 4 has no link"),
            (
                SimError::NoSpine { leaves: 2 },
                "2 switches with hosts and no spine",
            ),
            (
                SimError::NotLeafSpine {
                    fabric_links: 3,
                    leaves: 2,
                    spines: 2,
                },
                "not a leaf-spine fabric: 3 switch-to-switch links, 2 leaves x 2 spines",
            ),
            (
                SimError::NotAFabric(Box::new(SimError::HostToHostLink)),
                "switchgnn needs a star or a leaf-spine fabric: a link joins two hosts",
            ),
            (SimError::ZeroRateFloor, "the rate floor must be positive"),
            (
                SimError::ZeroIncreaseInterval,
                "the additive-increase interval must be positive",
            ),
            (
                SimError::CeilingBelowFloor {
                    max_bps: 5,
                    min_bps: 10,
                },
                "the rate ceiling 5 bit/s is below the floor 10 bit/s",
            ),
            (
                SimError::StartOutsideRange { initial_bps: 7 },
                "the starting rate 7 bit/s must lie between the floor and the ceiling",
            ),
            (
                SimError::BackgroundRateControl(Box::new(SimError::ZeroRateFloor)),
                "background rate control: the rate floor must be positive",
            ),
            (
                SimError::BackgroundLoad { load: -0.5 },
                "background load must be a fraction >= 0, got -0.5",
            ),
            (
                SimError::BackgroundLinkRates,
                "background traffic needs every host link at the same rate",
            ),
            (
                SimError::HostCount {
                    hosts: 4,
                    workers: 8,
                },
                "the topology has 4 hosts but the plan 8 workers",
            ),
            (
                SimError::StarOnly {
                    strategy: "strawman",
                    switches: 3,
                },
                "strawman runs on a star only (one switch; got 3)",
            ),
            (
                SimError::PlanMismatch {
                    strategy: "g3",
                    needs: PlanVariant {
                        partitioner: Some(sgnn_plan::Partitioner::G3),
                        order: None,
                    },
                    partitioner: "metis".into(),
                    order: "gamr".into(),
                },
                "g3 needs a plan made with --partitioner g3 \
                 (got partitioner metis, order gamr): plan with Strategy::plan_variant",
            ),
            (SimError::Draw("backend".into()), "backend"),
            (SimError::NoFont("no font"), "no font"),
            (
                SimError::Plotting {
                    path: "out/a.gif".into(),
                    reason: Box::new(SimError::UnknownImageType { ext: "gif".into() }),
                },
                "plotting out/a.gif: unknown image type \"gif\" (svg or png)",
            ),
            (
                SimError::SeriesLength {
                    series: "short".into(),
                    values: 1,
                    groups: 3,
                },
                "series \"short\" has 1 values for 3 groups",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text, "{e:?}");
            assert!(std::error::Error::source(&e).is_none(), "{e:?}");
        }
        let e = SimError::UnknownStrategy {
            name: "nope".into(),
        };
        assert_eq!(
            e.to_string(),
            format!(
                "unknown strategy \"nope\": the simulator has {}",
                crate::Strategy::names()
            )
        );
        assert!(e.contains("emma (approximate)"));
    }
}
