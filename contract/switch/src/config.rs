//! `p4/v1model/switch_config.p4`: the switch's settings, the default action of the keyless
//! table `switch_config` (one MODIFY sets them all), and `MAX_WORKERS`.

use sgnn_wire::addressing::{SWITCH_IP, SWITCH_MAC};

use crate::{Action, Param, Table};

/// Workers a switch serves (`MAX_WORKERS`): size of `sync_done` and the worker tables.
pub const MAX_WORKERS: u32 = 256;

/// `set_config(workers, blocks_per_round, ecn_threshold, drop_every, drop_prob, switch_mac,
/// switch_ip, plan_tag, role, sync_base, up_id, up_peer, job)`.
pub const SET_CONFIG: Action = Action {
    name: "set_config",
    id: 7,
    params: &[
        Param {
            name: "workers",
            bits: 16,
        },
        Param {
            name: "blocks_per_round",
            bits: 16,
        },
        Param {
            name: "ecn_threshold",
            bits: 32,
        },
        Param {
            name: "drop_every",
            bits: 32,
        },
        Param {
            name: "drop_prob",
            bits: 32,
        },
        Param {
            name: "switch_mac",
            bits: 48,
        },
        Param {
            name: "switch_ip",
            bits: 32,
        },
        Param {
            name: "plan_tag",
            bits: 32,
        },
        Param {
            name: "role",
            bits: 8,
        },
        Param {
            name: "sync_base",
            bits: 16,
        },
        Param {
            name: "up_id",
            bits: 16,
        },
        Param {
            name: "up_peer",
            bits: 16,
        },
        Param {
            name: "job",
            bits: 16,
        },
    ],
};

/// `set_config`'s `role` values (`ROLE_*` in `p4/common/protocol.p4`).
pub mod role {
    /// Every worker on this switch.
    pub const STAR: u8 = 0;
    /// A leaf of a leaf-spine fabric.
    pub const LEAF: u8 = 1;
    /// A spine of a leaf-spine fabric.
    pub const SPINE: u8 = 2;
}

/// Where a switch sits in a leaf-spine fabric ([`crate::fabric`]): `set_config`'s `role`,
/// `sync_base`, `up_id` and `up_peer`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Role {
    /// Every worker on this switch: it synchronises blocks itself (`role` 0, the rest 0).
    #[default]
    Star,
    /// A leaf (`role` 1): its block synchronisation counts its `workers` workers from
    /// `first_worker` (`sync_base`); when all are in, it reports up as worker `id` (`up_id`)
    /// to the root spine (peer `root` of its `worker_table`, `up_peer`), and advances when
    /// the root's BlockAdvance comes back.
    Leaf {
        /// Its first worker's id.
        first_worker: u16,
        /// Its worker id at the root spine.
        id: u16,
        /// The root spine's peer id here.
        root: u16,
    },
    /// A spine (`role` 2): adds leaves' partials whatever block it is at; the root spine's
    /// block synchronisation counts the leaves, worker ids from `first_peer` (`sync_base`).
    Spine {
        /// The first leaf's peer id.
        first_peer: u16,
    },
}

impl Role {
    /// The worker id of `sync_done[0]`.
    pub fn sync_base(self) -> u16 {
        match self {
            Role::Star => 0,
            Role::Leaf { first_worker, .. } => first_worker,
            Role::Spine { first_peer } => first_peer,
        }
    }

    /// `(role, sync_base, up_id, up_peer)`.
    pub fn params(self) -> (u8, u16, u16, u16) {
        match self {
            Role::Star => (role::STAR, 0, 0, 0),
            Role::Leaf {
                first_worker,
                id,
                root,
            } => (role::LEAF, first_worker, id, root),
            Role::Spine { first_peer } => (role::SPINE, first_peer, 0, 0),
        }
    }

    /// The role `params` stand for; `None` for an unknown `role`.
    pub fn from_params(role: u8, sync_base: u16, up_id: u16, up_peer: u16) -> Option<Role> {
        match role {
            role::STAR => Some(Role::Star),
            role::LEAF => Some(Role::Leaf {
                first_worker: sync_base,
                id: up_id,
                root: up_peer,
            }),
            role::SPINE => Some(Role::Spine {
                first_peer: sync_base,
            }),
            _ => None,
        }
    }
}

/// `switch_config`: keyless; its default action holds the settings.
pub const SWITCH_CONFIG: Table = Table {
    name: "switch_config",
    id: 6,
    keys: &[],
    actions: &[&SET_CONFIG],
    size: 1,
};

/// The settings, typed. [`Settings::default`] is what the program starts with (`INIT_*` in
/// `common/protocol.p4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Workers taking part in block synchronisation.
    pub workers: u16,
    /// Blocks per round (after the last, the next round starts at block 0).
    pub blocks_per_round: u16,
    /// Egress queue depth (packets) above which frames are ECN-marked (`u32::MAX`: never).
    pub ecn_threshold: u32,
    /// Drop simulator: every n-th SwitchGNN frame from a host (0: off).
    pub drop_every: u32,
    /// Drop simulator: probability as a fraction of `2^32 - 1` (0: off).
    pub drop_prob: u32,
    /// The switch's MAC (source of the frames it makes).
    pub switch_mac: [u8; 6],
    /// The switch's IPv4 address.
    pub switch_ip: [u8; 4],
    /// [`sgnn_plan::Plan::tag`] of the plan loaded (0: none), the answer to a probe.
    pub plan_tag: u32,
    /// Its place in a leaf-spine fabric (`role`, `sync_base`, `up_id`, `up_peer`).
    pub role: Role,
    /// The job value every SwitchGNN frame must carry ([`crate::admission`]), chosen at load
    /// (`switch-ctl load --job`, random by default; 0 before any load), told to a daemon in
    /// the answer to its start-up probe.
    pub job: u16,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            workers: 0,
            blocks_per_round: 1,
            ecn_threshold: u32::MAX,
            drop_every: 0,
            drop_prob: 0,
            switch_mac: SWITCH_MAC,
            switch_ip: SWITCH_IP,
            plan_tag: 0,
            role: Role::Star,
            job: 0,
        }
    }
}

impl Settings {
    /// A job value for a new load when the operator names none: nonzero, different from one
    /// load to the next (the clock's nanoseconds and the process id, mixed). Not a secret:
    /// every frame carries it (`crate::admission`); it keeps jobs apart, it does not
    /// authenticate them.
    pub fn fresh_job() -> u16 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut x = nanos ^ ((std::process::id() as u64) << 32);
        // splitmix64's finaliser: every input bit moves every output bit.
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        match (x as u16) ^ ((x >> 16) as u16) {
            0 => 1,
            j => j,
        }
    }

    /// `drop_prob` for a probability in 0..=1 (rounded down).
    pub fn drop_prob_of(p: f64) -> u32 {
        (p.clamp(0.0, 1.0) * u32::MAX as f64) as u32
    }

    /// The probability `drop_prob` stands for.
    pub fn drop_probability(&self) -> f64 {
        self.drop_prob as f64 / u32::MAX as f64
    }
}
