//! `p4/v1model/switch_config.p4`: the switch's settings, the default action of the keyless
//! table `switch_config` (one MODIFY sets them all), and `MAX_WORKERS`.

use sgnn_wire::addressing::{SWITCH_IP, SWITCH_MAC};

use crate::{Action, Param, Table};

/// Workers a switch serves (`MAX_WORKERS`): size of `sync_done` and the worker tables.
pub const MAX_WORKERS: u32 = 256;

/// `set_config(workers, blocks_per_round, ecn_threshold, drop_every, drop_prob, switch_mac,
/// switch_ip, plan_tag)`.
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
    ],
};

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
        }
    }
}

impl Settings {
    /// `drop_prob` for a probability in 0..=1 (rounded down).
    pub fn drop_prob_of(p: f64) -> u32 {
        (p.clamp(0.0, 1.0) * u32::MAX as f64) as u32
    }

    /// The probability `drop_prob` stands for.
    pub fn drop_probability(&self) -> f64 {
        self.drop_prob as f64 / u32::MAX as f64
    }
}
