//! `p4/v1model/forwarding.p4`: where workers are. `worker_table` (ingress: a worker's port),
//! `worker_addr` (egress: its addresses, for frames the switch makes), `port_worker` (ingress:
//! what is at the other end of a port: a worker, a cabled link to another switch, or, with
//! no entry, a stranger; [`crate::admission`]) and `ipv4_forward` (every frame the switch
//! only forwards: by destination address).

use crate::config::MAX_WORKERS;
use crate::{Action, Key, Param, Table};

/// Entries of `ipv4_forward` (`IPV4_FORWARD_SIZE`).
pub const IPV4_FORWARD_SIZE: u32 = 1024;
/// Ports: every 9-bit port number (`PORTS`; the size of the port counters).
pub const PORTS: u32 = 512;

/// `set_worker(port)`.
pub const SET_WORKER: Action = Action {
    name: "set_worker",
    id: 3,
    params: &[Param {
        name: "port",
        bits: 9,
    }],
};
/// `worker_table`: worker id -> its port.
pub const WORKER_TABLE: Table = Table {
    name: "worker_table",
    id: 2,
    keys: &[Key {
        name: "worker_id",
        bits: 16,
    }],
    actions: &[&SET_WORKER],
    size: MAX_WORKERS,
};

/// `forward(port)`.
pub const FORWARD: Action = Action {
    name: "forward",
    id: 4,
    params: &[Param {
        name: "port",
        bits: 9,
    }],
};
/// `ipv4_forward`: destination address -> port.
pub const IPV4_FORWARD: Table = Table {
    name: "ipv4_forward",
    id: 3,
    keys: &[Key {
        name: "dst_addr",
        bits: 32,
    }],
    actions: &[&FORWARD],
    size: IPV4_FORWARD_SIZE,
};

/// `set_worker_addr(mac, ip)`.
pub const SET_WORKER_ADDR: Action = Action {
    name: "set_worker_addr",
    id: 6,
    params: &[
        Param {
            name: "mac",
            bits: 48,
        },
        Param {
            name: "ip",
            bits: 32,
        },
    ],
};
/// `worker_addr` (egress): worker id -> its MAC and IPv4 address.
pub const WORKER_ADDR: Table = Table {
    name: "worker_addr",
    id: 5,
    keys: &[Key {
        name: "worker_id",
        bits: 16,
    }],
    actions: &[&SET_WORKER_ADDR],
    size: MAX_WORKERS,
};

/// `set_port_worker(worker_id)`.
pub const SET_PORT_WORKER: Action = Action {
    name: "set_port_worker",
    id: 9,
    params: &[Param {
        name: "worker_id",
        bits: 16,
    }],
};
/// `set_port_link(peer_id)`: the port is cabled to another switch of a leaf-spine fabric,
/// peer `peer_id` in this switch's tables ([`crate::fabric`]: a leaf's spine, a spine's leaf).
pub const SET_PORT_LINK: Action = Action {
    name: "set_port_link",
    id: 12,
    params: &[Param {
        name: "peer_id",
        bits: 16,
    }],
};
/// `port_worker`: ingress port -> what is at its other end: a worker (`set_port_worker`,
/// whose frames must name it) or a cabled link to another switch (`set_port_link`). A port
/// with no entry is a stranger's, on every role ([`crate::admission`]).
pub const PORT_WORKER: Table = Table {
    name: "port_worker",
    id: 7,
    keys: &[Key {
        name: "port",
        bits: 9,
    }],
    actions: &[&SET_PORT_WORKER, &SET_PORT_LINK],
    size: MAX_WORKERS,
};

/// What a `port_worker` entry says is at the other end of its port (its action).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortEnd {
    /// `set_port_worker(worker_id)`: worker `.0`'s own port.
    Worker(u16),
    /// `set_port_link(peer_id)`: a cabled link to the switch that is peer `.0` here.
    Link(u16),
}

impl PortEnd {
    /// Who sends on the port: the worker, or the peer switch at the link's other end (the
    /// only sender whose BlockDone the port carries).
    pub fn sender(self) -> u16 {
        match self {
            PortEnd::Worker(w) | PortEnd::Link(w) => w,
        }
    }
}
