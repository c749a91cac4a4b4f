//! `p4/v1model/aggregation.p4`: `agg_table` and its actions, the aggregator registers, duplicate
//! suppression (`src_seen`) and the recirculation clone session.
//!
//! A Data packet at pass `p` looks up `agg_table[(block_id, src_id, p)]`. `aggregate` adds
//! its lanes into aggregator `agg_base + segment` and emits the Result when the count reaches
//! `expected`; `deliver` sends the values to the destination's worker as a Bypass (no
//! aggregator); `replicate` sends a Bypass to every worker of a multicast group. `more` means
//! another pass follows (the packet recirculates with `pass + 1`). `docs/switch-interface.md`
//! describes every state change.

use sgnn_plan::{Plan, ReplicaGroups};

use crate::{Action, Key, Param, Register, Table};

/// Aggregators: cells of every `agg_*` register (`AGGREGATORS` in `config.p4`).
pub const AGGREGATORS: u32 = 65536;
/// Entries of `agg_table` (`AGG_TABLE_SIZE`).
pub const AGG_TABLE_SIZE: u32 = 1_048_576;
/// Cells of `src_seen` (`SEEN_CELLS`): one per (source, segment) of a block.
pub const SEEN_CELLS: u32 = 262_144;
/// Value lanes per aggregator, one register each (`agg_value_<lane>`).
pub const LANES: usize = sgnn_wire::LANES;
/// Valid bit of a `src_seen` cell (the register is 33 bits: valid, round, block).
pub const SEEN_VALID: u64 = 1 << 32;
/// The clone session whose I2E copy of a packet is its next pass (`RECIRC_CLONE_SESSION`).
pub const RECIRCULATION_SESSION: u32 = 100;

/// Aggregator states (`agg_state`; `AGG_*` in `common/protocol.p4`).
pub mod agg_state {
    /// Holds nothing.
    pub const FREE: u8 = 0;
    /// Summing for the round and block in `agg_tag`.
    pub const ACTIVE: u8 = 1;
    /// Released by a resend for the round and block in `agg_tag`: contributions bypass.
    pub const BYPASSED: u8 = 2;
    /// Complete for the round, block and generation in `agg_tag` and `agg_gen`, its sum kept
    /// for a pull (a receiver whose Result was lost asks the switch again) until the
    /// aggregator is reused: any contribution of another round, block or generation takes it
    /// over as if it were free. Only aggregates completed by a sequenced Data frame
    /// (`sgnn_wire::recovery::SEQ_VALID`) are kept; others are freed as before.
    pub const DONE: u8 = 3;
}

/// `aggregate(agg_base, dst_id, dst_worker, expected, more, seen_base, generation)`.
pub const AGGREGATE: Action = Action {
    name: "aggregate",
    id: 1,
    params: &[
        Param {
            name: "agg_base",
            bits: 32,
        },
        Param {
            name: "dst_id",
            bits: 32,
        },
        Param {
            name: "dst_worker",
            bits: 16,
        },
        Param {
            name: "expected",
            bits: 16,
        },
        Param {
            name: "more",
            bits: 1,
        },
        Param {
            name: "seen_base",
            bits: 32,
        },
        Param {
            name: "generation",
            bits: 16,
        },
    ],
};

/// `aggregate_up(agg_base, dst_id, dst_worker, expected, more, seen_base, generation)`:
/// [`AggAction::Up`], a leaf's share of an aggregate split between leaves and a spine
/// ([`crate::fabric`]). The v1model program only ([`crate::tna::V1MODEL_ONLY_ACTIONS`]).
pub const AGGREGATE_UP: Action = Action {
    name: "aggregate_up",
    id: 10,
    params: AGGREGATE.params,
};

/// `aggregate_partials(agg_base, dst_id, dst_worker, expected, more, seen_base,
/// generation)`: [`AggAction::Partials`], a spine's sum of leaves' partials
/// ([`crate::fabric`]). The v1model program only ([`crate::tna::V1MODEL_ONLY_ACTIONS`]).
pub const AGGREGATE_PARTIALS: Action = Action {
    name: "aggregate_partials",
    id: 11,
    params: AGGREGATE.params,
};

/// `deliver(dst_id, dst_worker, more, seen_base)`.
pub const DELIVER: Action = Action {
    name: "deliver",
    id: 2,
    params: &[
        Param {
            name: "dst_id",
            bits: 32,
        },
        Param {
            name: "dst_worker",
            bits: 16,
        },
        Param {
            name: "more",
            bits: 1,
        },
        Param {
            name: "seen_base",
            bits: 32,
        },
    ],
};

/// `replicate(group, more, seen_base)`.
pub const REPLICATE: Action = Action {
    name: "replicate",
    id: 8,
    params: &[
        Param {
            name: "group",
            bits: 16,
        },
        Param {
            name: "more",
            bits: 1,
        },
        Param {
            name: "seen_base",
            bits: 32,
        },
    ],
};

/// `agg_table`: (block, source, pass) -> aggregate, deliver or replicate.
pub const AGG_TABLE: Table = Table {
    name: "agg_table",
    id: 1,
    keys: &[
        Key {
            name: "block_id",
            bits: 16,
        },
        Key {
            name: "src_id",
            bits: 32,
        },
        Key {
            name: "pass",
            bits: 8,
        },
    ],
    actions: &[
        &AGGREGATE,
        &AGGREGATE_UP,
        &AGGREGATE_PARTIALS,
        &DELIVER,
        &REPLICATE,
    ],
    size: AGG_TABLE_SIZE,
};

macro_rules! lanes {
    ($($i:literal),*) => {
        [$(Register {
            name: concat!("agg_value_", $i),
            id: $i + 1,
            bits: 32,
            size: AGGREGATORS,
        }),*]
    };
}

/// `agg_value_0` .. `agg_value_31`: lane `i` of every aggregator (`@id` `i + 1`).
pub const AGG_VALUE: [Register; LANES] = lanes!(
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31
);
/// `agg_count`: contributions added.
pub const AGG_COUNT: Register = Register {
    name: "agg_count",
    id: 33,
    bits: 16,
    size: AGGREGATORS,
};
/// `agg_state`: [`agg_state`].
pub const AGG_STATE: Register = Register {
    name: "agg_state",
    id: 34,
    bits: 8,
    size: AGGREGATORS,
};
/// `agg_tag`: `round << 16 | block` the state belongs to.
pub const AGG_TAG: Register = Register {
    name: "agg_tag",
    id: 35,
    bits: 32,
    size: AGGREGATORS,
};
/// `agg_ecn`: sticky congestion mark of the aggregate.
pub const AGG_ECN: Register = Register {
    name: "agg_ecn",
    id: 36,
    bits: 8,
    size: AGGREGATORS,
};
/// `src_seen`: per (source, segment) of the block, `SEEN_VALID | round << 16 | block` of the
/// last first-pass contribution taken.
pub const SRC_SEEN: Register = Register {
    name: "src_seen",
    id: 49,
    bits: 33,
    size: SEEN_CELLS,
};
/// `agg_gen`: the generation the state belongs to.
pub const AGG_GEN: Register = Register {
    name: "agg_gen",
    id: 50,
    bits: 16,
    size: AGGREGATORS,
};
/// `agg_ids`: the sum (mod 2^32) of the `src_id`s of the contributions the aggregator holds,
/// its contributor digest. A pull's answer carries it with the count, so a receiver missing
/// one contribution knows which: the sum of its sources' ids less the digest.
pub const AGG_IDS: Register = Register {
    name: "agg_ids",
    id: 51,
    bits: 32,
    size: AGGREGATORS,
};

/// `agg_table`'s key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AggKey {
    /// Block.
    pub block_id: u16,
    /// Source vertex.
    pub src_id: u32,
    /// Pass (0 on arrival, then one per recirculation).
    pub pass: u8,
}

/// Parameters of [`AGGREGATE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregateParams {
    /// First aggregator of the destination; segment `s` uses `agg_base + s`.
    pub agg_base: u32,
    /// Destination vertex.
    pub dst_id: u32,
    /// Worker owning the destination (where the result goes).
    pub dst_worker: u16,
    /// Contributions that complete the aggregate.
    pub expected: u16,
    /// Whether the source feeds another aggregator (recirculate with `pass + 1`).
    pub more: bool,
    /// First `src_seen` cell of the source in this block; segment `s` uses `seen_base + s`.
    pub seen_base: u32,
    /// Generation of the aggregators at `agg_base` this row uses ([`sgnn_plan::AggSlot`]'s
    /// `generation`; 0 unless the plan recycles aggregators by live range). A contribution
    /// for an older generation than the one an aggregator holds for the same round and block
    /// is late: it goes to the host untouched (`bypassed_late`).
    pub generation: u16,
}

/// The actions of `agg_table`, typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggAction {
    /// Add the lanes into an aggregator.
    Aggregate(AggregateParams),
    /// No aggregator for this contribution: send the values to the destination's worker for
    /// host aggregation.
    Deliver {
        /// Destination vertex.
        dst_id: u32,
        /// Its worker.
        dst_worker: u16,
        /// Whether another pass follows.
        more: bool,
        /// First `src_seen` cell of the source in this block.
        seen_base: u32,
    },
    /// A leaf's share of an aggregate that spans leaves ([`crate::fabric`]): add as
    /// [`AggAction::Aggregate`] does, but the completed sum goes on as a partial (a Data
    /// frame, `src_id` = `dst_id` here, `count` = the contributions it holds) to the spine
    /// that `dst_worker` addresses ([`AGGREGATE_UP`]).
    Up(AggregateParams),
    /// A spine's aggregate of leaves' partials ([`crate::fabric`]): as
    /// [`AggAction::Aggregate`], but each frame adds its `count` (the contributions the
    /// partial holds) rather than one, so `expected` and the Result's count are contributions
    /// ([`AGGREGATE_PARTIALS`]).
    Partials(AggregateParams),
    /// Replicate the raw values to every worker of multicast group `group` (one Bypass per
    /// replica, addressed to "every neighbour of the source" on that worker). The plans' `M`
    /// delivery.
    Replicate {
        /// Multicast group of the workers.
        group: u16,
        /// Whether another pass (an aggregator of the same source) follows.
        more: bool,
        /// First `src_seen` cell of the source in this block.
        seen_base: u32,
    },
}

impl AggAction {
    /// Whether another pass follows.
    pub fn more(&self) -> bool {
        match *self {
            AggAction::Aggregate(p) | AggAction::Up(p) | AggAction::Partials(p) => p.more,
            AggAction::Deliver { more, .. } | AggAction::Replicate { more, .. } => more,
        }
    }

    /// The first `src_seen` cell of the source.
    pub fn seen_base(&self) -> u32 {
        match *self {
            AggAction::Aggregate(p) | AggAction::Up(p) | AggAction::Partials(p) => p.seen_base,
            AggAction::Deliver { seen_base, .. } | AggAction::Replicate { seen_base, .. } => {
                seen_base
            }
        }
    }
}

/// The first block of `plan` whose (source, segment) pairs, one `src_seen` cell each,
/// exceed `have` cells, as `(block, cells)`: a switch given such a plan would drop its last
/// sources as bad indexes. `switch-ctl load` and the simulator refuse it.
pub fn block_over_seen_cells(plan: &Plan, have: u64) -> Option<(usize, u64)> {
    let segments = u64::from(plan.manifest.segments);
    plan.blocks
        .iter()
        .map(|b| b.sources.len() as u64 * segments)
        .enumerate()
        .find(|&(_, cells)| cells > have)
}

/// The `agg_table` entries of block `b` of `plan` (`groups`: [`Plan::replica_groups`]). A
/// replicated source's pass 0 is `replicate(group)`; its aggregators follow from pass 1.
/// What `switch-ctl load` installs and what the software switch holds after it.
pub fn block_entries(plan: &Plan, b: usize, groups: &ReplicaGroups) -> Vec<(AggKey, AggAction)> {
    let mut out = Vec::with_capacity(plan.blocks[b].fanout.len());
    block_entries_by(
        plan,
        b,
        groups,
        |_, _, p| AggAction::Aggregate(p),
        |_, e| out.push(e),
    );
    out
}

/// [`block_entries`]'s walk, for a switch that turns rows into other actions (a fabric's
/// leaf, `crate::fabric::lower_block`): each source's entries in pass order, a replicated
/// source's `replicate` first; the action of source index `i`'s pass to `row` is
/// `aggregate(i, row, params)`, given the `aggregate` parameters a star's switch gets; every
/// entry goes to `push` with its source index.
pub(crate) fn block_entries_by(
    plan: &Plan,
    b: usize,
    groups: &ReplicaGroups,
    mut aggregate: impl FnMut(usize, u32, AggregateParams) -> AggAction,
    mut push: impl FnMut(usize, (AggKey, AggAction)),
) {
    let block = &plan.blocks[b];
    let segments = plan.manifest.segments;
    for (i, &src) in block.sources.iter().enumerate() {
        let passes = block.passes(i);
        let seen_base = i as u32 * segments;
        let key = |pass: usize| AggKey {
            block_id: b as u16,
            src_id: src,
            pass: pass as u8,
        };
        let first = match groups.of_vertex.get(&src) {
            Some(&group) => {
                push(
                    i,
                    (
                        key(0),
                        AggAction::Replicate {
                            group: group as u16,
                            more: !passes.is_empty(),
                            seen_base,
                        },
                    ),
                );
                1
            }
            None => 0,
        };
        for (p, &row) in passes.iter().enumerate() {
            let slot = block.aggregators[row as usize];
            let params = AggregateParams {
                agg_base: slot.base,
                dst_id: slot.dst,
                dst_worker: plan.partition[slot.dst as usize] as u16,
                expected: slot.expected as u16,
                more: p + 1 < passes.len(),
                seen_base,
                generation: slot_generation(slot.generation),
            };
            push(i, (key(first + p), aggregate(i, row, params)));
        }
    }
}

/// A row's generation as `aggregate`'s 16-bit parameter.
pub(crate) fn slot_generation(g: u32) -> u16 {
    u16::try_from(g).expect("the planner keeps an aggregator's generation below 65536")
}
