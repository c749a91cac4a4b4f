//! Installing a plan's [`SwitchProgram`] into a running switch through a [`Target`], reading
//! its state back (`switch-ctl dump`) and clearing it (`switch-ctl clear`).
//!
//! One code path for every target: bmv2 and Tofino over P4Runtime, the software switch (which
//! serves P4Runtime too), and the in-memory and fault-injecting targets of the tests.

use std::time::Instant;

use sgnn_switch::aggregation::{AGG_COUNT, AGG_TABLE, SRC_SEEN};
use sgnn_switch::block_sync::{SYNC_BLOCK, SYNC_COUNT, SYNC_DONE, SYNC_ROUND};
use sgnn_switch::config::Settings;
use sgnn_switch::drop_simulator::DROP_SEEN;
use sgnn_switch::forwarding::{IPV4_FORWARD, PORT_WORKER, WORKER_ADDR, WORKER_TABLE};
use sgnn_switch::priority::DSCP_PRIORITY;
use sgnn_switch::TypedEntry;

use crate::backend::{Op, Replica, TableEntry};
use crate::backend::{Target, TargetError};

use crate::program::{Entry, SwitchProgram, SwitchSizes};

/// Tables `load` fills and `clear` empties (all but the keyless `switch_config`).
pub const TABLES: [&str; 6] = [
    AGG_TABLE.name,
    WORKER_TABLE.name,
    PORT_WORKER.name,
    WORKER_ADDR.name,
    IPV4_FORWARD.name,
    DSCP_PRIORITY.name,
];

/// Registers holding the block-synchronisation state, reset by `load` and `clear`.
const SYNC_REGISTERS: [&str; 4] = [
    SYNC_ROUND.name,
    SYNC_BLOCK.name,
    SYNC_COUNT.name,
    DROP_SEEN.name,
];

/// The settings `clear` restores (the P4 program's initial `set_config`).
pub fn initial_config() -> Entry {
    TypedEntry::Config(Settings::default()).to_entry()
}

/// The switch's sizes, read from the P4Info it runs.
pub fn sizes_of(target: &dyn Target) -> Result<SwitchSizes, TargetError> {
    let ix = target.index();
    Ok(SwitchSizes {
        aggregators: ix.register(AGG_COUNT.name)?.size,
        agg_table: ix.table(AGG_TABLE.name)?.size,
        seen_cells: ix.register(SRC_SEEN.name)?.size,
        max_workers: ix.register(SYNC_DONE.name)?.size,
    })
}

/// A neutral entry of the plan as the target's entry type.
pub fn to_target(e: &Entry) -> TableEntry {
    let mut t = TableEntry::new(e.table, e.action);
    for &(f, v) in &e.matches {
        t = t.exact(f, v);
    }
    for &(p, v) in &e.params {
        t = t.param(p, v);
    }
    t
}

/// What `load` did.
#[derive(Debug, Clone, Default)]
pub struct InstallReport {
    /// Table entries written (settings included).
    pub entries: usize,
    /// Entries removed first because the switch still held an earlier plan's.
    pub cleared: usize,
    /// Seconds spent writing entries.
    pub seconds: f64,
    /// Register writes the target does not support (bmv2's PI), skipped.
    pub registers_skipped: bool,
}

impl InstallReport {
    /// Entries per second.
    pub fn rate(&self) -> f64 {
        self.entries as f64 / self.seconds.max(1e-9)
    }
}

fn unsupported(e: &TargetError) -> bool {
    let s = e.to_string().to_lowercase();
    s.contains("unimplemented") || s.contains("not supported")
}

/// Resets the block-synchronisation registers; returns false when the target cannot write
/// registers (then a fresh pipeline has them at 0).
fn reset_sync(target: &mut dyn Target, workers: u64) -> Result<bool, TargetError> {
    let mut ops: Vec<Op> = SYNC_REGISTERS
        .iter()
        .map(|r| Op::WriteRegister {
            register: r.to_string(),
            index: 0,
            value: 0,
        })
        .collect();
    for w in 0..workers {
        ops.push(Op::WriteRegister {
            register: SYNC_DONE.name.into(),
            index: w,
            value: 0,
        });
    }
    match target.apply(&ops) {
        Ok(()) => Ok(true),
        Err(e) if unsupported(&e) => Ok(false),
        Err(TargetError::Partial { source, .. }) if unsupported(&source) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Installs `prog`: clears entries of an earlier plan, then settings, workers, forwarding,
/// priorities, the block-advance multicast group, the recirculation clone session and every
/// block's `agg_table` entries, in batches of `batch`; `progress(done, total)` is called after
/// each batch. Refuses a program that does not fit the switch's sizes before writing anything;
/// when the switch refuses an operation (a port it does not have, ...), removes what was
/// written (as `clear` does) before returning the error.
pub fn install(
    target: &mut dyn Target,
    prog: &SwitchProgram,
    batch: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<InstallReport, InstallError> {
    let sizes = sizes_of(target)?;
    let agg = prog.agg_entries() as u64;
    if agg > sizes.agg_table {
        return Err(InstallError::TooBig(format!(
            "the plan has {agg} agg_table entries (one per cross-partition contribution and pass) but the switch's agg_table holds {}; use a switch compiled with a larger AGG_TABLE_SIZE (p4/v1model/config.p4) or a partition with fewer cross edges",
            sizes.agg_table
        )));
    }
    let mut report = InstallReport::default();
    for t in TABLES {
        report.cleared += target.clear_table(t)?;
    }
    let workers = prog.groups.first().map_or(0, |g| g.replicas.len() as u64);
    report.registers_skipped = !reset_sync(target, workers)?;
    let mut ops: Vec<Op> = vec![Op::SetDefault(to_target(&prog.config))];
    ops.extend(prog.base_entries.iter().map(|e| Op::Insert(to_target(e))));
    for g in &prog.groups {
        ops.push(Op::SetMulticastGroup {
            group: g.id,
            replicas: g
                .replicas
                .iter()
                .map(|&(rid, port)| Replica {
                    port,
                    instance: rid,
                })
                .collect(),
        });
    }
    for &(session, port) in &prog.clone_sessions {
        ops.push(Op::SetCloneSession {
            session,
            replicas: vec![Replica { port, instance: 0 }],
        });
    }
    ops.extend(
        prog.block_entries
            .iter()
            .flatten()
            .map(|e| Op::Insert(to_target(e))),
    );
    let total = ops.len();
    let start = Instant::now();
    let mut done = 0;
    for chunk in ops.chunks(batch.max(1)) {
        if let Err(e) = target.apply(chunk) {
            // Nothing of this plan reached the switch (its earlier entries were cleared).
            if done == 0 && matches!(e, TargetError::InvalidArgument(_)) {
                return Err(InstallError::Target(e));
            }
            let applied = done
                + match &e {
                    TargetError::Partial { applied, .. } => *applied,
                    _ => 0,
                };
            let cause = e.root().to_string();
            // A switch that refuses part of a plan (a worker port it does not have, a full
            // table) must not be left holding the rest: take back what was written.
            return Err(match clear(target) {
                Ok(_) => InstallError::Refused { applied, cause },
                Err(undo) => InstallError::Partial {
                    done: applied,
                    total,
                    cause,
                    undo: undo.to_string(),
                },
            });
        }
        done += chunk.len();
        progress(done, total);
    }
    report.seconds = start.elapsed().as_secs_f64();
    report.entries = total;
    Ok(report)
}

/// Empties every table, restores the initial settings, removes the multicast group's members
/// and resets the sync registers (where the target can write registers).
pub fn clear(target: &mut dyn Target) -> Result<usize, InstallError> {
    let mut n = 0;
    for t in TABLES {
        n += target.clear_table(t)?;
    }
    target.apply(&[Op::SetDefault(to_target(&initial_config()))])?;
    if target
        .read_multicast_group(crate::program::ADVANCE_GROUP)?
        .is_some()
    {
        target.set_multicast_group(crate::program::ADVANCE_GROUP, &[])?;
    }
    let workers = sizes_of(target)?.max_workers;
    reset_sync(target, workers)?;
    Ok(n)
}

/// Why `load` or `clear` failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The switch refused or could not be reached.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The plan does not fit the switch; nothing was written.
    #[error("{0}")]
    TooBig(String),
    /// The switch refused an operation; the ones applied before it were removed again, so the
    /// switch holds no plan.
    #[error("the plan was not loaded, because {cause}; the {applied} operations written before the refusal were removed again, so the switch holds no plan")]
    Refused {
        /// Operations applied before the refusal (and then removed).
        applied: usize,
        /// What the switch refused, and why.
        cause: String,
    },
    /// The switch refused an operation, and removing the ones applied before it failed too.
    #[error("the plan was not loaded, because {cause}; {done} of its {total} operations had been written and removing them failed ({undo}): the switch holds a partial plan, run `switch-ctl clear`")]
    Partial {
        /// Operations applied.
        done: usize,
        /// Operations in all.
        total: usize,
        /// What the switch refused, and why.
        cause: String,
        /// Why removing the applied operations failed.
        undo: String,
    },
}
