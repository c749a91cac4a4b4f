//! Two-level aggregation on a leaf-spine fabric: which switch aggregates what, and the
//! `agg_table` entries, ports and peers each switch gets. The two actions
//! ([`crate::aggregation::AGGREGATE_UP`], [`crate::aggregation::AGGREGATE_PARTIALS`]) are in
//! the v1model program and the software switch (not the TNA program:
//! [`crate::tna::V1MODEL_ONLY_ACTIONS`]), and so are the leaf and spine roles of block
//! synchronisation ([`crate::config::Role`], `set_config`'s `role`, `sync_base`, `up_id`,
//! `up_peer`; the TNA program takes and ignores them).
//!
//! Shape: `leaves` leaf switches with `workers / leaves` workers each (worker `w` on leaf
//! `w / per_leaf`, on the leaf's port `w % per_leaf`), every leaf linked to every one of
//! `spines` spines (leaf port `per_leaf + s` to spine `s`; spine port `l` to leaf `l`).
//!
//! - **Aggregation.** A leaf adds its own workers' contributions. An aggregate whose
//!   contributors are all under the destination's leaf completes there and goes down as a
//!   Result (`aggregate`, as on a star). Any other aggregate is split: each contributing leaf
//!   adds its share (`aggregate_up`, [`AggAction::Up`]) and sends the sum up as a *partial*
//!   (a Data frame whose `count` is the contributions it holds) to the aggregate's spine
//!   ([`Fabric::spine_of`]), which adds the partials (`aggregate_partials`,
//!   [`AggAction::Partials`]: each adds its count) and sends the Result down to the
//!   destination's worker. A partial's `src_id` on the spine is its index among the spine's
//!   partials of the block, so every contributing leaf has an entry of its own (and a
//!   `src_seen` cell, so a duplicate partial is dropped like a duplicate contribution).
//! - **Block synchronisation.** A leaf counts its workers' BlockDone. When all are in, it
//!   sends one BlockDone up to the root spine (spine 0; its worker id there is
//!   [`Fabric::leaf_peer`]) instead of advancing. The root counts the leaves and multicasts
//!   BlockAdvance to every leaf; a leaf that receives the advance for its current block
//!   advances and multicasts it to its workers. Spines do not gate partials by block (the
//!   leaves did; a spine other than the root never learns the block): an aggregator's
//!   `agg_tag` keeps blocks apart.
//! - **Peers.** A switch's `worker_table` and `worker_addr` address other switches by peer
//!   ids after the workers': on a leaf, spine `s` is `workers + s`; on a spine, leaf `l` is
//!   `workers + l`.
//! - **Links.** The ports cabled to another switch, and only those, have a `port_worker`
//!   entry `set_port_link(peer)` (a leaf's uplinks, a spine's ports to its leaves): the
//!   admission rule trusts them ([`crate::admission`]). Every other port of no worker (a
//!   leaf's spare ports, a spine's ports past its leaves) is a stranger's.
//!
//! Not yet: loss recovery across the two levels (a lost partial leaves its aggregate
//! incomplete; with loss the simulator runs its models on a fabric), raw bypass of a split
//! aggregate, the TNA program, and a testbed of several switch processes.

use sgnn_plan::{Plan, ReplicaGroups};
use sgnn_wire::addressing::{worker_ip, worker_mac};

use crate::aggregation::{block_entries_by, slot_generation, AggAction, AggKey, AggregateParams};
use crate::config::{Role, Settings};
use crate::TypedEntry;

/// The spine that counts the leaves' BlockDone and multicasts BlockAdvance.
pub const ROOT_SPINE: u32 = 0;

/// Why a fabric shape is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FabricError {
    /// No leaf, no spine, or leaves that do not divide the workers.
    #[error(
        "a fabric of {leaves} leaves and {spines} spines for {workers} workers: needs at least \
         one leaf and one spine, and leaves that divide the workers"
    )]
    Shape {
        /// Workers.
        workers: u32,
        /// Leaves.
        leaves: u32,
        /// Spines.
        spines: u32,
    },
    /// Peer ids (workers + leaves or spines) or ports past 16 bits.
    #[error("{workers} workers with {others} switches do not fit 16-bit worker ids")]
    TooLarge {
        /// Workers.
        workers: u32,
        /// Leaves plus spines.
        others: u32,
    },
}

/// A leaf or a spine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FabricSwitch {
    /// Leaf `l`.
    Leaf(u32),
    /// Spine `s`.
    Spine(u32),
}

/// A leaf-spine fabric's shape (see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fabric {
    /// Workers (hosts), `leaves * per_leaf`.
    pub workers: u32,
    /// Leaf switches.
    pub leaves: u32,
    /// Spine switches.
    pub spines: u32,
}

impl Fabric {
    /// A fabric of `leaves` leaves (which must divide `workers`) and `spines` spines.
    pub fn new(workers: u32, leaves: u32, spines: u32) -> Result<Fabric, FabricError> {
        if leaves == 0 || spines == 0 || workers == 0 || !workers.is_multiple_of(leaves) {
            return Err(FabricError::Shape {
                workers,
                leaves,
                spines,
            });
        }
        let others = leaves.max(spines);
        if u64::from(workers) + u64::from(others) > u64::from(u16::MAX)
            || u64::from(workers / leaves) + u64::from(spines) > u64::from(u16::MAX)
        {
            return Err(FabricError::TooLarge {
                workers,
                others: leaves + spines,
            });
        }
        Ok(Fabric {
            workers,
            leaves,
            spines,
        })
    }

    /// Workers per leaf.
    pub fn per_leaf(&self) -> u32 {
        self.workers / self.leaves
    }

    /// The leaf of worker `w`.
    pub fn leaf_of(&self, w: u32) -> u32 {
        w / self.per_leaf()
    }

    /// The workers of leaf `l`.
    pub fn workers_of(&self, l: u32) -> std::ops::Range<u32> {
        l * self.per_leaf()..(l + 1) * self.per_leaf()
    }

    /// A leaf's peer id (and `worker_table` entry) for spine `s`.
    pub fn spine_peer(&self, s: u32) -> u16 {
        (self.workers + s) as u16
    }

    /// A spine's peer id for leaf `l`: its worker id in the root's block synchronisation.
    pub fn leaf_peer(&self, l: u32) -> u16 {
        (self.workers + l) as u16
    }

    /// A leaf's port to spine `s` (its workers' ports come first).
    pub fn uplink_port(&self, s: u32) -> u16 {
        (self.per_leaf() + s) as u16
    }

    /// The spine a leaf sends traffic for a worker under another leaf through (raw values,
    /// replicas, forwarded frames): spread by the worker.
    pub fn spine_towards(&self, w: u32) -> u32 {
        w % self.spines
    }

    /// Leaf `l`'s MAC and IPv4 address (`10.0.1.l`, and a MAC beside it).
    pub fn leaf_addr(&self, l: u32) -> ([u8; 6], [u8; 4]) {
        let (hi, lo) = ((l >> 8) as u8, l as u8);
        ([2, 0, 0, 1, hi, lo], [10, 0, 1 + hi, lo])
    }

    /// Spine `s`'s MAC and IPv4 address (`10.0.128.s`, and a MAC beside it).
    pub fn spine_addr(&self, s: u32) -> ([u8; 6], [u8; 4]) {
        let (hi, lo) = ((s >> 8) as u8, s as u8);
        ([2, 0, 0, 2, hi, lo], [10, 0, 128 + hi, lo])
    }

    /// The address of `switch`.
    pub fn addr(&self, switch: FabricSwitch) -> ([u8; 6], [u8; 4]) {
        match switch {
            FabricSwitch::Leaf(l) => self.leaf_addr(l),
            FabricSwitch::Spine(s) => self.spine_addr(s),
        }
    }

    /// The spine that finishes row `row` of block `b` (spread by a hash of the two).
    pub fn spine_of(&self, b: usize, row: u32) -> u32 {
        let mut h = (b as u64) << 32 | u64::from(row);
        // splitmix64's finaliser: neighbouring rows land on unrelated spines.
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
        (h % u64::from(self.spines)) as u32
    }
}

/// What `switch` holds besides its `agg_table` rows and DSCP classes: its ports, peers and
/// routes (`worker_table`, `worker_addr`, `ipv4_forward`, `port_worker`: its workers' ports
/// and its links) and its multicast groups (the advance group and the plan's replica groups,
/// `groups`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchTables {
    /// Table entries.
    pub entries: Vec<TypedEntry>,
    /// Multicast groups: (group, replicas as (replica id, port)).
    pub groups: Vec<(u16, Vec<(u16, u16)>)>,
}

/// [`SwitchTables`] of `switch` (see the module for ports and peers). Worker `w`'s address is
/// `sgnn_wire::addressing::worker_ip(w)` and `worker_mac(w)`.
pub fn switch_tables(
    fabric: &Fabric,
    switch: FabricSwitch,
    groups: &ReplicaGroups,
) -> SwitchTables {
    let mut entries = Vec::new();
    let mut ports = vec![0u16; fabric.workers as usize];
    let mut advance = Vec::new();
    let peer =
        |entries: &mut Vec<TypedEntry>, id: u16, port: u16, (mac, ip): ([u8; 6], [u8; 4])| {
            entries.push(TypedEntry::Worker {
                worker_id: id,
                port,
            });
            entries.push(TypedEntry::WorkerAddr {
                worker_id: id,
                mac,
                ip,
            });
            entries.push(TypedEntry::Ipv4Forward { dst_addr: ip, port });
        };
    for w in 0..fabric.workers {
        let local = matches!(switch, FabricSwitch::Leaf(l) if fabric.leaf_of(w) == l);
        let port = match switch {
            FabricSwitch::Leaf(l) if local => (w - fabric.workers_of(l).start) as u16,
            FabricSwitch::Leaf(_) => fabric.uplink_port(fabric.spine_towards(w)),
            FabricSwitch::Spine(_) => fabric.leaf_of(w) as u16,
        };
        let id = w as u16;
        ports[w as usize] = port;
        peer(&mut entries, id, port, (worker_mac(id), worker_ip(id)));
        if local {
            entries.push(TypedEntry::PortWorker {
                port,
                worker_id: id,
            });
            advance.push((id, port));
        }
    }
    match switch {
        FabricSwitch::Leaf(_) => {
            for s in 0..fabric.spines {
                let port = fabric.uplink_port(s);
                let id = fabric.spine_peer(s);
                peer(&mut entries, id, port, fabric.spine_addr(s));
                entries.push(TypedEntry::PortLink { port, peer_id: id });
            }
        }
        FabricSwitch::Spine(_) => {
            for l in 0..fabric.leaves {
                let id = fabric.leaf_peer(l);
                peer(&mut entries, id, l as u16, fabric.leaf_addr(l));
                entries.push(TypedEntry::PortLink {
                    port: l as u16,
                    peer_id: id,
                });
                advance.push((id, l as u16));
            }
        }
    }
    let mut out = vec![(crate::block_sync::ADVANCE_GROUP, advance)];
    for (i, set) in groups.sets.iter().enumerate() {
        let id = (sgnn_plan::FIRST_REPLICA_GROUP as usize + i) as u16;
        let replicas = set
            .iter()
            .filter(|&&w| w < fabric.workers)
            .map(|&w| (w as u16, ports[w as usize]))
            .collect();
        out.push((id, replicas));
    }
    SwitchTables {
        entries,
        groups: out,
    }
}

/// The settings of `switch` for `plan` (`set_config`): its workers (a leaf's own, a spine's
/// leaves), blocks per round, plan tag, role and address; the rest as
/// [`Settings::default`].
pub fn settings(plan: &Plan, fabric: &Fabric, switch: FabricSwitch) -> Settings {
    let (mac, ip) = fabric.addr(switch);
    let (workers, role) = match switch {
        FabricSwitch::Leaf(l) => (
            fabric.per_leaf(),
            Role::Leaf {
                first_worker: fabric.workers_of(l).start as u16,
                id: fabric.leaf_peer(l),
                root: fabric.spine_peer(ROOT_SPINE),
            },
        ),
        FabricSwitch::Spine(_) => (
            fabric.leaves,
            Role::Spine {
                first_peer: fabric.leaf_peer(0),
            },
        ),
    };
    Settings {
        workers: workers as u16,
        blocks_per_round: plan.blocks.len() as u16,
        plan_tag: plan.tag(),
        switch_mac: mac,
        switch_ip: ip,
        role,
        ..Settings::default()
    }
}

/// Block `b`'s `agg_table` entries for every switch of the fabric.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FabricBlock {
    /// Per leaf.
    pub leaves: Vec<Vec<(AggKey, AggAction)>>,
    /// Per spine.
    pub spines: Vec<Vec<(AggKey, AggAction)>>,
    /// Aggregates that complete on a leaf (every contributor under the destination's leaf).
    pub leaf_rows: u64,
    /// Aggregates split between leaves and a spine.
    pub split_rows: u64,
}

impl FabricBlock {
    /// The entries of `switch`.
    pub fn of(&self, switch: FabricSwitch) -> &[(AggKey, AggAction)] {
        match switch {
            FabricSwitch::Leaf(l) => &self.leaves[l as usize],
            FabricSwitch::Spine(s) => &self.spines[s as usize],
        }
    }
}

/// Lowers block `b` of `plan` onto `fabric` (see the module): `groups` is
/// [`Plan::replica_groups`] (a replicated source's pass 0 replicates on its leaf, as on a
/// star).
pub fn lower_block(plan: &Plan, fabric: &Fabric, b: usize, groups: &ReplicaGroups) -> FabricBlock {
    let block = &plan.blocks[b];
    let segments = plan.manifest.segments;
    let nl = fabric.leaves as usize;
    let rows = block.aggregators.len();
    let leaf_of_src = |src: u32| {
        fabric.leaf_of(
            plan.owner(src)
                .expect("a verified plan names every source's owner"),
        ) as usize
    };
    // Contributions per (row, leaf).
    let mut local = vec![0u32; rows * nl];
    for (i, &src) in block.sources.iter().enumerate() {
        let l = leaf_of_src(src);
        for &row in block.passes(i) {
            local[row as usize * nl + l] += 1;
        }
    }
    let mut out = FabricBlock {
        leaves: vec![Vec::new(); nl],
        spines: vec![Vec::new(); fabric.spines as usize],
        ..FabricBlock::default()
    };
    // Per (row, leaf) of a split row: the partial's id on the row's spine.
    let mut partial = vec![u32::MAX; rows * nl];
    let mut next_partial = vec![0u32; fabric.spines as usize];
    for (row, slot) in block.aggregators.iter().enumerate() {
        let dst_worker = plan.partition[slot.dst as usize];
        let dl = fabric.leaf_of(dst_worker) as usize;
        let shares = &local[row * nl..(row + 1) * nl];
        let alone = shares.iter().enumerate().all(|(l, &n)| n == 0 || l == dl);
        if alone {
            out.leaf_rows += 1;
            continue;
        }
        out.split_rows += 1;
        let s = fabric.spine_of(b, row as u32);
        for (l, &n) in shares.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let k = next_partial[s as usize];
            next_partial[s as usize] += 1;
            partial[row * nl + l] = k;
            out.spines[s as usize].push((
                AggKey {
                    block_id: b as u16,
                    src_id: k,
                    pass: 0,
                },
                AggAction::Partials(AggregateParams {
                    agg_base: slot.base,
                    dst_id: slot.dst,
                    dst_worker: dst_worker as u16,
                    expected: slot.expected as u16,
                    more: false,
                    seen_base: k * segments,
                    generation: slot_generation(slot.generation),
                }),
            ));
        }
    }
    // Each source's rows on its owner's leaf: a row finished there as on a star, a split
    // row's share up to the row's spine.
    let src_leaf: Vec<usize> = block.sources.iter().map(|&u| leaf_of_src(u)).collect();
    let leaves = &mut out.leaves;
    block_entries_by(
        plan,
        b,
        groups,
        |i, row, p| {
            let l = src_leaf[i];
            match partial[row as usize * nl + l] {
                u32::MAX => AggAction::Aggregate(p),
                k => AggAction::Up(AggregateParams {
                    dst_id: k,
                    dst_worker: fabric.spine_peer(fabric.spine_of(b, row)),
                    expected: local[row as usize * nl + l] as u16,
                    ..p
                }),
            }
        },
        |i, e| leaves[src_leaf[i]].push(e),
    );
    out
}
