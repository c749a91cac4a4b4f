//! Counters: one per event and per drop reason (`events`), and per port (`port_rx`,
//! `port_tx`) (`p4/v1model/counters.p4`; contract: `sgnn_switch::counters`).

use sgnn_switch::admission::Refusal;
use sgnn_switch::counters::Event;

/// Counters, one per event and per drop reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Frames received.
    pub rx: u64,
    /// Frames emitted.
    pub tx: u64,
    /// Data packets received from hosts.
    pub data: u64,
    /// Contributions added into an aggregator.
    pub aggregated: u64,
    /// Results emitted.
    pub results: u64,
    /// Extra pipeline passes.
    pub recirculated: u64,
    /// Contributions sent to hosts because of a resend or a released aggregator.
    pub bypassed: u64,
    /// Contributions sent to hosts by `deliver` (no aggregator).
    pub delivered: u64,
    /// Aggregators found holding state of an older round or block, and reclaimed.
    pub reclaimed: u64,
    /// Frames forwarded by `ipv4_forward`.
    pub forwarded: u64,
    /// Block-done messages counted.
    pub block_done: u64,
    /// Duplicate block-done messages (not counted twice).
    pub block_done_duplicate: u64,
    /// Block-done for an earlier block, answered with its block-advance.
    pub block_done_stale: u64,
    /// Block-advance rounds completed.
    pub block_advance: u64,
    /// Frames marked ECN.
    pub ecn_marked: u64,
    /// Dropped by the drop simulator.
    pub drop_simulated: u64,
    /// Dropped: not IPv4.
    pub drop_not_ipv4: u64,
    /// Dropped: IPv4 with no route.
    pub drop_no_route: u64,
    /// Dropped: malformed SwitchGNN frame, or an IPv4 header that is broken or truncated.
    pub drop_malformed: u64,
    /// Dropped: a type only the switch sends, or a host Data packet with a nonzero pass.
    pub drop_unexpected: u64,
    /// Dropped: Data or BlockDone for another round or block than the current one.
    pub drop_stale: u64,
    /// Dropped: no `agg_table` entry.
    pub drop_no_entry: u64,
    /// Dropped: aggregator index beyond the register array, or segment beyond the range.
    pub drop_bad_index: u64,
    /// Dropped: worker id without a `worker_table` entry.
    pub drop_unknown_worker: u64,
    /// Contributions that saturated at least one lane while adding (never silent).
    pub saturated: u64,
    /// Dropped: a second first-pass copy of a (source, segment) in one round and block.
    pub drop_duplicate: u64,
    /// Dropped (`sgnn_switch::admission`): a SwitchGNN frame from a port with no
    /// `port_worker` entry (no worker's and no cabled link, on every role), or naming another
    /// worker than the one on its port (a stray or forged frame must not add to a sum, reach
    /// a daemon, or advance or answer for another worker), or a BlockAdvance on a leaf's link
    /// to a spine other than the root (`sgnn_switch::admission::from_root`).
    pub drop_wrong_port: u64,
    /// Contributions for an older generation than the one their aggregator holds for the
    /// same round and block (the row was recycled): sent to the host as Bypass, the
    /// aggregator untouched.
    pub bypassed_late: u64,
    /// NACKs sent (a gap in a worker's sequenced Data frames).
    pub nacked: u64,
    /// Tail probes answered.
    pub seq_probed: u64,
    /// Pulls answered.
    pub pulled: u64,
    /// All-sent notices multicast (every worker's clean tail probe of a block counted).
    #[serde(default)]
    pub all_sent: u64,
    /// Dropped (`sgnn_switch::admission`): on a worker's port with another IPv4 source than
    /// the worker's address.
    #[serde(default)]
    pub drop_wrong_address: u64,
    /// Dropped (`sgnn_switch::admission`): a job value other than the switch's.
    #[serde(default)]
    pub drop_foreign_job: u64,
}

impl Counters {
    /// Names in the order of the P4 program's `events` counter indices.
    pub const NAMES: [&'static str; Event::ALL.len()] = Event::NAMES;

    /// The count of `e`. The match names every event of the switch contract, so an event
    /// added there does not compile here until the software switch counts it.
    pub fn get(&self, e: Event) -> u64 {
        match e {
            Event::Rx => self.rx,
            Event::Tx => self.tx,
            Event::Data => self.data,
            Event::Aggregated => self.aggregated,
            Event::Results => self.results,
            Event::Recirculated => self.recirculated,
            Event::Bypassed => self.bypassed,
            Event::Delivered => self.delivered,
            Event::Reclaimed => self.reclaimed,
            Event::Forwarded => self.forwarded,
            Event::BlockDone => self.block_done,
            Event::BlockDoneDuplicate => self.block_done_duplicate,
            Event::BlockDoneStale => self.block_done_stale,
            Event::BlockAdvance => self.block_advance,
            Event::EcnMarked => self.ecn_marked,
            Event::DropSimulated => self.drop_simulated,
            Event::DropNotIpv4 => self.drop_not_ipv4,
            Event::DropNoRoute => self.drop_no_route,
            Event::DropMalformed => self.drop_malformed,
            Event::DropUnexpected => self.drop_unexpected,
            Event::DropStale => self.drop_stale,
            Event::DropNoEntry => self.drop_no_entry,
            Event::DropBadIndex => self.drop_bad_index,
            Event::DropUnknownWorker => self.drop_unknown_worker,
            Event::Saturated => self.saturated,
            Event::DropDuplicate => self.drop_duplicate,
            Event::DropWrongPort => self.drop_wrong_port,
            Event::BypassedLate => self.bypassed_late,
            Event::Nacked => self.nacked,
            Event::SeqProbed => self.seq_probed,
            Event::Pulled => self.pulled,
            Event::AllSent => self.all_sent,
            Event::DropWrongAddress => self.drop_wrong_address,
            Event::DropForeignJob => self.drop_foreign_job,
        }
    }

    /// Counts one frame refused by the admission rule, under its reason's event.
    pub fn refused(&mut self, r: Refusal) {
        match r {
            Refusal::WrongPort => self.drop_wrong_port += 1,
            Refusal::WrongAddress => self.drop_wrong_address += 1,
            Refusal::ForeignJob => self.drop_foreign_job += 1,
        }
    }

    /// The counters as the P4 program's `events` array (index `i` is `NAMES[i]`).
    pub fn to_array(&self) -> [u64; Event::ALL.len()] {
        Event::ALL.map(|e| self.get(e))
    }
}

#[cfg(test)]
mod counter_tests {
    use super::*;

    /// The JSON of the counters (`--stats-json`, the metrics) names each field as the switch
    /// contract names its event, in the contract's order, with the value `get` reads.
    #[test]
    fn counters_are_the_contracts_events_in_its_order() {
        let mut c = Counters::default();
        // Distinct values through the JSON form, so a field read for the wrong event shows.
        let mut v = serde_json::to_value(&c).unwrap();
        let obj = v.as_object_mut().unwrap();
        let keys: Vec<&str> = obj.keys().map(|k| k.as_str()).collect();
        let mut sorted_names = Event::NAMES.to_vec();
        sorted_names.sort_unstable();
        let mut sorted_keys = keys.clone();
        sorted_keys.sort_unstable();
        assert_eq!(sorted_keys, sorted_names, "one field per event");
        for (i, e) in Event::ALL.iter().enumerate() {
            obj.insert(e.name().to_string(), (i as u64 + 100).into());
        }
        c = serde_json::from_value(v).unwrap();
        for (i, e) in Event::ALL.iter().enumerate() {
            assert_eq!(c.get(*e), i as u64 + 100, "{}", e.name());
            assert_eq!(c.to_array()[i], i as u64 + 100);
        }
    }
}

/// Packets and bytes through one port (`port_rx`, `port_tx`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortCount {
    /// Frames.
    pub packets: u64,
    /// Bytes of those frames.
    pub bytes: u64,
}
