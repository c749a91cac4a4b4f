//! The drop simulator: loss on purpose, every n-th frame or at random
//! (`p4/v1model/drop_simulator.p4`; contract: `sgnn_switch::drop_simulator`).

use rand::Rng;

use super::Pipeline;
use crate::tables::PortId;

impl Pipeline {
    /// A frame received on `ingress` that a drop simulator outside the pipeline dropped (the
    /// packet simulator's, on a fabric: it drops per link, which the pipeline's own drop
    /// simulator, blind to ports, cannot): counted as received and `drop_simulated`.
    pub fn dropped_at_ingress(&mut self, ingress: PortId, bytes: usize) {
        self.counters.rx += 1;
        if let Some(c) = self.port_rx.get_mut(ingress as usize) {
            c.packets += 1;
            c.bytes += bytes as u64;
        }
        self.counters.drop_simulated += 1;
    }

    pub(super) fn drop_simulated(&mut self) -> bool {
        self.regs.drop_seen = self.regs.drop_seen.wrapping_add(1);
        if self.config.drop_every > 0 && self.regs.drop_seen as u64 >= self.config.drop_every {
            self.regs.drop_seen = 0;
            return true;
        }
        self.config.drop_probability > 0.0 && self.rng.gen::<f64>() < self.config.drop_probability
    }
}
