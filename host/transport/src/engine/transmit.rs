//! Frames out: building them (Ethernet, IPv4 and SwitchGNN headers, the DSCP of their
//! traffic class, into the class's queue), and choosing the next first transmission of the
//! running exchange.

use sgnn_wire::recovery::SEQ_VALID;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, LANES};

use super::{Engine, Phase};

/// Frame buffers an engine keeps for reuse ([`Engine::recycle`]): a burst's worth.
const SPARE_BUFFERS: usize = 512;

/// A frame in a transmit queue, beside the SwitchGNN header it was built from: numbering,
/// pacing and the queues' filters read the header here instead of parsing the bytes.
#[derive(Debug)]
pub(super) struct Queued {
    /// The frame's SwitchGNN header, as emitted (and as numbered: [`Queued::set_seq`]).
    pub(super) sgnn: Repr,
    /// The frame.
    pub(super) frame: Vec<u8>,
}

impl Queued {
    /// Whether this is a Data frame that takes a number when it leaves (`SEQ_VALID` in
    /// `dst_id`).
    pub(super) fn is_numbered_data(&self) -> bool {
        self.sgnn.packet_type == PacketType::Data && self.sgnn.dst_id & SEQ_VALID != 0
    }

    /// Numbers the frame: transmission number `n` in `dst_id`, in the header and the bytes.
    pub(super) fn set_seq(&mut self, n: u16) {
        self.sgnn.dst_id = SEQ_VALID | n as u32;
        sgnn_wire::frame::Frame::new_unchecked(&mut self.frame[..]).set_seq(n);
    }
}
use crate::class::TrafficClass;

impl Engine {
    pub(super) fn emit(
        &mut self,
        class: TrafficClass,
        dst_ip: [u8; 4],
        s: Repr,
        lanes: Option<&[i32; LANES]>,
    ) {
        let mut s = s;
        s.job = self.job;
        let repr = FrameRepr {
            eth: ethernet::Repr {
                dst: self.cfg.switch_mac,
                src: self.mac,
                ethertype: ethernet::ETHERTYPE_IPV4,
            },
            ip: ipv4::Repr {
                src: self.ip,
                dst: dst_ip,
                ttl: 64,
                dscp: self.cfg.dscp.get(class),
                ..Default::default()
            },
            sgnn: s,
        };
        // A buffer the datapath gave back ([`Engine::recycle`]), or a new one.
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.resize(repr.frame_len(), 0);
        repr.emit(lanes, &mut buf)
            .expect("the engine only builds well-formed frames");
        self.queues[class.index()].push_back(Queued {
            sgnn: s,
            frame: buf,
        });
    }

    /// Takes back a frame buffer [`Engine::poll_transmit`] handed out, once the datapath sent
    /// it, to build a later frame in (no allocation per frame).
    pub fn recycle(&mut self, frame: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            self.spare.push(frame);
        }
    }

    pub(super) fn header(&self, t: PacketType, block: usize, segment: u16) -> Repr {
        let mut s = Repr::new(t);
        s.worker_id = self.view.worker;
        s.block_id = block as u16;
        s.round = self.round;
        s.segment = segment;
        s.frac_bits = self.view.fixed.frac_bits;
        s
    }

    pub(super) fn send_block_done(&mut self, round: u16, block: usize) {
        let mut s = Repr::new(PacketType::BlockDone);
        s.worker_id = self.view.worker;
        s.block_id = block as u16;
        s.round = round;
        self.emit(TrafficClass::Control, self.cfg.switch_ip, s, None);
    }

    /// Queues the next first-transmission frame of the running exchange, if any.
    pub(super) fn generate_data(&mut self) {
        match self.phase {
            Phase::Block(_) => self.next_block_data(),
            Phase::Host(_) => self.next_host_data(),
            _ => {}
        }
    }

    /// Whether the running exchange still has first transmissions to make.
    pub(super) fn data_pending(&self) -> bool {
        if !self.queues[TrafficClass::Data.index()].is_empty() {
            return true;
        }
        let s = self.segs();
        match &self.phase {
            Phase::Block(bs) => bs.cursor < self.view.blocks[bs.b].sources.len() * s,
            Phase::Host(hs) => hs.cursor < self.view.host_based.sends.len() * s,
            _ => false,
        }
    }

    /// After a first transmission: after the last one a block (or a baseline exchange) may
    /// be done.
    pub(super) fn after_first_transmission(&mut self, now: u64) {
        match self.phase {
            Phase::Block(_) => self.check_block_done(now),
            Phase::Host(_) => self.check_host_complete(now),
            _ => {}
        }
    }
}
