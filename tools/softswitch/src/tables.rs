//! The match-action tables of the SwitchGNN pipeline and how a plan fills them.
//!
//! | table | key | actions |
//! |---|---|---|
//! | `agg_table` | `block_id` exact, `src_id` exact, `pass` exact | `aggregate(agg_base, dst_id, dst_worker, expected, more, seen_base, generation)`, `deliver(dst_id, dst_worker, more, seen_base)`, `replicate(group, more, seen_base)` |
//! | `worker_table` | `worker_id` exact | `set_worker(port)` |
//! | `ipv4_forward` | `dst_addr` exact | `forward(port)` |
//! | `dscp_priority` | `dscp` exact | `set_priority(queue)` |
//! | `worker_addr` (egress) | `worker_id` exact | `set_worker_addr(mac, ip)` |
//! | `port_worker` | `port` exact (the ingress port) | `set_port_worker(worker_id)` |
//!
//! Plus the packet replication engine's multicast groups (group 1: every worker, replica id =
//! worker id; groups from [`sgnn_plan::FIRST_REPLICA_GROUP`] on: the worker sets raw frames
//! are replicated to, [`sgnn_plan::Plan::replica_groups`]). Names, ids and widths are those of `docs/switch-interface.md`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use sgnn_plan::Plan;

/// A multiplicative hasher for the small integer keys of the tables (exact-match keys are
/// not attacker-chosen here; SipHash cost a third of the pipeline's time).
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// HashMap with [`KeyHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// An egress port number.
pub type PortId = u16;

/// Parameters of the `aggregate` action.
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

/// Actions of `agg_table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggAction {
    /// Add the lanes into an aggregator.
    Aggregate(AggregateParams),
    /// No aggregator for this contribution (cut edge or overflow): send the values to the
    /// destination's worker for host aggregation.
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
    /// Replicate the raw values to every worker of multicast group `group` (the packet
    /// replication engine: one Bypass per replica, addressed to "every neighbour of the
    /// source" on that worker; no aggregator, no recirculation). The plans' `M` delivery.
    Replicate {
        /// Multicast group of the workers.
        group: u16,
        /// Whether another pass (an aggregator of the same source) follows.
        more: bool,
        /// First `src_seen` cell of the source in this block.
        seen_base: u32,
    },
}

/// Where a worker is: its port (`worker_table`) and addresses (`worker_addr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerPort {
    /// Port the worker is attached to.
    pub port: PortId,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its IPv4 address.
    pub ip: [u8; 4],
}

/// Parameters of `set_worker_addr` (egress `worker_addr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerAddr {
    /// MAC address.
    pub mac: [u8; 6],
    /// IPv4 address.
    pub ip: [u8; 4],
}

/// One copy of a multicast group: replica id (`egress_rid`, the worker id) and port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replica {
    /// Replica id; block-advance replicas carry the worker id here.
    pub rid: u16,
    /// Egress port.
    pub port: PortId,
}

/// The multicast group block-advance goes to.
pub const ADVANCE_GROUP: u16 = 1;

/// All tables of the pipeline.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// `agg_table`: (block, source, pass) -> action.
    pub agg_table: FastMap<(u16, u32, u8), AggAction>,
    /// `worker_table`: worker id -> egress port.
    pub worker_table: FastMap<u16, PortId>,
    /// `worker_addr` (egress): worker id -> addresses.
    pub worker_addr: FastMap<u16, WorkerAddr>,
    /// `port_worker`: ingress port -> the worker on it (a BlockDone must come from there).
    pub port_worker: FastMap<PortId, u16>,
    /// Multicast groups of the packet replication engine.
    pub multicast_groups: FastMap<u16, Vec<Replica>>,
    /// `ipv4_forward`: destination address -> port.
    pub ipv4_forward: FastMap<[u8; 4], PortId>,
    /// `dscp_priority`: DSCP -> priority queue (0 = lowest); unset DSCPs use queue 0.
    pub dscp_priority: FastMap<u8, u8>,
}

impl Tables {
    /// The `agg_table` entries of every block of a plan, plus workers, IPv4 routes and the
    /// block-advance multicast group.
    pub fn from_plan(plan: &Plan, workers: &[WorkerPort]) -> Tables {
        let mut t = Tables::for_workers(workers);
        let groups = plan.replica_groups();
        for (i, set) in groups.sets.iter().enumerate() {
            let id = (sgnn_plan::FIRST_REPLICA_GROUP as usize + i) as u16;
            let replicas = set
                .iter()
                .filter_map(|&w| workers.get(w as usize).map(|p| (w, p)))
                .map(|(w, p)| Replica {
                    rid: w as u16,
                    port: p.port,
                })
                .collect();
            t.multicast_groups.insert(id, replicas);
        }
        for b in 0..plan.blocks.len() {
            t.install_block(plan, b, &groups);
        }
        t
    }

    /// Worker `i` of `workers` in `worker_table`, `port_worker`, `worker_addr`,
    /// `ipv4_forward` and the block-advance group; no aggregation entries.
    pub fn for_workers(workers: &[WorkerPort]) -> Tables {
        let mut t = Tables::default();
        let mut group = Vec::new();
        for (i, w) in workers.iter().enumerate() {
            let id = i as u16;
            t.worker_table.insert(id, w.port);
            t.port_worker.insert(w.port, id);
            t.worker_addr.insert(
                id,
                WorkerAddr {
                    mac: w.mac,
                    ip: w.ip,
                },
            );
            t.ipv4_forward.insert(w.ip, w.port);
            group.push(Replica {
                rid: id,
                port: w.port,
            });
        }
        t.multicast_groups.insert(ADVANCE_GROUP, group);
        t
    }

    /// Installs block `b`'s `agg_table` entries (`groups`: the plan's replica groups). A
    /// replicated source's pass 0 replicates it; its aggregators follow from pass 1.
    pub fn install_block(&mut self, plan: &Plan, b: usize, groups: &sgnn_plan::ReplicaGroups) {
        let block = &plan.blocks[b];
        let segments = plan.manifest.segments;
        for (i, &src) in block.sources.iter().enumerate() {
            let passes = block.passes(i);
            let first = match groups.of_vertex.get(&src) {
                Some(&group) => {
                    self.agg_table.insert(
                        (b as u16, src, 0),
                        AggAction::Replicate {
                            group: group as u16,
                            more: !passes.is_empty(),
                            seen_base: i as u32 * segments,
                        },
                    );
                    1
                }
                None => 0,
            };
            for (p, &row) in passes.iter().enumerate() {
                let slot = block.aggregators[row as usize];
                self.agg_table.insert(
                    (b as u16, src, (first + p) as u8),
                    AggAction::Aggregate(AggregateParams {
                        agg_base: slot.base,
                        dst_id: slot.dst,
                        dst_worker: plan.partition[slot.dst as usize] as u16,
                        expected: slot.expected as u16,
                        more: p + 1 < passes.len(),
                        seen_base: i as u32 * segments,
                        generation: u16::try_from(slot.generation)
                            .expect("the planner keeps an aggregator's generation below 65536"),
                    }),
                );
            }
        }
    }
}
