//! What a plan asks of a switch: table entries, register settings, multicast groups and clone
//! sessions, by the names of `docs/switch-interface.md`, checked against the switch's sizes.
//!
//! This is target-neutral: `switch-ctl load` hands it to a P4Runtime target (bmv2, Tofino, or
//! the software switch serving P4Runtime), and tests compare it with what a switch holds.

use sgnn_p4rt::schema::names;
use sgnn_plan::Plan;
use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::dscp;

/// Sizes compiled into the switch (`p4/v1model/config.p4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchSizes {
    /// `AGGREGATORS`: cells of every `agg_*` register.
    pub aggregators: u64,
    /// `AGG_TABLE_SIZE`: entries `agg_table` holds.
    pub agg_table: u64,
    /// `SEEN_CELLS`: cells of `src_seen`.
    pub seen_cells: u64,
    /// `MAX_WORKERS`.
    pub max_workers: u64,
}

impl Default for SwitchSizes {
    fn default() -> Self {
        SwitchSizes {
            aggregators: 65536,
            agg_table: 1 << 20,
            seen_cells: 1 << 18,
            max_workers: 256,
        }
    }
}

/// One table entry by name: exact-match fields and an action with parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Table name.
    pub table: &'static str,
    /// (match field, value), all exact.
    pub matches: Vec<(&'static str, u128)>,
    /// Action name.
    pub action: &'static str,
    /// (parameter, value).
    pub params: Vec<(&'static str, u128)>,
}

/// One register cell to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterWrite {
    /// Register name.
    pub register: &'static str,
    /// Cell.
    pub index: u64,
    /// Value.
    pub value: u128,
}

/// A multicast group: (replica id, egress port) pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MulticastGroup {
    /// Group id.
    pub id: u32,
    /// (rid, port).
    pub replicas: Vec<(u32, u32)>,
}

/// Where the workers and the recirculation port are, and the run-time settings.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// Switch port of worker `w`.
    pub worker_ports: Vec<u32>,
    /// Port of the recirculation clone session (any port bmv2 has; traffic never leaves there).
    pub recirculation_port: u32,
    /// Egress queue depth above which frames are ECN-marked (`u32::MAX`: never).
    pub ecn_threshold: u32,
    /// Drop simulator: every n-th SwitchGNN frame (0: off).
    pub drop_every: u32,
    /// Drop simulator: probability in 0..=1.
    pub drop_probability: f64,
    /// DSCP -> priority queue.
    pub dscp_priority: Vec<(u8, u8)>,
}

impl Deployment {
    /// Worker `w` on port `w`, recirculation on port `workers`, no ECN, no drops, and the
    /// DSCP classes of [`sgnn_wire::dscp`].
    pub fn standard(workers: u32) -> Deployment {
        Deployment {
            worker_ports: (0..workers).collect(),
            recirculation_port: workers,
            ecn_threshold: u32::MAX,
            drop_every: 0,
            drop_probability: 0.0,
            dscp_priority: dscp::CLASSES.iter().map(|&(_, d, q)| (d, q)).collect(),
        }
    }
}

/// The multicast group of block-advance.
pub const ADVANCE_GROUP: u32 = 1;
/// The recirculation clone session.
pub const RECIRCULATION_SESSION: u32 = 100;

/// Everything to install for a plan.
#[derive(Debug, Clone)]
pub struct SwitchProgram {
    /// The default action of the keyless `switch_config` table (the settings).
    pub config: Entry,
    /// Worker, forwarding, priority entries (installed first).
    pub base_entries: Vec<Entry>,
    /// `agg_table` entries, per block.
    pub block_entries: Vec<Vec<Entry>>,
    /// Register resets of the sync state (for targets that can write registers; a new
    /// pipeline config starts them at 0 anyway).
    pub registers: Vec<RegisterWrite>,
    /// Multicast groups.
    pub groups: Vec<MulticastGroup>,
    /// Clone sessions: (session, port).
    pub clone_sessions: Vec<(u32, u32)>,
}

impl SwitchProgram {
    /// All `agg_table` entries.
    pub fn agg_entries(&self) -> usize {
        self.block_entries.iter().map(|b| b.len()).sum()
    }
}

/// A plan that does not fit the switch or the deployment.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProgramError {
    /// Too many aggregators.
    #[error("the plan uses aggregators up to index {used} but the switch has {have} (AGGREGATORS in p4/v1model/config.p4); re-plan with --switch-mem {max_mem} or less")]
    Aggregators {
        /// Highest index used plus one.
        used: u64,
        /// Switch size.
        have: u64,
        /// Switch memory that fits, e.g. "8MB".
        max_mem: String,
    },
    /// A block's sources times segments overflow `src_seen`.
    #[error("block {block} has {cells} (source, segment) pairs but src_seen holds {have} (SEEN_CELLS); re-plan with less --switch-mem so blocks are smaller")]
    SeenCells {
        /// Block.
        block: usize,
        /// Cells needed.
        cells: u64,
        /// Switch size.
        have: u64,
    },
    /// Too many workers.
    #[error("the plan has {workers} workers but the switch supports {have} (MAX_WORKERS)")]
    Workers {
        /// Plan workers.
        workers: u64,
        /// Switch size.
        have: u64,
    },
    /// Ports do not match the plan.
    #[error("the plan has {workers} workers but {ports} worker ports were given")]
    Ports {
        /// Plan workers.
        workers: usize,
        /// Ports.
        ports: usize,
    },
}

fn ip_u128(ip: [u8; 4]) -> u128 {
    u32::from_be_bytes(ip) as u128
}

fn mac_u128(mac: [u8; 6]) -> u128 {
    mac.iter().fold(0u128, |a, &b| a << 8 | b as u128)
}

/// The `agg_table` entries of block `b` (`groups`: the plan's [`Plan::replica_groups`]). A
/// replicated source's pass 0 is `replicate(group)`; its aggregators follow from pass 1.
pub fn block_entries(plan: &Plan, b: usize, groups: &sgnn_plan::ReplicaGroups) -> Vec<Entry> {
    let block = &plan.blocks[b];
    let segments = plan.manifest.segments as u128;
    let mut out = Vec::with_capacity(block.fanout.len());
    for (i, &src) in block.sources.iter().enumerate() {
        let passes = block.passes(i);
        let first = match groups.of_vertex.get(&src) {
            Some(&group) => {
                out.push(Entry {
                    table: names::AGG_TABLE,
                    matches: vec![
                        ("block_id", b as u128),
                        ("src_id", src as u128),
                        ("pass", 0),
                    ],
                    action: names::REPLICATE,
                    params: vec![
                        ("group", group as u128),
                        ("more", !passes.is_empty() as u128),
                        ("seen_base", i as u128 * segments),
                    ],
                });
                1
            }
            None => 0,
        };
        for (p, &row) in passes.iter().enumerate() {
            let slot = block.aggregators[row as usize];
            out.push(Entry {
                table: names::AGG_TABLE,
                matches: vec![
                    ("block_id", b as u128),
                    ("src_id", src as u128),
                    ("pass", (first + p) as u128),
                ],
                action: names::AGGREGATE,
                params: vec![
                    ("agg_base", slot.base as u128),
                    ("dst_id", slot.dst as u128),
                    ("dst_worker", plan.partition[slot.dst as usize] as u128),
                    ("expected", slot.expected as u128),
                    ("more", (p + 1 < passes.len()) as u128),
                    ("seen_base", i as u128 * segments),
                    ("generation", slot.generation as u128),
                ],
            });
        }
    }
    out
}

/// Builds and checks everything a plan needs on a switch of `sizes`.
pub fn program_for(
    plan: &Plan,
    deployment: &Deployment,
    sizes: &SwitchSizes,
) -> Result<SwitchProgram, ProgramError> {
    let workers = plan.workers() as u64;
    if workers > sizes.max_workers {
        return Err(ProgramError::Workers {
            workers,
            have: sizes.max_workers,
        });
    }
    if deployment.worker_ports.len() as u64 != workers {
        return Err(ProgramError::Ports {
            workers: workers as usize,
            ports: deployment.worker_ports.len(),
        });
    }
    let segments = plan.manifest.segments as u64;
    let used = plan
        .blocks
        .iter()
        .flat_map(|b| b.aggregators.iter())
        .map(|a| a.base as u64 + segments)
        .max()
        .unwrap_or(0);
    if used > sizes.aggregators {
        return Err(ProgramError::Aggregators {
            used,
            have: sizes.aggregators,
            max_mem: format!(
                "{}KB",
                sizes.aggregators * plan.manifest.config.agg_bytes as u64 / 1024
            ),
        });
    }
    for (b, block) in plan.blocks.iter().enumerate() {
        let cells = block.sources.len() as u64 * segments;
        if cells > sizes.seen_cells {
            return Err(ProgramError::SeenCells {
                block: b,
                cells,
                have: sizes.seen_cells,
            });
        }
    }
    let mut prog = SwitchProgram {
        config: Entry {
            table: names::SWITCH_CONFIG,
            matches: Vec::new(),
            action: names::SET_CONFIG,
            params: Vec::new(),
        },
        base_entries: Vec::new(),
        block_entries: Vec::new(),
        registers: Vec::new(),
        groups: Vec::new(),
        clone_sessions: Vec::new(),
    };
    let mut replicas = Vec::new();
    for (w, &port) in deployment.worker_ports.iter().enumerate() {
        let w16 = w as u16;
        prog.base_entries.push(Entry {
            table: names::WORKER_TABLE,
            matches: vec![("worker_id", w as u128)],
            action: names::SET_WORKER,
            params: vec![("port", port as u128)],
        });
        prog.base_entries.push(Entry {
            table: names::PORT_WORKER,
            matches: vec![("port", port as u128)],
            action: names::SET_PORT_WORKER,
            params: vec![("worker_id", w as u128)],
        });
        prog.base_entries.push(Entry {
            table: names::WORKER_ADDR,
            matches: vec![("worker_id", w as u128)],
            action: names::SET_WORKER_ADDR,
            params: vec![
                ("mac", mac_u128(worker_mac(w16))),
                ("ip", ip_u128(worker_ip(w16))),
            ],
        });
        prog.base_entries.push(Entry {
            table: names::IPV4_FORWARD,
            matches: vec![("dst_addr", ip_u128(worker_ip(w16)))],
            action: names::FORWARD,
            params: vec![("port", port as u128)],
        });
        replicas.push((w as u32, port));
    }
    for &(dscp, queue) in &deployment.dscp_priority {
        prog.base_entries.push(Entry {
            table: names::DSCP_PRIORITY,
            matches: vec![("dscp", dscp as u128)],
            action: names::SET_PRIORITY,
            params: vec![("queue", queue as u128)],
        });
    }
    // Replication sets: worker w of a set is reached on its own port, replica id w.
    let groups = plan.replica_groups();
    for (i, set) in groups.sets.iter().enumerate() {
        prog.groups.push(MulticastGroup {
            id: sgnn_plan::FIRST_REPLICA_GROUP + i as u32,
            replicas: set.iter().map(|&w| replicas[w as usize]).collect(),
        });
    }
    prog.groups.insert(
        0,
        MulticastGroup {
            id: ADVANCE_GROUP,
            replicas,
        },
    );
    prog.clone_sessions
        .push((RECIRCULATION_SESSION, deployment.recirculation_port));
    let prob = (deployment.drop_probability.clamp(0.0, 1.0) * u32::MAX as f64) as u128;
    let reg = |register, value| RegisterWrite {
        register,
        index: 0,
        value,
    };
    prog.config = Entry {
        table: names::SWITCH_CONFIG,
        matches: Vec::new(),
        action: names::SET_CONFIG,
        params: vec![
            ("workers", workers as u128),
            ("blocks_per_round", plan.blocks.len() as u128),
            ("ecn_threshold", deployment.ecn_threshold as u128),
            ("drop_every", deployment.drop_every as u128),
            ("drop_prob", prob),
            ("switch_mac", mac_u128(SWITCH_MAC)),
            ("switch_ip", ip_u128(SWITCH_IP)),
            ("plan_tag", plan.tag() as u128),
        ],
    };
    prog.registers = vec![
        reg("sync_round", 0),
        reg("sync_block", 0),
        reg("sync_count", 0),
        reg("drop_seen", 0),
    ];
    for w in 0..workers {
        prog.registers.push(RegisterWrite {
            register: "sync_done",
            index: w,
            value: 0,
        });
    }
    prog.block_entries = (0..plan.blocks.len())
        .map(|b| block_entries(plan, b, &groups))
        .collect();
    Ok(prog)
}
