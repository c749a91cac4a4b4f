//! The control plane's settings of the switch (`p4/v1model/switch_config.p4`; contract:
//! `sgnn_switch::config`).

use super::config::SEEN_CELLS;

/// Sizes and settings the control plane sets (the P4 program's `config.p4` and registers).
#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// Aggregators (register array size).
    pub aggregators: u32,
    /// Workers taking part in block synchronisation.
    pub workers: u16,
    /// Blocks per round (after the last, the next round starts at block 0).
    pub blocks_per_round: u16,
    /// Egress queue depth (packets) above which packets are ECN-marked.
    pub ecn_threshold: u32,
    /// The switch's own MAC and IP (source of Result and BlockAdvance frames).
    pub mac: [u8; 6],
    /// The switch's IP.
    pub ip: [u8; 4],
    /// Drop simulator: drop each SwitchGNN packet with this probability.
    pub drop_probability: f64,
    /// Drop simulator: also drop every n-th SwitchGNN packet a host sends (0 = off).
    pub drop_every: u64,
    /// Seed of the drop simulator.
    pub drop_seed: u64,
    /// [`sgnn_plan::Plan::tag`] of the plan the tables hold (0: none), written into the
    /// answer to a daemon's start-up probe.
    pub plan_tag: u32,
    /// Cells of `src_seen`: the program's [`SEEN_CELLS`], or more for a switch with more
    /// aggregators than the program's build ([`sgnn_plan::profile::seen_cells_for`]).
    pub seen_cells: u32,
    /// Where the switch sits in a leaf-spine fabric (`sgnn_switch::fabric`); a star's switch
    /// by default.
    pub role: FabricRole,
    /// The job value every SwitchGNN frame must carry (`sgnn_switch::admission`): chosen at
    /// load, 0 until then and in the simulator.
    pub job: u16,
}

/// Where a switch sits in a leaf-spine fabric: the contract's [`sgnn_switch::config::Role`]
/// (`set_config`'s `role`, `sync_base`, `up_id`, `up_peer`).
pub use sgnn_switch::config::Role as FabricRole;

impl SwitchConfig {
    /// What `switch-ctl load` sets for `plan` (program.rs's `set_config`): the plan's
    /// aggregators, workers, blocks per round and tag; everything else the default. The one
    /// place the software switch, the simulator's tests, the fuzz target and the benchmarks
    /// derive a switch configuration from a plan.
    pub fn for_plan(plan: &sgnn_plan::Plan) -> SwitchConfig {
        SwitchConfig {
            aggregators: plan.manifest.aggregators.min(u32::MAX as u64) as u32,
            workers: plan.workers() as u16,
            blocks_per_round: plan.blocks.len() as u16,
            plan_tag: plan.tag(),
            seen_cells: sgnn_plan::profile::seen_cells_for(
                SEEN_CELLS as u64,
                plan.manifest.aggregators,
            )
            .min(u32::MAX as u64) as u32,
            ..SwitchConfig::default()
        }
    }
}

impl SwitchConfig {
    /// [`SwitchConfig::for_plan`] for `switch` of `fabric` (`sgnn_switch::fabric`): a leaf
    /// synchronises its workers and reports to the root spine, the root spine synchronises
    /// the leaves; each has its fabric address.
    pub fn for_fabric(
        plan: &sgnn_plan::Plan,
        fabric: &sgnn_switch::fabric::Fabric,
        switch: sgnn_switch::fabric::FabricSwitch,
    ) -> SwitchConfig {
        let s = sgnn_switch::fabric::settings(plan, fabric, switch);
        SwitchConfig {
            workers: s.workers,
            mac: s.switch_mac,
            ip: s.switch_ip,
            role: s.role,
            ..SwitchConfig::for_plan(plan)
        }
    }
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            aggregators: sgnn_switch::aggregation::AGGREGATORS,
            workers: 1,
            blocks_per_round: 1,
            ecn_threshold: u32::MAX,
            mac: sgnn_wire::addressing::SWITCH_MAC,
            ip: sgnn_wire::addressing::SWITCH_IP,
            drop_probability: 0.0,
            drop_every: 0,
            drop_seed: 1,
            plan_tag: 0,
            seen_cells: SEEN_CELLS as u32,
            role: FabricRole::Star,
            job: 0,
        }
    }
}
