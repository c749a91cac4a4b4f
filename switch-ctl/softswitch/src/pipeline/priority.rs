//! Priority: DSCP to egress priority queue, `dscp_priority` (`p4/v1model/priority.p4`;
//! contract: `sgnn_switch::priority`).

use super::Pipeline;

impl Pipeline {
    /// The egress queue of a frame with `dscp` (queue 0 without an entry).
    pub(super) fn priority(&self, dscp: u8) -> u8 {
        self.tables.dscp_priority.get(&dscp).copied().unwrap_or(0)
    }
}
