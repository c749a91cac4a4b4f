//! Forwarding: `ipv4_forward`, `worker_table` and the egress rewrite of every frame the switch
//! makes (`worker_addr`) (`p4/v1model/forwarding.p4`; contract: `sgnn_switch::forwarding`).

use sgnn_wire::frame::FrameRepr;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, LANES};

use super::{Emitted, Pipeline};
use crate::tables::PortId;

impl Pipeline {
    pub(super) fn forward(
        &mut self,
        dst: [u8; 4],
        dscp: u8,
        frame: Vec<u8>,
        out: &mut Vec<Emitted>,
    ) {
        match self.tables.ipv4_forward.get(&dst) {
            Some(&port) => {
                self.counters.forwarded += 1;
                self.emit(port, dscp, frame, out);
            }
            None => self.counters.drop_no_route += 1,
        }
    }

    fn emit(&mut self, port: PortId, dscp: u8, frame: Vec<u8>, out: &mut Vec<Emitted>) {
        let queue = self.priority(dscp);
        self.counters.tx += 1;
        if let Some(c) = self.port_tx.get_mut(port as usize) {
            c.packets += 1;
            c.bytes += frame.len() as u64;
        }
        out.push(Emitted { port, queue, frame });
    }

    /// The datapath could not send a frame of `bytes` bytes the pipeline emitted to `port`:
    /// it moves from `port_tx` to `port_tx_failed`.
    pub fn transmit_failed(&mut self, port: PortId, bytes: usize) {
        if let Some(c) = self.port_tx.get_mut(port as usize) {
            c.packets = c.packets.saturating_sub(1);
            c.bytes = c.bytes.saturating_sub(bytes as u64);
        }
        if let Some(c) = self.port_tx_failed.get_mut(port as usize) {
            c.packets += 1;
            c.bytes += bytes as u64;
        }
    }

    /// Ingress `worker_table`: the port of `worker`, then egress for a switch-originated frame.
    pub(super) fn send_to_worker(
        &mut self,
        worker: u16,
        sgnn: Repr,
        lanes: Option<&[i32; LANES]>,
        dscp: u8,
        out: &mut Vec<Emitted>,
    ) {
        let Some(&port) = self.tables.worker_table.get(&worker) else {
            self.counters.drop_unknown_worker += 1;
            return;
        };
        self.egress_to_worker(port, worker, sgnn, lanes, dscp, out);
    }

    /// Egress of a switch-originated frame: addresses from `worker_addr`, ECN from the queue.
    pub(super) fn egress_to_worker(
        &mut self,
        port: PortId,
        worker: u16,
        mut sgnn: Repr,
        lanes: Option<&[i32; LANES]>,
        dscp: u8,
        out: &mut Vec<Emitted>,
    ) {
        let Some(&w) = self.tables.worker_addr.get(&worker) else {
            self.counters.drop_unknown_worker += 1;
            return;
        };
        // The frames the switch makes carry its job (those it rewrites from an admitted
        // frame already do).
        sgnn.job = self.config.job;
        let ecn = self.ecn_mark(port, &mut sgnn);
        let repr = FrameRepr {
            eth: ethernet::Repr {
                dst: w.mac,
                src: self.config.mac,
                ethertype: ethernet::ETHERTYPE_IPV4,
            },
            ip: ipv4::Repr {
                src: self.config.ip,
                dst: w.ip,
                ttl: 64,
                dscp,
                ecn,
                ..Default::default()
            },
            sgnn,
        };
        let mut buf = vec![0u8; repr.frame_len()];
        repr.emit(lanes, &mut buf)
            .expect("switch frames are well formed");
        self.emit(port, dscp, buf, out);
    }
}
