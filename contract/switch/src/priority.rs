//! `p4/v1model/priority.p4`: DSCP to egress priority queue (`dscp_priority`). The classes and
//! their queues are `sgnn_wire::dscp::CLASSES`; a DSCP without an entry uses queue 0.

use crate::{Action, Key, Param, Table};

/// Entries of `dscp_priority` (`DSCP_PRIORITY_SIZE`): every 6-bit DSCP.
pub const DSCP_PRIORITY_SIZE: u32 = 64;
/// Priority queues per port (bmv2's `--priority-queues 8`; queue 7 is served first).
pub const QUEUES: u8 = 8;

/// `set_priority(queue)`.
pub const SET_PRIORITY: Action = Action {
    name: "set_priority",
    id: 5,
    params: &[Param {
        name: "queue",
        bits: 3,
    }],
};
/// `dscp_priority`: DSCP -> egress queue.
pub const DSCP_PRIORITY: Table = Table {
    name: "dscp_priority",
    id: 4,
    keys: &[Key {
        name: "dscp",
        bits: 6,
    }],
    actions: &[&SET_PRIORITY],
    size: DSCP_PRIORITY_SIZE,
};
