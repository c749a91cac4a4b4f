//! What a plan asks of a switch: table entries, register settings, multicast groups and clone
//! sessions, by the names of `docs/switch-interface.md`, checked against the switch's sizes.
//!
//! This is target-neutral: `switch-ctl load` hands it to a P4Runtime target (bmv2, Tofino, or
//! the software switch serving P4Runtime), and tests compare it with what a switch holds.

use sgnn_plan::Plan;
use sgnn_switch::aggregation::{self, AggAction, AggKey};
use sgnn_switch::config::Settings;
use sgnn_switch::{block_sync, drop_simulator, TypedEntry};
use sgnn_wire::addressing::{worker_ip, worker_mac};
use sgnn_wire::dscp;

pub use sgnn_switch::Entry;

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
            aggregators: aggregation::AGGREGATORS as u64,
            agg_table: aggregation::AGG_TABLE_SIZE as u64,
            seen_cells: aggregation::SEEN_CELLS as u64,
            max_workers: sgnn_switch::config::MAX_WORKERS as u64,
        }
    }
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
    /// The job value (`set_config`'s `job`, `sgnn_switch::admission`).
    pub job: u16,
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
            job: 0,
        }
    }
}

/// The multicast group of block-advance.
pub const ADVANCE_GROUP: u32 = block_sync::ADVANCE_GROUP as u32;
/// The recirculation clone session.
pub const RECIRCULATION_SESSION: u32 = aggregation::RECIRCULATION_SESSION;

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
    /// A fabric whose workers are not the plan's.
    #[error("the fabric has {fabric} workers but the plan {workers}: plan for --workers {fabric} or give the fabric the plan's")]
    FabricWorkers {
        /// Plan workers.
        workers: u32,
        /// Fabric workers.
        fabric: u32,
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

/// The `agg_table` entries of block `b` (`groups`: the plan's [`Plan::replica_groups`]), as
/// the switch contract derives them ([`aggregation::block_entries`]).
pub fn block_entries(plan: &Plan, b: usize, groups: &sgnn_plan::ReplicaGroups) -> Vec<Entry> {
    aggregation::block_entries(plan, b, groups)
        .into_iter()
        .map(|(k, a): (AggKey, AggAction)| TypedEntry::Agg(k, a).to_entry())
        .collect()
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
    check_aggregators(plan, sizes)?;
    if let Some((block, cells)) = aggregation::block_over_seen_cells(plan, sizes.seen_cells) {
        return Err(ProgramError::SeenCells {
            block,
            cells,
            have: sizes.seen_cells,
        });
    }
    let settings = Settings {
        workers: workers as u16,
        blocks_per_round: plan.blocks.len() as u16,
        ecn_threshold: deployment.ecn_threshold,
        drop_every: deployment.drop_every,
        drop_prob: Settings::drop_prob_of(deployment.drop_probability),
        plan_tag: plan.tag(),
        job: deployment.job,
        ..Settings::default()
    };
    let mut prog = SwitchProgram {
        config: TypedEntry::Config(settings).to_entry(),
        base_entries: Vec::new(),
        block_entries: Vec::new(),
        registers: Vec::new(),
        groups: Vec::new(),
        clone_sessions: Vec::new(),
    };
    let mut replicas = Vec::new();
    for (w, &port) in deployment.worker_ports.iter().enumerate() {
        let worker_id = w as u16;
        let port16 = port as u16;
        for e in [
            TypedEntry::Worker {
                worker_id,
                port: port16,
            },
            TypedEntry::PortWorker {
                port: port16,
                worker_id,
            },
            TypedEntry::WorkerAddr {
                worker_id,
                mac: worker_mac(worker_id),
                ip: worker_ip(worker_id),
            },
            TypedEntry::Ipv4Forward {
                dst_addr: worker_ip(worker_id),
                port: port16,
            },
        ] {
            prog.base_entries.push(e.to_entry());
        }
        replicas.push((w as u32, port));
    }
    for &(dscp, queue) in &deployment.dscp_priority {
        prog.base_entries
            .push(TypedEntry::DscpPriority { dscp, queue }.to_entry());
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
    prog.registers = sync_resets(workers);
    prog.block_entries = (0..plan.blocks.len())
        .map(|b| block_entries(plan, b, &groups))
        .collect();
    Ok(prog)
}

/// Refuses a plan whose aggregators reach beyond the switch's.
fn check_aggregators(plan: &Plan, sizes: &SwitchSizes) -> Result<(), ProgramError> {
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
    Ok(())
}

/// The sync state's resets: round, block, count, the drop simulator's count and
/// `sync_done` of each of the `workers` the switch synchronises.
fn sync_resets(workers: u64) -> Vec<RegisterWrite> {
    let reg = |register, index| RegisterWrite {
        register,
        index,
        value: 0,
    };
    let mut r = vec![
        reg(block_sync::SYNC_ROUND.name, 0),
        reg(block_sync::SYNC_BLOCK.name, 0),
        reg(block_sync::SYNC_COUNT.name, 0),
        reg(drop_simulator::DROP_SEEN.name, 0),
    ];
    r.extend((0..workers).map(|w| reg(block_sync::SYNC_DONE.name, w)));
    r
}

/// Builds and checks everything `switch` of a leaf-spine `fabric` needs for `plan`
/// (`sgnn_switch::fabric`: its role and address in the settings, its ports, peers, routes
/// and groups, each block's rows as `lower_block` gives them to it). Of `deployment`, the
/// ECN threshold, the drop simulator, the DSCP classes and the recirculation port are used;
/// the ports are the fabric's (a leaf's workers first, then one uplink per spine; a spine's
/// port `l` to leaf `l`).
pub fn program_for_fabric(
    plan: &Plan,
    fabric: &sgnn_switch::fabric::Fabric,
    switch: sgnn_switch::fabric::FabricSwitch,
    deployment: &Deployment,
    sizes: &SwitchSizes,
) -> Result<SwitchProgram, ProgramError> {
    use sgnn_switch::fabric::{lower_block, settings, switch_tables};
    if fabric.workers != plan.workers() {
        return Err(ProgramError::FabricWorkers {
            workers: plan.workers(),
            fabric: fabric.workers,
        });
    }
    // Worker ids and peer ids share the worker tables.
    let ids = fabric.workers as u64 + fabric.leaves.max(fabric.spines) as u64;
    if ids > sizes.max_workers {
        return Err(ProgramError::Workers {
            workers: ids,
            have: sizes.max_workers,
        });
    }
    check_aggregators(plan, sizes)?;
    let segments = plan.manifest.segments as u64;
    let mut s = settings(plan, fabric, switch);
    s.ecn_threshold = deployment.ecn_threshold;
    s.drop_every = deployment.drop_every;
    s.drop_prob = Settings::drop_prob_of(deployment.drop_probability);
    s.job = deployment.job;
    let groups = plan.replica_groups();
    let st = switch_tables(fabric, switch, &groups);
    let mut prog = SwitchProgram {
        config: TypedEntry::Config(s).to_entry(),
        base_entries: st.entries.iter().map(TypedEntry::to_entry).collect(),
        block_entries: Vec::new(),
        registers: Vec::new(),
        groups: st
            .groups
            .iter()
            .map(|(id, r)| MulticastGroup {
                id: *id as u32,
                replicas: r
                    .iter()
                    .map(|&(rid, port)| (rid as u32, port as u32))
                    .collect(),
            })
            .collect(),
        clone_sessions: vec![(RECIRCULATION_SESSION, deployment.recirculation_port)],
    };
    for &(dscp, queue) in &deployment.dscp_priority {
        prog.base_entries
            .push(TypedEntry::DscpPriority { dscp, queue }.to_entry());
    }
    prog.registers = sync_resets(s.workers as u64);
    for b in 0..plan.blocks.len() {
        let rows = lower_block(plan, fabric, b, &groups);
        let rows = rows.of(switch);
        // src_seen: a leaf's cells are its block's sources', a spine's one per partial.
        let cells = match switch {
            sgnn_switch::fabric::FabricSwitch::Leaf(_) => {
                plan.blocks[b].sources.len() as u64 * segments
            }
            sgnn_switch::fabric::FabricSwitch::Spine(_) => rows.len() as u64 * segments,
        };
        if cells > sizes.seen_cells {
            return Err(ProgramError::SeenCells {
                block: b,
                cells,
                have: sizes.seen_cells,
            });
        }
        prog.block_entries.push(
            rows.iter()
                .map(|&(k, a)| TypedEntry::Agg(k, a).to_entry())
                .collect(),
        );
    }
    Ok(prog)
}
