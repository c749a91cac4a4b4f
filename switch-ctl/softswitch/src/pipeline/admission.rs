//! Admission: which SwitchGNN frames the switch takes in at all, by port, address and job
//! (`p4/v1model/admission.p4`; contract: `sgnn_switch::admission`).

use sgnn_switch::admission::{admit, from_root, Port};
use sgnn_wire::frame::FrameRepr;

use crate::tables::{PortEnd, PortId};

use super::Pipeline;

impl Pipeline {
    /// Whose port, whose address, whose job: whether a SwitchGNN frame from outside is taken
    /// in at all (a refusal is counted under its reason).
    pub(super) fn admitted(&mut self, ingress: PortId, repr: &FrameRepr) -> bool {
        let port = Port::classify(self.tables.port_worker.get(&ingress).copied());
        match admit(port, self.config.job, repr.ip.src, &repr.sgnn) {
            Ok(()) => true,
            Err(r) => {
                self.counters.refused(r);
                false
            }
        }
    }

    /// On a leaf: whether a BlockAdvance on link `ingress` comes from the root spine (another
    /// spine's link is not the root's; refused and counted otherwise).
    pub(super) fn on_root_link(&mut self, ingress: PortId) -> bool {
        let entry = self.tables.port_worker.get(&ingress).copied();
        match from_root(self.config.role, entry) {
            Ok(()) => true,
            Err(r) => {
                self.counters.refused(r);
                false
            }
        }
    }

    /// Whether `port_worker` maps `ingress` to `worker`: the worker's own port.
    pub(super) fn on_its_port(&self, ingress: PortId, worker: u16) -> bool {
        self.tables.port_worker.get(&ingress) == Some(&PortEnd::Worker(worker))
    }

    /// Whether `port_worker` makes `ingress` a link cabled to another switch.
    pub(super) fn on_link(&self, ingress: PortId) -> bool {
        matches!(
            self.tables.port_worker.get(&ingress),
            Some(PortEnd::Link(_))
        )
    }
}
