//! The match-action tables of the SwitchGNN pipeline and how a plan fills them.
//!
//! | table | key | actions |
//! |---|---|---|
//! | `agg_table` | `block_id` exact, `src_id` exact, `pass` exact | `aggregate(agg_base, dst_id, dst_worker, expected, more, seen_base, generation)`, `deliver(dst_id, dst_worker, more, seen_base)`, `replicate(group, more, seen_base)` |
//! | `worker_table` | `worker_id` exact | `set_worker(port)` |
//! | `ipv4_forward` | `dst_addr` exact | `forward(port)` |
//! | `dscp_priority` | `dscp` exact | `set_priority(queue)` |
//! | `worker_addr` (egress) | `worker_id` exact | `set_worker_addr(mac, ip)` |
//! | `port_worker` | `port` exact (the ingress port) | `set_port_worker(worker_id)`, `set_port_link(peer_id)` |
//!
//! Plus the packet replication engine's multicast groups (group 1: every worker, replica id =
//! worker id; groups from [`sgnn_plan::FIRST_REPLICA_GROUP`] on: the worker sets raw frames
//! are replicated to, [`sgnn_plan::Plan::replica_groups`]). Names, ids and widths are those of `docs/switch-interface.md`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use sgnn_plan::Plan;
use sgnn_switch::fabric::{Fabric, FabricSwitch};
use sgnn_switch::TypedEntry;

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

pub use sgnn_switch::aggregation::{AggAction, AggKey, AggregateParams};
pub use sgnn_switch::forwarding::PortEnd;

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
pub const ADVANCE_GROUP: u16 = sgnn_switch::block_sync::ADVANCE_GROUP;

/// `agg_table`'s key: (block, source, pass).
pub type AggTableKey = (u16, u32, u8);

/// `agg_table`: an exact-match map (block, source, pass) -> action, held as one map per block.
///
/// The pipeline looks entries up one block at a time (a block's exchange ends before the next
/// starts), so keeping each block's entries together keeps its lookups within a fraction of
/// the table: with every block in one map a large plan's lookups each touched a random cache
/// line of the whole table (the simulator's speed case spent a tenth of its time there). To
/// its users it is the one map of the switch's table: same keys, same entries, same length.
#[derive(Debug, Clone, Default)]
pub struct AggTable {
    /// Per block id, that block's entries keyed by (source, pass).
    blocks: Vec<FastMap<(u32, u8), AggAction>>,
    len: usize,
}

impl AggTable {
    /// The entry of `k`.
    pub fn get(&self, k: &AggTableKey) -> Option<&AggAction> {
        self.blocks.get(k.0 as usize)?.get(&(k.1, k.2))
    }

    /// Whether `k` has an entry.
    pub fn contains_key(&self, k: &AggTableKey) -> bool {
        self.get(k).is_some()
    }

    /// Sets `k`'s entry; returns the one it replaced.
    pub fn insert(&mut self, k: AggTableKey, a: AggAction) -> Option<AggAction> {
        let b = k.0 as usize;
        if self.blocks.len() <= b {
            self.blocks.resize_with(b + 1, FastMap::default);
        }
        let old = self.blocks[b].insert((k.1, k.2), a);
        self.len += old.is_none() as usize;
        old
    }

    /// Removes every entry of block `b`.
    pub fn remove_block(&mut self, b: u16) {
        if let Some(m) = self.blocks.get_mut(b as usize) {
            self.len -= m.len();
            *m = FastMap::default();
        }
    }

    /// Whether block `b` has an entry.
    pub fn has_block(&self, b: u16) -> bool {
        self.blocks.get(b as usize).is_some_and(|m| !m.is_empty())
    }

    /// Removes `k`'s entry; returns it.
    pub fn remove(&mut self, k: &AggTableKey) -> Option<AggAction> {
        let old = self.blocks.get_mut(k.0 as usize)?.remove(&(k.1, k.2));
        self.len -= old.is_some() as usize;
        old
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry, block by block (in no order within a block).
    pub fn iter(&self) -> impl Iterator<Item = (AggTableKey, &AggAction)> + '_ {
        self.blocks.iter().enumerate().flat_map(|(b, m)| {
            m.iter()
                .map(move |(&(src, pass), a)| ((b as u16, src, pass), a))
        })
    }
}

impl PartialEq for AggTable {
    /// Equal when they hold the same entries (however their blocks were allocated).
    fn eq(&self, o: &AggTable) -> bool {
        self.len == o.len && self.iter().all(|(k, a)| o.get(&k) == Some(a))
    }
}

impl Eq for AggTable {}

/// All tables of the pipeline.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// `agg_table`: (block, source, pass) -> action.
    pub agg_table: AggTable,
    /// `worker_table`: worker id -> egress port.
    pub worker_table: FastMap<u16, PortId>,
    /// `worker_addr` (egress): worker id -> addresses.
    pub worker_addr: FastMap<u16, WorkerAddr>,
    /// `port_worker`: ingress port -> what is at its other end, a worker or a link cabled to
    /// another switch; a port with none is a stranger's (`sgnn_switch::admission`).
    pub port_worker: FastMap<PortId, PortEnd>,
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
        let (mut t, groups) = Tables::without_blocks(plan, workers);
        for b in 0..plan.blocks.len() {
            t.install_block(plan, b, &groups);
        }
        t
    }

    /// [`Tables::from_plan`] without any `agg_table` entry, and the plan's replica groups
    /// for [`Tables::install_block`]: for a caller that installs blocks as the switch reaches
    /// them.
    pub fn without_blocks(
        plan: &Plan,
        workers: &[WorkerPort],
    ) -> (Tables, sgnn_plan::ReplicaGroups) {
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
        (t, groups)
    }

    /// The tables of `switch` on `fabric` (`sgnn_switch::fabric`: its ports, peers and
    /// routes, its advance group and the plan's replica groups `groups`,
    /// [`Plan::replica_groups`]) without `agg_table` entries. Worker `w`'s address is
    /// `sgnn_wire::addressing::worker_ip(w)` and `worker_mac(w)`.
    pub fn for_fabric(
        fabric: &Fabric,
        switch: FabricSwitch,
        groups: &sgnn_plan::ReplicaGroups,
    ) -> Tables {
        let st = sgnn_switch::fabric::switch_tables(fabric, switch, groups);
        let mut t = Tables::default();
        for e in st.entries {
            let row = t.insert_entry(e);
            debug_assert!(row, "switch_tables gives table rows only");
        }
        for (id, replicas) in st.groups {
            let r = replicas
                .into_iter()
                .map(|(rid, port)| Replica { rid, port })
                .collect();
            t.multicast_groups.insert(id, r);
        }
        t
    }

    /// Inserts (or replaces) the row `e` in its table; `false` for the settings
    /// ([`TypedEntry::Config`]), which are no table row.
    pub fn insert_entry(&mut self, e: TypedEntry) -> bool {
        match e {
            TypedEntry::Agg(k, a) => {
                self.agg_table.insert((k.block_id, k.src_id, k.pass), a);
            }
            TypedEntry::Worker { worker_id, port } => {
                self.worker_table.insert(worker_id, port);
            }
            TypedEntry::Ipv4Forward { dst_addr, port } => {
                self.ipv4_forward.insert(dst_addr, port);
            }
            TypedEntry::DscpPriority { dscp, queue } => {
                self.dscp_priority.insert(dscp, queue);
            }
            TypedEntry::WorkerAddr { worker_id, mac, ip } => {
                self.worker_addr.insert(worker_id, WorkerAddr { mac, ip });
            }
            TypedEntry::PortWorker { port, worker_id } => {
                self.port_worker.insert(port, PortEnd::Worker(worker_id));
            }
            TypedEntry::PortLink { port, peer_id } => {
                self.port_worker.insert(port, PortEnd::Link(peer_id));
            }
            TypedEntry::Config(_) => return false,
        }
        true
    }

    /// Adds `agg_table` entries (as [`sgnn_switch::fabric::lower_block`] makes them).
    pub fn install_entries(&mut self, entries: &[(AggKey, AggAction)]) {
        for &(k, a) in entries {
            self.agg_table.insert((k.block_id, k.src_id, k.pass), a);
        }
    }

    /// Worker `i` of `workers` in `worker_table`, `port_worker`, `worker_addr`,
    /// `ipv4_forward` and the block-advance group; no aggregation entries.
    pub fn for_workers(workers: &[WorkerPort]) -> Tables {
        let mut t = Tables::default();
        let mut group = Vec::new();
        for (i, w) in workers.iter().enumerate() {
            let id = i as u16;
            t.worker_table.insert(id, w.port);
            t.port_worker.insert(w.port, PortEnd::Worker(id));
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

    /// Installs block `b`'s `agg_table` entries (`groups`: the plan's replica groups), as
    /// the switch contract derives them ([`sgnn_switch::aggregation::block_entries`], the same
    /// entries `switch-ctl load` writes).
    pub fn install_block(&mut self, plan: &Plan, b: usize, groups: &sgnn_plan::ReplicaGroups) {
        for (k, a) in sgnn_switch::aggregation::block_entries(plan, b, groups) {
            self.agg_table.insert((k.block_id, k.src_id, k.pass), a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deliver(dst_id: u32) -> AggAction {
        AggAction::Deliver {
            dst_id,
            dst_worker: 1,
            more: false,
            seen_base: 0,
        }
    }

    #[test]
    fn the_agg_table_behaves_as_one_map_of_every_block() {
        let mut t = AggTable::default();
        assert!(t.is_empty() && t.get(&(3, 1, 0)).is_none());
        assert_eq!(t.insert((3, 1, 0), deliver(10)), None);
        assert_eq!(t.insert((0, 1, 0), deliver(11)), None);
        assert_eq!(t.insert((3, 1, 1), deliver(12)), None);
        // Replacing an entry keeps the length.
        assert_eq!(t.insert((3, 1, 0), deliver(13)), Some(deliver(10)));
        assert_eq!(t.len(), 3);
        assert_eq!(t.get(&(3, 1, 0)), Some(&deliver(13)));
        assert!(t.contains_key(&(0, 1, 0)) && !t.contains_key(&(1, 1, 0)));
        // Unknown blocks, sources and passes are misses, not panics.
        assert!(t.get(&(u16::MAX, 1, 0)).is_none() && t.remove(&(9, 9, 9)).is_none());
        let mut keys: Vec<AggTableKey> = t.iter().map(|(k, _)| k).collect();
        keys.sort_unstable();
        assert_eq!(keys, [(0, 1, 0), (3, 1, 0), (3, 1, 1)]);
        // Equal to a table with the same entries however its blocks were allocated.
        let mut u = AggTable::default();
        for (k, &a) in t.iter() {
            u.insert(k, a);
        }
        u.insert((7, 0, 0), deliver(1));
        assert_ne!(t, u);
        assert_eq!(u.remove(&(7, 0, 0)), Some(deliver(1)));
        assert_eq!(t, u);
        assert_eq!(t.remove(&(3, 1, 1)), Some(deliver(12)));
        assert_eq!(t.len(), 2);
        assert_ne!(t, u);
        // A whole block out at once (the simulator's switch, given blocks as it reaches them).
        assert!(u.has_block(3) && !u.has_block(1) && !u.has_block(99));
        u.remove_block(3);
        assert!(!u.has_block(3) && u.has_block(0));
        assert_eq!(u.len(), 1);
        assert!(u.get(&(3, 1, 0)).is_none());
        u.remove_block(99);
        assert_eq!(u.len(), 1);
    }
}
