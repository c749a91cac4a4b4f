//! ECN: congestion marking of the frames the switch makes (`p4/v1model/ecn.p4`; contract:
//! `sgnn_switch::ecn`).

use sgnn_wire::ipv4::ECN_CE;
use sgnn_wire::sgnn::Repr;

use crate::tables::PortId;

use super::Pipeline;

impl Pipeline {
    /// Egress marking of a frame the switch makes, leaving through `port`: over the threshold
    /// it carries the SwitchGNN `ecn` flag and IPv4 ECN CE; every frame leaving with the flag
    /// (set here, or already from `agg_ecn` or a bypassed Data packet) counts `ecn_marked`.
    /// Returns the IPv4 ECN field.
    pub(super) fn ecn_mark(&mut self, port: PortId, sgnn: &mut Repr) -> u8 {
        let mut ecn = 0;
        if self.congested(port) {
            sgnn.flags.ecn = true;
            ecn = ECN_CE;
        }
        if sgnn.flags.ecn {
            self.counters.ecn_marked += 1;
        }
        ecn
    }

    /// Whether egress `port`'s queue is over the ECN threshold.
    fn congested(&self, port: PortId) -> bool {
        self.queue_depth
            .get(port as usize)
            .is_some_and(|&d| d > self.config.ecn_threshold)
    }
}
