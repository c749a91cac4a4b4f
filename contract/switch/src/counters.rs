//! `p4/v1model/counters.p4`: the `events` counter (one cell per [`Event`], in this order:
//! `EV_*` in `common/protocol.p4`) and the per-port `port_rx` / `port_tx`.

use crate::forwarding::PORTS;
use crate::{Counter, Unit};

/// Cells of `events` (`EVENT_COUNTERS`; [`Event::ALL`] uses the first 34).
pub const EVENT_COUNTERS: u32 = 64;

/// `events`: one packet count per [`Event`].
pub const EVENTS: Counter = Counter {
    name: "events",
    id: 1,
    unit: Unit::Packets,
    size: EVENT_COUNTERS,
};
/// `port_rx`: every frame received from a host, by ingress port (not recirculated passes).
pub const PORT_RX: Counter = Counter {
    name: "port_rx",
    id: 2,
    unit: Unit::Both,
    size: PORTS,
};
/// `port_tx`: every frame sent to a host, by egress port (not the recirculation clones).
pub const PORT_TX: Counter = Counter {
    name: "port_tx",
    id: 3,
    unit: Unit::Both,
    size: PORTS,
};

macro_rules! events {
    ($($(#[doc = $doc:literal])* $v:ident = $name:literal,)*) => {
        /// What the switch counts, one cell of `events` each; the discriminant is the cell.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum Event {
            $($(#[doc = $doc])* $v,)*
        }

        impl Event {
            /// Every event, in cell order.
            pub const ALL: [Event; [$(Event::$v),*].len()] = [$(Event::$v),*];
            /// Their names (`EV_<NAME>` in the P4 source, upper-cased), in cell order.
            pub const NAMES: [&'static str; Event::ALL.len()] = [$($name),*];

            /// The event's name.
            pub const fn name(self) -> &'static str {
                Event::NAMES[self as usize]
            }

            /// The cell of `events` it counts in.
            pub const fn index(self) -> usize {
                self as usize
            }

            /// The event named `name`.
            pub fn by_name(name: &str) -> Option<Event> {
                Event::ALL.iter().copied().find(|e| e.name() == name)
            }
        }
    };
}

events! {
    /// Frames received.
    Rx = "rx",
    /// Frames emitted.
    Tx = "tx",
    /// Data packets received from hosts.
    Data = "data",
    /// Contributions added into an aggregator.
    Aggregated = "aggregated",
    /// Results emitted.
    Results = "results",
    /// Extra pipeline passes.
    Recirculated = "recirculated",
    /// Contributions sent to hosts because of a resend or a released aggregator.
    Bypassed = "bypassed",
    /// Contributions sent to hosts by `deliver` or `replicate` (no aggregator).
    Delivered = "delivered",
    /// Aggregators found holding state of an older round, block or generation, reclaimed.
    Reclaimed = "reclaimed",
    /// Frames forwarded by `ipv4_forward`.
    Forwarded = "forwarded",
    /// BlockDone messages counted.
    BlockDone = "block_done",
    /// Duplicate BlockDone messages (not counted twice).
    BlockDoneDuplicate = "block_done_duplicate",
    /// BlockDone for an earlier block, answered with its BlockAdvance.
    BlockDoneStale = "block_done_stale",
    /// Blocks advanced.
    BlockAdvance = "block_advance",
    /// Frames marked ECN.
    EcnMarked = "ecn_marked",
    /// Dropped by the drop simulator.
    DropSimulated = "drop_simulated",
    /// Dropped: not IPv4.
    DropNotIpv4 = "drop_not_ipv4",
    /// Dropped: IPv4 with no route.
    DropNoRoute = "drop_no_route",
    /// Dropped: malformed SwitchGNN frame, or a broken or truncated IPv4 header.
    DropMalformed = "drop_malformed",
    /// Dropped: a type only the switch sends, or a host Data packet with a nonzero pass.
    DropUnexpected = "drop_unexpected",
    /// Dropped: Data or BlockDone for another round or block than the current one.
    DropStale = "drop_stale",
    /// Dropped: no `agg_table` entry.
    DropNoEntry = "drop_no_entry",
    /// Dropped: aggregator index beyond the registers, or segment beyond the range.
    DropBadIndex = "drop_bad_index",
    /// Dropped: worker id without a `worker_table` entry.
    DropUnknownWorker = "drop_unknown_worker",
    /// Contributions that saturated at least one lane while adding (never silent).
    Saturated = "saturated",
    /// Dropped: a second first-pass copy of a (source, segment) in one round and block.
    DropDuplicate = "drop_duplicate",
    /// Dropped ([`crate::admission`]): a SwitchGNN frame from a port with no `port_worker`
    /// entry (no worker's and no cabled link), or naming another worker than the one on its
    /// port, or a BlockAdvance on a leaf's link to a spine other than the root
    /// ([`crate::admission::from_root`]).
    DropWrongPort = "drop_wrong_port",
    /// Contributions for an older generation than their aggregator holds: to the host.
    BypassedLate = "bypassed_late",
    /// NACKs sent: a gap in a worker's sequenced Data frames, found by a later frame (which
    /// becomes the NACK) or by its tail probe.
    Nacked = "nacked",
    /// Tail probes answered (with a NACK frame, whether or not it names a new gap).
    SeqProbed = "seq_probed",
    /// Pulls answered: a receiver's FetchReq to the switch, answered with what the aggregator
    /// holds for its row (the kept Result, a partial with its contributor digest, or nothing).
    Pulled = "pulled",
    /// All-sent notices multicast: every worker's clean tail probe of a block was counted
    /// (`recovery::sent_step`).
    AllSent = "all_sent",
    /// Dropped ([`crate::admission`]): a frame on a worker's port whose IPv4 source is not
    /// that worker's address.
    DropWrongAddress = "drop_wrong_address",
    /// Dropped ([`crate::admission`]): a frame whose job value is not the one the switch was
    /// loaded with (a stale or foreign job's).
    DropForeignJob = "drop_foreign_job",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_fit_the_counter_and_name_themselves() {
        assert!(Event::ALL.len() as u32 <= EVENT_COUNTERS);
        for (i, e) in Event::ALL.iter().enumerate() {
            assert_eq!(e.index(), i);
            assert_eq!(Event::by_name(e.name()), Some(*e));
        }
        assert_eq!(Event::BypassedLate.index(), 27);
        assert_eq!(Event::Pulled.index(), 30);
        assert_eq!(Event::DropForeignJob.index(), 33);
    }
}
