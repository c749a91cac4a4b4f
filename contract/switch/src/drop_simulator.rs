//! `p4/v1model/drop_simulator.p4`: loss on purpose, for tests and the testbed's `--loss`. A
//! SwitchGNN frame from a host is dropped (`drop_simulated`) when it is the `drop_every`-th
//! since the last such drop, or with probability `drop_prob / 2^32` (settings of
//! [`crate::config`]; 0 turns each off).

use crate::Register;

/// `drop_seen`: SwitchGNN frames from hosts since the last `drop_every` drop.
pub const DROP_SEEN: Register = Register {
    name: "drop_seen",
    id: 48,
    bits: 32,
    size: 1,
};
