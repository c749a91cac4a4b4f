//! The parser and the frame checks: what is IPv4, what is a SwitchGNN frame, what is
//! malformed (`p4/v1model/parser.p4`; contract: `sgnn_wire::frame::parse`, the drop reasons of
//! `sgnn_switch::counters`).

use sgnn_wire::frame::FrameRepr;
use sgnn_wire::{ethernet, ipv4, Error as WireError, IP_PROTO_SWITCHGNN, LANES};

use super::Pipeline;

/// What the parser makes of a frame's Ethernet and IPv4 headers.
pub(super) enum Ipv4 {
    /// Not IPv4 (`drop_not_ipv4`), or a broken IPv4 header (`drop_malformed`): counted.
    Dropped,
    /// IPv4 of another protocol: for `ipv4_forward`, by its destination, in its DSCP's queue.
    Other { dst: [u8; 4], dscp: u8 },
    /// SwitchGNN (protocol 253) with a sound IPv4 header; its own header is not judged yet
    /// (the drop simulator comes first).
    SwitchGnn,
}

impl Pipeline {
    /// The Ethernet and IPv4 checks of a frame received from outside.
    pub(super) fn parse_ipv4(&mut self, frame: &[u8]) -> Ipv4 {
        let Ok(eth) = ethernet::Frame::new_checked(frame) else {
            self.counters.drop_not_ipv4 += 1;
            return Ipv4::Dropped;
        };
        if eth.ethertype() != ethernet::ETHERTYPE_IPV4 {
            self.counters.drop_not_ipv4 += 1;
            return Ipv4::Dropped;
        }
        let ip = match ipv4::Packet::new_checked(eth.payload()) {
            Ok(ip) => ip,
            // EtherType IPv4 but a broken header or length: malformed, whatever it carries.
            Err(e) => {
                self.count_malformed(e);
                return Ipv4::Dropped;
            }
        };
        if ip.protocol() != IP_PROTO_SWITCHGNN {
            return Ipv4::Other {
                dst: ip.dst(),
                dscp: ip.dscp(),
            };
        }
        Ipv4::SwitchGnn
    }

    /// The whole SwitchGNN frame (`sgnn_wire::frame::parse`); a malformed one is counted.
    pub(super) fn parse_sgnn(&mut self, frame: &[u8]) -> Option<(FrameRepr, Option<[i32; LANES]>)> {
        match FrameRepr::parse(frame) {
            Ok(x) => Some(x),
            Err(e) => {
                self.count_malformed(e);
                None
            }
        }
    }

    fn count_malformed(&mut self, _reason: WireError) {
        self.counters.drop_malformed += 1;
    }
}
