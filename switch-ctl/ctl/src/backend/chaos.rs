//! [`ChaosTarget`]: wraps a target and injects faults, so tests can check what the control plane
//! does when a switch rejects the n-th write, fails at random, is slow, or goes away.
//!
//! Faults hit individual operations of a batch: the operations before the faulty one are applied
//! to the inner target (as one batch), and the batch fails with [`TargetError::Partial`] saying
//! how many were applied, exactly as a real switch that rejected one update would.

use std::ops::Range;
use std::time::Duration;

use super::{Code, CounterValue, Op, Replica, TableEntry, Target, TargetError};
use sgnn_p4rt::p4info::P4InfoIndex;

/// Which faults to inject. The default injects none.
#[derive(Debug, Clone, Default)]
pub struct ChaosConfig {
    /// Reject the n-th write operation (1-based, counting every operation of every batch).
    pub fail_nth_write: Option<u64>,
    /// Reject each write operation with this probability (0.0 to 1.0).
    pub fail_probability: f64,
    /// Seed of the random faults, so a failing test can be replayed.
    pub seed: u64,
    /// Sleep this long before every call (reads and writes).
    pub delay: Duration,
    /// Drop the connection when this many write operations have been applied: the operation
    /// after them fails, and so does every later call, with [`TargetError::Unreachable`].
    pub drop_after_writes: Option<u64>,
}

/// SplitMix64: a small, seedable generator, enough to decide faults reproducibly.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A target that injects the faults of a [`ChaosConfig`] in front of an inner target.
#[derive(Debug)]
pub struct ChaosTarget<T: Target> {
    inner: T,
    config: ChaosConfig,
    rng: SplitMix64,
    writes: u64,
    injected: u64,
    dropped: bool,
}

const NAME: &str = "chaos";

impl<T: Target> ChaosTarget<T> {
    /// Wraps `inner`.
    pub fn new(inner: T, config: ChaosConfig) -> Self {
        let rng = SplitMix64(config.seed);
        ChaosTarget {
            inner,
            config,
            rng,
            writes: 0,
            injected: 0,
            dropped: false,
        }
    }

    /// The inner target.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The inner target, mutably (to inspect or repair it without faults).
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The inner target.
    pub fn into_inner(self) -> T {
        self.inner
    }

    /// Drops the connection now: every later call fails with [`TargetError::Unreachable`].
    pub fn drop_connection(&mut self) {
        self.dropped = true;
    }

    /// Restores a dropped connection.
    pub fn reconnect(&mut self) {
        self.dropped = false;
    }

    /// Write operations seen so far (applied or not).
    pub fn writes_seen(&self) -> u64 {
        self.writes
    }

    /// Faults injected so far.
    pub fn faults_injected(&self) -> u64 {
        self.injected
    }

    fn unreachable() -> TargetError {
        TargetError::Unreachable {
            addr: NAME.to_string(),
            reason: "connection dropped by fault injection".to_string(),
        }
    }

    fn before_call(&self) -> Result<(), TargetError> {
        if !self.config.delay.is_zero() {
            std::thread::sleep(self.config.delay);
        }
        if self.dropped {
            return Err(Self::unreachable());
        }
        Ok(())
    }

    /// Counts one write operation and decides whether it fails, and how.
    fn fault(&mut self, op: &Op) -> Option<TargetError> {
        self.writes += 1;
        let n = self.writes;
        if self.config.drop_after_writes.is_some_and(|d| n > d) {
            self.dropped = true;
            return Some(Self::unreachable());
        }
        // Draw for every operation, so the sequence of faults depends only on the seed and the
        // number of operations, not on which other faults are configured.
        let draw = self.rng.next_f64();
        if self.config.fail_nth_write == Some(n) || draw < self.config.fail_probability {
            return Some(TargetError::Rejected {
                target: NAME.to_string(),
                op: op.to_string(),
                code: Code::Unavailable,
                message: format!("injected fault on write operation #{n}"),
            });
        }
        None
    }
}

impl<T: Target> Target for ChaosTarget<T> {
    fn index(&self) -> &P4InfoIndex {
        self.inner.index()
    }

    fn apply(&mut self, ops: &[Op]) -> Result<(), TargetError> {
        self.before_call()?;
        // Invalid arguments fail the whole batch before anything is applied, as in every backend.
        for op in ops {
            super::convert::op_to_update(self.inner.index(), op, false)?;
        }
        let fault = ops
            .iter()
            .enumerate()
            .find_map(|(i, op)| self.fault(op).map(|e| (i, e)));
        let (k, err) = match fault {
            None => return self.inner.apply(ops),
            Some(f) => f,
        };
        self.injected += 1;
        if k > 0 {
            // Apply what came before the fault; if the inner target itself fails there, report
            // that, against the whole batch.
            if let Err(e) = self.inner.apply(&ops[..k]) {
                return Err(match e {
                    TargetError::Partial {
                        applied, source, ..
                    } => TargetError::Partial {
                        applied,
                        total: ops.len(),
                        source,
                    },
                    e => TargetError::Partial {
                        applied: 0,
                        total: ops.len(),
                        source: Box::new(e),
                    },
                });
            }
        }
        Err(if ops.len() > 1 {
            TargetError::Partial {
                applied: k,
                total: ops.len(),
                source: Box::new(err),
            }
        } else {
            err
        })
    }

    fn read_table(&mut self, table: &str) -> Result<Vec<TableEntry>, TargetError> {
        self.before_call()?;
        self.inner.read_table(table)
    }

    fn read_default(&mut self, table: &str) -> Result<Option<TableEntry>, TargetError> {
        self.before_call()?;
        self.inner.read_default(table)
    }

    fn read_register_range(
        &mut self,
        register: &str,
        range: Range<u64>,
    ) -> Result<Vec<u128>, TargetError> {
        self.before_call()?;
        self.inner.read_register_range(register, range)
    }

    fn read_counter_range(
        &mut self,
        counter: &str,
        range: Range<u64>,
    ) -> Result<Vec<CounterValue>, TargetError> {
        self.before_call()?;
        self.inner.read_counter_range(counter, range)
    }

    fn read_multicast_group(&mut self, group: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        self.before_call()?;
        self.inner.read_multicast_group(group)
    }

    fn read_clone_session(&mut self, session: u32) -> Result<Option<Vec<Replica>>, TargetError> {
        self.before_call()?;
        self.inner.read_clone_session(session)
    }
}
