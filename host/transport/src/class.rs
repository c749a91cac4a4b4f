//! Traffic classes and their DSCP marks.
//!
//! Every frame a host sends belongs to one class; the class decides its DSCP (so the switch's
//! `dscp_priority` table can queue it) and its place in the host's own send queue (higher
//! classes leave first). Defaults are documented in `docs/host.md`.

use serde::Serialize;

/// What a frame is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrafficClass {
    /// Block synchronisation (BlockDone, BlockAdvance) and the start-up probe: tiny and on
    /// every worker's critical path.
    Control,
    /// Results and acks: they complete vertices and stop retransmissions.
    Result,
    /// Recovery: FetchReq, Bypass (fetch replies, switch bypass) and resent Data.
    Recovery,
    /// First transmissions of vertex features (Data; the baseline's feature frames).
    Data,
    /// Anything else sharing the links (not sent by the daemon itself).
    Background,
}

impl TrafficClass {
    /// All classes, highest priority first.
    pub const ALL: [TrafficClass; 5] = [
        TrafficClass::Control,
        TrafficClass::Result,
        TrafficClass::Recovery,
        TrafficClass::Data,
        TrafficClass::Background,
    ];

    /// Position in [`TrafficClass::ALL`] (0 = highest priority).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Name used in statistics and flags.
    pub fn name(self) -> &'static str {
        match self {
            TrafficClass::Control => "control",
            TrafficClass::Result => "result",
            TrafficClass::Recovery => "recovery",
            TrafficClass::Data => "data",
            TrafficClass::Background => "background",
        }
    }
}

/// DSCP value of each class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DscpMap {
    /// Block control: EF (46), expedited forwarding.
    pub control: u8,
    /// Results and acks: AF41 (34).
    pub result: u8,
    /// Fetch and bypass: AF31 (26).
    pub recovery: u8,
    /// Feature data: AF11 (10).
    pub data: u8,
    /// Background: CS1 (8), lower effort.
    pub background: u8,
}

impl Default for DscpMap {
    fn default() -> Self {
        DscpMap {
            control: sgnn_wire::dscp::BLOCK_CONTROL,
            result: sgnn_wire::dscp::RESULT_ACK,
            recovery: sgnn_wire::dscp::RECOVERY,
            data: sgnn_wire::dscp::DATA,
            background: sgnn_wire::dscp::BACKGROUND,
        }
    }
}

impl DscpMap {
    /// DSCP of `class`.
    pub fn get(&self, class: TrafficClass) -> u8 {
        match class {
            TrafficClass::Control => self.control,
            TrafficClass::Result => self.result,
            TrafficClass::Recovery => self.recovery,
            TrafficClass::Data => self.data,
            TrafficClass::Background => self.background,
        }
    }

    /// Checks every value fits the 6-bit DSCP field.
    pub fn validate(&self) -> Result<(), String> {
        for c in TrafficClass::ALL {
            let d = self.get(c);
            if d > 63 {
                return Err(format!(
                    "DSCP {d} for class {} does not fit the 6-bit field (0..=63)",
                    c.name()
                ));
            }
        }
        Ok(())
    }
}
