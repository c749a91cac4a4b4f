//! The sizes of the SwitchGNN P4 program (`sgnn_switch`, the contract) that the software
//! switch holds itself to, so that what it accepts a hardware switch running the program would
//! accept too: at most `MAX_WORKERS` host ports (the worker tables and `sync_done` have that
//! many cells) and at most `AGG_TABLE_SIZE` aggregation entries.

use sgnn_switch::aggregation::AGG_TABLE_SIZE;
use sgnn_switch::config::MAX_WORKERS;

/// A port count or plan the P4 program cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// More host ports (one per worker) than the program's worker tables hold.
    #[error("{ports} worker ports, but the SwitchGNN program serves at most {MAX_WORKERS} workers (MAX_WORKERS, contract/switch); run at most {MAX_WORKERS} workers per switch, or a leaf-spine fabric")]
    TooManyWorkers {
        /// Ports asked for.
        ports: usize,
    },
    /// More aggregation entries than the program's `agg_table` holds.
    #[error("the plan has {entries} agg_table entries, but the SwitchGNN program's agg_table holds {AGG_TABLE_SIZE} (AGG_TABLE_SIZE, contract/switch); plan with fewer cross-partition edges per switch")]
    AggTableFull {
        /// Entries the plan needs.
        entries: u64,
    },
}

/// Refuses `ports` host ports, or a plan with `plan_workers` workers and `agg_entries`
/// aggregation entries, that the P4 program cannot hold.
pub fn check(ports: usize, plan_workers: Option<u32>, agg_entries: u64) -> Result<(), SizeError> {
    let workers = ports.max(plan_workers.unwrap_or(0) as usize);
    if workers > MAX_WORKERS as usize {
        return Err(SizeError::TooManyWorkers { ports: workers });
    }
    if agg_entries > u64::from(AGG_TABLE_SIZE) {
        return Err(SizeError::AggTableFull {
            entries: agg_entries,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_sizes_are_the_limits() {
        assert_eq!(check(256, Some(256), u64::from(AGG_TABLE_SIZE)), Ok(()));
        assert_eq!(
            check(257, None, 0),
            Err(SizeError::TooManyWorkers { ports: 257 })
        );
        assert_eq!(
            check(4, Some(300), 0),
            Err(SizeError::TooManyWorkers { ports: 300 })
        );
        assert!(matches!(
            check(4, Some(4), u64::from(AGG_TABLE_SIZE) + 1),
            Err(SizeError::AggTableFull { .. })
        ));
    }
}
