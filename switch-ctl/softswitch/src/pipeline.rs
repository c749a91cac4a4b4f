//! One pass of the SwitchGNN pipeline per call, with recirculation, as the P4 program does it.
//!
//! Ingress order: drop simulator -> parse (malformed SwitchGNN frames are dropped and counted
//! by reason; other IPv4 is forwarded by `ipv4_forward`) -> by type: Data goes to aggregation,
//! BlockDone to block sync, everything a host sends to a host (Ack, FetchReq, Bypass) is
//! forwarded by IP, switch-only types from hosts are dropped.
//!
//! Aggregation of a Data packet at pass `p`: look up `agg_table[(block, src, p)]`;
//! `aggregate` adds the 32 lanes into aggregator `agg_base + segment` (one read-modify-write of
//! each register array), increments its count, and when the count reaches `expected` emits a
//! Result to the destination's worker and frees the aggregator. If the action says `more`, the
//! packet is recirculated with `p + 1`, carrying its original values. A Data packet with RESEND
//! names the one pass it is resent for: its aggregator is released (state `bypassed` for this
//! round and block, so later contributions bypass too) and the values go to the destination's
//! worker as Bypass; it never recirculates, so a retransmission is never added twice.
//!
//! Generations (a plan that recycles aggregators by live range gives several destination rows
//! of a block the same `agg_base`, numbered 0, 1, 2, ... in send order): an aggregator also
//! holds the generation its state belongs to (`agg_gen`). A contribution for an older
//! generation than the one held for the same round and block is late (its row was recycled):
//! it goes to the destination's worker as Bypass (`bypassed_late`) and leaves the aggregator
//! alone. State of another round, block or generation is reclaimed, as before. With
//! generation 0 everywhere nothing changes.
//!
//! `replicate(group)` (a delivery plan's raw vertex, `M`): the packet replication engine
//! sends every worker of the multicast group a Bypass copy addressed to all its neighbours of
//! the source; per-edge aggregators of the same source, if any, follow from pass 1.
//!
//! Loss recovery (docs/host.md, "Loss recovery"; `sgnn_switch::recovery`): a sequenced Data
//! frame (`SEQ_VALID` in `dst_id`) from its worker's port is checked against `seq_next` before
//! `agg_table`; a gap turns it into a NACK to its worker. A tail probe (Ack, `dst_id`
//! `SEQ_PROBE`) is answered with a NACK frame, except the clean probe that completes the
//! block's count, which becomes the all-sent notice to every worker. An aggregate a sequenced
//! frame completes is kept (state DONE, sum, count and contributor digest `agg_ids`) until its
//! aggregator is reused, and a pull (a FetchReq to the switch's own address) is answered from
//! the aggregator: the kept Result, a partial sum with its count and digest, or nothing.

use rand::{Rng, SeedableRng};
use sgnn_wire::frame::FrameRepr;
use sgnn_wire::sgnn::Repr;
use sgnn_wire::{ethernet, ipv4, Error as WireError, PacketType, IP_PROTO_SWITCHGNN, LANES};

use sgnn_switch::admission::{admit, from_root, Port, Refusal};
use sgnn_switch::block_sync::tag;
use sgnn_switch::counters::Event;
use sgnn_switch::recovery::{probe_clean, sent_step, seq_step, Nack, SentOutcome, SeqOutcome};
use sgnn_wire::recovery::{seq_of, PULL_GONE, SEND_DONE, SEQ_PROBE};

use crate::tables::{AggAction, PortEnd, PortId, Replica, Tables, ADVANCE_GROUP};

pub use sgnn_switch::aggregation::agg_state;
pub use sgnn_switch::aggregation::SEEN_VALID;

/// How an `agg_table` row counts a contribution and where its completed sum goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Weigh {
    /// One per frame; the sum goes down as a Result (`aggregate`).
    One,
    /// One per frame; the sum goes up as a partial (`aggregate_up`).
    OneUp,
    /// The frame's count (a partial); the sum goes down as a Result (`aggregate_partials`).
    Count,
}

/// Sizes and settings the control plane sets (the P4 program's `config.p4` and registers).
#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// Aggregators (register array size).
    pub aggregators: u32,
    /// Workers taking part in block synchronisation.
    pub workers: u16,
    /// Blocks per round (after the last, the next round starts at block 0).
    pub blocks_per_round: u16,
    /// Egress queue depth (packets) above which packets are ECN-marked.
    pub ecn_threshold: u32,
    /// The switch's own MAC and IP (source of Result and BlockAdvance frames).
    pub mac: [u8; 6],
    /// The switch's IP.
    pub ip: [u8; 4],
    /// Drop simulator: drop each SwitchGNN packet with this probability.
    pub drop_probability: f64,
    /// Drop simulator: also drop every n-th SwitchGNN packet a host sends (0 = off).
    pub drop_every: u64,
    /// Seed of the drop simulator.
    pub drop_seed: u64,
    /// [`sgnn_plan::Plan::tag`] of the plan the tables hold (0: none), written into the
    /// answer to a daemon's start-up probe.
    pub plan_tag: u32,
    /// Cells of `src_seen`: the program's [`SEEN_CELLS`], or more for a switch with more
    /// aggregators than the program's build ([`sgnn_plan::profile::seen_cells_for`]).
    pub seen_cells: u32,
    /// Where the switch sits in a leaf-spine fabric (`sgnn_switch::fabric`); a star's switch
    /// by default.
    pub role: FabricRole,
    /// The job value every SwitchGNN frame must carry (`sgnn_switch::admission`): chosen at
    /// load, 0 until then and in the simulator.
    pub job: u16,
}

/// Where a switch sits in a leaf-spine fabric: the contract's [`sgnn_switch::config::Role`]
/// (`set_config`'s `role`, `sync_base`, `up_id`, `up_peer`).
pub use sgnn_switch::config::Role as FabricRole;

impl SwitchConfig {
    /// What `switch-ctl load` sets for `plan` (program.rs's `set_config`): the plan's
    /// aggregators, workers, blocks per round and tag; everything else the default. The one
    /// place the software switch, the simulator's tests, the fuzz target and the benchmarks
    /// derive a switch configuration from a plan.
    pub fn for_plan(plan: &sgnn_plan::Plan) -> SwitchConfig {
        SwitchConfig {
            aggregators: plan.manifest.aggregators.min(u32::MAX as u64) as u32,
            workers: plan.workers() as u16,
            blocks_per_round: plan.blocks.len() as u16,
            plan_tag: plan.tag(),
            seen_cells: sgnn_plan::profile::seen_cells_for(
                SEEN_CELLS as u64,
                plan.manifest.aggregators,
            )
            .min(u32::MAX as u64) as u32,
            ..SwitchConfig::default()
        }
    }
}

impl SwitchConfig {
    /// [`SwitchConfig::for_plan`] for `switch` of `fabric` (`sgnn_switch::fabric`): a leaf
    /// synchronises its workers and reports to the root spine, the root spine synchronises
    /// the leaves; each has its fabric address.
    pub fn for_fabric(
        plan: &sgnn_plan::Plan,
        fabric: &sgnn_switch::fabric::Fabric,
        switch: sgnn_switch::fabric::FabricSwitch,
    ) -> SwitchConfig {
        let s = sgnn_switch::fabric::settings(plan, fabric, switch);
        SwitchConfig {
            workers: s.workers,
            mac: s.switch_mac,
            ip: s.switch_ip,
            role: s.role,
            ..SwitchConfig::for_plan(plan)
        }
    }
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            aggregators: sgnn_switch::aggregation::AGGREGATORS,
            workers: 1,
            blocks_per_round: 1,
            ecn_threshold: u32::MAX,
            mac: sgnn_wire::addressing::SWITCH_MAC,
            ip: sgnn_wire::addressing::SWITCH_IP,
            drop_probability: 0.0,
            drop_every: 0,
            drop_seed: 1,
            plan_tag: 0,
            seen_cells: SEEN_CELLS as u32,
            role: FabricRole::Star,
            job: 0,
        }
    }
}

/// The register arrays.
#[derive(Debug, Clone)]
pub struct Registers {
    /// `agg_value_0` .. `agg_value_31`, one row per aggregator.
    pub agg_values: Vec<[i32; LANES]>,
    /// `agg_count`.
    pub agg_count: Vec<u16>,
    /// `agg_state` (see [`agg_state`]).
    pub agg_state: Vec<u8>,
    /// `agg_tag`: `round << 16 | block` the state belongs to.
    pub agg_tag: Vec<u32>,
    /// `agg_gen`: the generation (of the rows sharing the aggregator) the state belongs to;
    /// 0 when free.
    pub agg_gen: Vec<u16>,
    /// `agg_ecn`: sticky congestion mark of the aggregate.
    pub agg_ecn: Vec<u8>,
    /// `agg_ids`: the sum (mod 2^32) of the source ids the aggregator holds.
    pub agg_ids: Vec<u32>,
    /// `seq_next`: per worker, `gaps << 16 | next` (`sgnn_switch::recovery`).
    pub seq_next: Vec<u32>,
    /// `seq_gap`: per worker, the last gap NACKed, `lo << 16 | hi`.
    pub seq_gap: Vec<u32>,
    /// `sent_done`: per worker, the mark of the round and block whose clean tail probe was
    /// counted (`sgnn_switch::recovery::sent_step`).
    pub sent_done: Vec<u32>,
    /// `sent_count`: `key << 16 | left`: the workers whose clean tail probe is not counted yet
    /// in the block of that key.
    pub sent_count: u32,
    /// `sync_round`, `sync_block`: the block being exchanged.
    pub sync_round: u16,
    /// Current block.
    pub sync_block: u16,
    /// `sync_done`: which workers reported the current block done.
    pub sync_done: Vec<bool>,
    /// `sync_count`: how many.
    pub sync_count: u16,
    /// `drop_seen`: SwitchGNN frames from hosts since the last `drop_every` drop.
    pub drop_seen: u32,
    /// `src_seen`: per (source, segment) of the block, `SEEN_VALID | round << 16 | block` of
    /// the last first-pass contribution taken (duplicates are dropped).
    pub src_seen: Vec<u64>,
}

/// Cells of `src_seen` (the P4 program's `SEEN_CELLS`).
pub const SEEN_CELLS: usize = sgnn_switch::aggregation::SEEN_CELLS as usize;
/// Cells of the per-worker registers (`MAX_WORKERS`).
const MAX_WORKERS: usize = sgnn_switch::config::MAX_WORKERS as usize;

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

/// Largest port number plus one (size of the port counters).
pub const PORTS: usize = sgnn_switch::forwarding::PORTS as usize;

/// A frame the switch sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitted {
    /// Egress port.
    pub port: PortId,
    /// Priority queue (from `dscp_priority`).
    pub queue: u8,
    /// The frame.
    pub frame: Vec<u8>,
}

/// A Data packet between two passes: what the recirculation port carries to the next pass
/// (its headers as parsed on arrival, its values, whether it is a resend).
#[derive(Debug, Clone)]
pub struct Recirculation {
    repr: FrameRepr,
    lanes: [i32; LANES],
    resend: bool,
}

impl Recirculation {
    /// The pass this packet last took (the next is one more).
    pub fn pass(&self) -> u8 {
        self.repr.sgnn.pass
    }
}

/// The pipeline: tables, registers, counters.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// Settings.
    pub config: SwitchConfig,
    /// Tables (written by the control plane).
    pub tables: Tables,
    /// Registers.
    pub regs: Registers,
    /// Counters.
    pub counters: Counters,
    /// `port_rx`: frames received per ingress port.
    pub port_rx: Vec<PortCount>,
    /// `port_tx`: frames sent per egress port (the datapath takes back the ones it could
    /// not send, [`Pipeline::transmit_failed`]).
    pub port_tx: Vec<PortCount>,
    /// Frames the pipeline sent to a port that the datapath could not put on the wire (no
    /// such port, a socket or DPDK error): counted here, not in `port_tx`.
    pub port_tx_failed: Vec<PortCount>,
    /// The datapath's own counters (queue drops, deepest queue, injected faults, failed
    /// sends), as `ports::serve` last published them, for the metrics.
    pub datapath: crate::ports::DatapathStats,
    /// Egress queue depth per port, supplied by the datapath for ECN marking.
    pub queue_depth: Vec<u32>,
    /// Host ports this switch has (its datapath's ports: one per `--worker` address,
    /// `--iface` or DPDK port), when known. A worker mapped to a port beyond them is refused
    /// at load (`worker_table`), so a plan for more workers than the switch has ports fails
    /// there, not as a timeout. `None` (the library's default): no check.
    pub host_ports: Option<u16>,
    /// Aggregators in state `ACTIVE` (kept as they change, for the simulator's gauges).
    active: u64,
    rng: rand_chacha::ChaCha8Rng,
}

impl Pipeline {
    /// A switch with empty tables and free registers.
    pub fn new(config: SwitchConfig, tables: Tables) -> Pipeline {
        let n = config.aggregators as usize;
        let regs = Registers {
            agg_values: vec![[0; LANES]; n],
            agg_count: vec![0; n],
            agg_state: vec![agg_state::FREE; n],
            agg_tag: vec![0; n],
            agg_gen: vec![0; n],
            agg_ecn: vec![0; n],
            agg_ids: vec![0; n],
            seq_next: vec![0; MAX_WORKERS],
            seq_gap: vec![0; MAX_WORKERS],
            sent_done: vec![0; MAX_WORKERS],
            sent_count: 0,
            sync_round: 0,
            sync_block: 0,
            sync_done: vec![false; config.workers as usize],
            sync_count: 0,
            drop_seen: 0,
            src_seen: vec![0; config.seen_cells as usize],
        };
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.drop_seed);
        Pipeline {
            config,
            tables,
            regs,
            counters: Counters::default(),
            port_rx: vec![PortCount::default(); PORTS],
            port_tx: vec![PortCount::default(); PORTS],
            port_tx_failed: vec![PortCount::default(); PORTS],
            datapath: Default::default(),
            queue_depth: Vec::new(),
            host_ports: None,
            active: 0,
            rng,
        }
    }

    /// Aggregators summing now (state `ACTIVE`), kept as they change: cheap to read per event.
    pub fn aggregators_active(&self) -> u64 {
        self.active
    }

    /// Recounts [`Pipeline::aggregators_active`] from the registers (after the control plane
    /// wrote `agg_state`).
    pub(crate) fn recount_active(&mut self) {
        self.active = self.busy_aggregators() as u64;
    }

    /// Number of aggregators not free (a finished block leaves none).
    pub fn busy_aggregators(&self) -> usize {
        self.regs
            .agg_state
            .iter()
            .filter(|&&s| s == agg_state::ACTIVE)
            .count()
    }

    /// Aggregators in use, as (busy, stale): busy ones are summing or released for the round
    /// and block being exchanged; stale ones were left active or bypassed by an earlier round
    /// or block (a contribution lost for good, its sum recovered by the hosts) and are
    /// reclaimed when the plan uses them again. A complete aggregate kept for pulls (DONE) is
    /// neither: it holds no work, and any later use takes it over as if free
    /// ([`Pipeline::aggregators_done`]). A finished run leaves no busy aggregator.
    pub fn aggregators_in_use(&self) -> (usize, usize) {
        let now = tag(self.regs.sync_round, self.regs.sync_block);
        let mut busy = 0;
        let mut stale = 0;
        for (&s, &t) in self.regs.agg_state.iter().zip(&self.regs.agg_tag) {
            match s {
                agg_state::FREE | agg_state::DONE => {}
                _ if t == now => busy += 1,
                _ => stale += 1,
            }
        }
        (busy, stale)
    }

    /// Aggregators holding a complete aggregate kept for pulls (state DONE).
    pub fn aggregators_done(&self) -> usize {
        self.regs
            .agg_state
            .iter()
            .filter(|&&s| s == agg_state::DONE)
            .count()
    }

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

    fn drop_simulated(&mut self) -> bool {
        self.regs.drop_seen = self.regs.drop_seen.wrapping_add(1);
        if self.config.drop_every > 0 && self.regs.drop_seen as u64 >= self.config.drop_every {
            self.regs.drop_seen = 0;
            return true;
        }
        self.config.drop_probability > 0.0 && self.rng.gen::<f64>() < self.config.drop_probability
    }

    fn count_malformed(&mut self, _reason: WireError) {
        self.counters.drop_malformed += 1;
    }

    /// Processes one frame received on `ingress` through every pass it takes (its
    /// recirculations follow at once), appending what it emits to `out`.
    pub fn process(&mut self, ingress: PortId, frame: &[u8], out: &mut Vec<Emitted>) {
        let mut next = self.ingress(ingress, frame, out);
        while let Some(r) = next {
            next = self.recirculate(r, out);
        }
    }

    /// The first pass of a frame received on `ingress`: what it emits goes to `out`, and
    /// when it goes on to another pass (a Data packet whose `agg_table` action says `more`)
    /// that pass is returned, for [`Pipeline::recirculate`] when the recirculation port
    /// delivers it. A switch that recirculates through a port of finite rate (the simulator)
    /// interleaves other packets' passes between the two, as the hardware does.
    pub fn ingress(
        &mut self,
        ingress: PortId,
        frame: &[u8],
        out: &mut Vec<Emitted>,
    ) -> Option<Recirculation> {
        self.counters.rx += 1;
        if let Some(c) = self.port_rx.get_mut(ingress as usize) {
            c.packets += 1;
            c.bytes += frame.len() as u64;
        }
        let Ok(eth) = ethernet::Frame::new_checked(frame) else {
            self.counters.drop_not_ipv4 += 1;
            return None;
        };
        if eth.ethertype() != ethernet::ETHERTYPE_IPV4 {
            self.counters.drop_not_ipv4 += 1;
            return None;
        }
        let ip = match ipv4::Packet::new_checked(eth.payload()) {
            Ok(ip) => ip,
            // EtherType IPv4 but a broken header or length: malformed, whatever it carries.
            Err(e) => {
                self.count_malformed(e);
                return None;
            }
        };
        if ip.protocol() != IP_PROTO_SWITCHGNN {
            let dst = ip.dst();
            let dscp = ip.dscp();
            self.forward(dst, dscp, frame.to_vec(), out);
            return None;
        }
        if self.drop_simulated() {
            self.counters.drop_simulated += 1;
            return None;
        }
        let (repr, lanes) = match FrameRepr::parse(frame) {
            Ok(x) => x,
            Err(e) => {
                self.count_malformed(e);
                return None;
            }
        };
        // Whose port, whose address, whose job (admission.p4), before any control acts.
        let port = Port::classify(self.tables.port_worker.get(&ingress).copied());
        if let Err(r) = admit(port, self.config.job, repr.ip.src, &repr.sgnn) {
            self.counters.refused(r);
            return None;
        }
        match repr.sgnn.packet_type {
            PacketType::Data => {
                self.counters.data += 1;
                let lanes = lanes.expect("Data carries lanes");
                let s = repr.sgnn;
                // A spine's partials were gated by their leaves (a spine other than the root
                // never learns the block; `agg_tag` keeps blocks apart).
                let gated = !matches!(self.config.role, FabricRole::Spine { .. });
                if gated && (s.round, s.block_id) != (self.regs.sync_round, self.regs.sync_block) {
                    self.counters.drop_stale += 1;
                    return None;
                }
                if s.pass != 0 && !s.flags.resend {
                    self.counters.drop_unexpected += 1;
                    return None;
                }
                // A sequenced first-pass frame from its worker's port: in order, late, or the
                // frame after a gap, which becomes the NACK.
                if !s.flags.resend && self.on_its_port(ingress, s.worker_id) {
                    if let Some(n) = seq_of(s.dst_id) {
                        if let SeqOutcome::Nack(k) = self.seq_access(s.worker_id, n, false) {
                            self.send_nack(&repr, k, out);
                            return None;
                        }
                    }
                }
                let r = Recirculation {
                    resend: s.flags.resend,
                    repr,
                    lanes,
                };
                return self.data_pass(r, out);
            }
            PacketType::BlockDone => self.block_done(ingress, repr, out),
            PacketType::Ack if repr.sgnn.dst_id == SEQ_PROBE => self.seq_probe(ingress, repr, out),
            PacketType::FetchReq if repr.ip.dst == self.config.ip => self.pull(repr, out),
            PacketType::Ack if repr.sgnn.dst_id == sgnn_wire::PROBE_DST => {
                // A daemon's start-up probe: forwarded with the plan tag in src_id and the
                // block the switch is at in round and block_id.
                let mut f = frame.to_vec();
                let mut p = sgnn_wire::sgnn::Packet::new_unchecked(
                    &mut f[sgnn_wire::ETHERNET_HEADER_LEN + sgnn_wire::IPV4_HEADER_LEN..],
                );
                p.set_src_id(self.config.plan_tag);
                p.set_round(self.regs.sync_round);
                p.set_block_id(self.regs.sync_block);
                p.set_job(self.config.job);
                self.forward(repr.ip.dst, repr.ip.dscp, f, out)
            }
            PacketType::Ack | PacketType::FetchReq | PacketType::Bypass => {
                self.forward(repr.ip.dst, repr.ip.dscp, frame.to_vec(), out)
            }
            PacketType::BlockAdvance
                if matches!(self.config.role, FabricRole::Leaf { .. })
                    && repr.ip.dst == self.config.ip
                    && self.on_link(ingress) =>
            {
                // The root spine's link only: another spine's link is not the root's.
                let entry = self.tables.port_worker.get(&ingress).copied();
                match from_root(self.config.role, entry) {
                    Ok(()) => self.root_advance(repr, out),
                    Err(r) => self.counters.refused(r),
                }
            }
            // A spine's Result on its way to a worker under this leaf.
            PacketType::Result if repr.ip.dst != self.config.ip && self.on_link(ingress) => {
                self.forward(repr.ip.dst, repr.ip.dscp, frame.to_vec(), out)
            }
            PacketType::Result | PacketType::BlockAdvance => self.counters.drop_unexpected += 1,
        }
        None
    }

    fn forward(&mut self, dst: [u8; 4], dscp: u8, frame: Vec<u8>, out: &mut Vec<Emitted>) {
        match self.tables.ipv4_forward.get(&dst) {
            Some(&port) => {
                self.counters.forwarded += 1;
                self.emit(port, dscp, frame, out);
            }
            None => self.counters.drop_no_route += 1,
        }
    }

    fn emit(&mut self, port: PortId, dscp: u8, frame: Vec<u8>, out: &mut Vec<Emitted>) {
        let queue = self.tables.dscp_priority.get(&dscp).copied().unwrap_or(0);
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

    /// Whether egress `port`'s queue is over the ECN threshold.
    fn congested(&self, port: PortId) -> bool {
        self.queue_depth
            .get(port as usize)
            .is_some_and(|&d| d > self.config.ecn_threshold)
    }

    /// Ingress `worker_table`: the port of `worker`, then egress for a switch-originated frame.
    fn send_to_worker(
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
    fn egress_to_worker(
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
        let mut ecn = 0;
        if self.congested(port) {
            sgnn.flags.ecn = true;
            ecn = 3;
        }
        if sgnn.flags.ecn {
            self.counters.ecn_marked += 1;
        }
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

    /// The next pass of a packet the recirculation port delivers (see
    /// [`Pipeline::ingress`]); returns the pass after it, if any.
    pub fn recirculate(
        &mut self,
        mut r: Recirculation,
        out: &mut Vec<Emitted>,
    ) -> Option<Recirculation> {
        r.repr.sgnn.pass += 1;
        self.data_pass(r, out)
    }

    /// One pass of a Data packet at `r.repr.sgnn.pass`; the next pass if the action says
    /// `more` (a resend never goes on: it names the one pass it is for).
    fn data_pass(&mut self, r: Recirculation, out: &mut Vec<Emitted>) -> Option<Recirculation> {
        let s = r.repr.sgnn;
        let pass = s.pass;
        let resend = r.resend;
        let Some(&action) = self.tables.agg_table.get(&(s.block_id, s.src_id, pass)) else {
            self.counters.drop_no_entry += 1;
            return None;
        };
        // A host's first copy of (source, segment) in this round and block goes on; a
        // network duplicate would be added twice and complete an aggregate early.
        if pass == 0 && !resend {
            let idx = action.seen_base() as u64 + s.segment as u64;
            if idx >= self.regs.src_seen.len() as u64 {
                self.counters.drop_bad_index += 1;
                return None;
            }
            let mark = SEEN_VALID | tag(s.round, s.block_id) as u64;
            if self.regs.src_seen[idx as usize] == mark {
                self.counters.drop_duplicate += 1;
                return None;
            }
            self.regs.src_seen[idx as usize] = mark;
        }
        match action {
            AggAction::Deliver {
                dst_id, dst_worker, ..
            } => {
                self.counters.delivered += 1;
                self.bypass(&r.repr, dst_id, dst_worker, &r.lanes, out);
            }
            AggAction::Aggregate(p) => {
                self.aggregate(&r.repr, p, Weigh::One, resend, &r.lanes, out)
            }
            AggAction::Up(p) => self.aggregate(&r.repr, p, Weigh::OneUp, resend, &r.lanes, out),
            AggAction::Partials(p) => {
                self.aggregate(&r.repr, p, Weigh::Count, resend, &r.lanes, out)
            }
            AggAction::Replicate { group, .. } => self.replicate(&r.repr, group, &r.lanes, out),
        }
        if !action.more() || resend || pass == u8::MAX {
            return None;
        }
        self.counters.recirculated += 1;
        Some(r)
    }

    fn bypass(
        &mut self,
        repr: &FrameRepr,
        dst_id: u32,
        dst_worker: u16,
        lanes: &[i32; LANES],
        out: &mut Vec<Emitted>,
    ) {
        let mut b = repr.sgnn;
        b.packet_type = PacketType::Bypass;
        b.flags.ack = false;
        b.flags.fetch = false;
        b.dst_id = dst_id;
        b.pass = 0;
        self.send_to_worker(dst_worker, b, Some(lanes), repr.ip.dscp, out);
    }

    /// The packet replication engine's copies of a raw contribution: one Bypass per replica
    /// of `group`, rewritten in egress for worker `rid`, with `dst_id` "every neighbour of the
    /// source" ([`sgnn_wire::ALL_NEIGHBOURS`]). Each copy counts as `delivered`.
    fn replicate(
        &mut self,
        repr: &FrameRepr,
        group: u16,
        lanes: &[i32; LANES],
        out: &mut Vec<Emitted>,
    ) {
        let replicas = self
            .tables
            .multicast_groups
            .get(&group)
            .cloned()
            .unwrap_or_default();
        let mut b = repr.sgnn;
        b.packet_type = PacketType::Bypass;
        b.flags.ack = false;
        b.flags.fetch = false;
        b.dst_id = sgnn_wire::ALL_NEIGHBOURS;
        b.pass = 0;
        for r in replicas {
            self.counters.delivered += 1;
            self.egress_to_worker(r.port, r.rid, b, Some(lanes), repr.ip.dscp, out);
        }
    }

    fn aggregate(
        &mut self,
        repr: &FrameRepr,
        p: sgnn_switch::aggregation::AggregateParams,
        weigh: Weigh,
        resend: bool,
        lanes: &[i32; LANES],
        out: &mut Vec<Emitted>,
    ) {
        let s = repr.sgnn;
        let idx = p.agg_base as u64 + s.segment as u64;
        if idx >= self.config.aggregators as u64 {
            self.counters.drop_bad_index += 1;
            return;
        }
        let i = idx as usize;
        let t = tag(s.round, s.block_id);
        let g = p.generation;
        let held = self.regs.agg_state[i] != agg_state::FREE;
        // A contribution for a generation older than the one this round and block has moved
        // on to: its row was recycled. To the host, the aggregator untouched.
        if held && self.regs.agg_tag[i] == t && self.regs.agg_gen[i] > g {
            self.counters.bypassed_late += 1;
            self.bypass(repr, p.dst_id, p.dst_worker, lanes, out);
            return;
        }
        // An aggregator holding another round's, block's or (older) generation's state is a
        // leftover of loss: reclaim. A kept complete aggregate (DONE) is no leftover: it is
        // taken over as if free.
        if held && (self.regs.agg_tag[i] != t || self.regs.agg_gen[i] != g) {
            if self.regs.agg_state[i] != agg_state::DONE {
                self.counters.reclaimed += 1;
            }
            self.release(i, agg_state::FREE, 0, 0);
        }
        if resend || self.regs.agg_state[i] == agg_state::BYPASSED {
            // Release (partial sums are refetched by the receiver) and go to the host.
            self.release(i, agg_state::BYPASSED, t, g);
            self.counters.bypassed += 1;
            self.bypass(repr, p.dst_id, p.dst_worker, lanes, out);
            return;
        }
        if self.regs.agg_state[i] == agg_state::DONE {
            // The aggregate is complete: a further first copy cannot be a contribution it
            // lacks (src_seen lets one copy of a source through per block).
            self.counters.drop_duplicate += 1;
            return;
        }
        if self.regs.agg_state[i] == agg_state::FREE {
            self.active += 1;
            self.regs.agg_state[i] = agg_state::ACTIVE;
            self.regs.agg_tag[i] = t;
            self.regs.agg_gen[i] = g;
        }
        let sat = sgnn_wire::codec::accumulate(&mut self.regs.agg_values[i], lanes);
        self.counters.saturated += (sat > 0) as u64;
        self.regs.agg_count[i] = self.regs.agg_count[i].wrapping_add(match weigh {
            Weigh::Count => s.count,
            Weigh::One | Weigh::OneUp => 1,
        });
        self.regs.agg_ids[i] = self.regs.agg_ids[i].wrapping_add(s.src_id);
        self.regs.agg_ecn[i] |= s.flags.ecn as u8;
        self.counters.aggregated += 1;
        if self.regs.agg_count[i] >= p.expected {
            let up = weigh == Weigh::OneUp;
            // A leaf's share goes up as a partial: a Data frame (unsequenced) whose count is
            // the contributions it holds, named for the spine's table by `dst_id`.
            let mut r = Repr::new(if up {
                PacketType::Data
            } else {
                PacketType::Result
            });
            r.worker_id = p.dst_worker;
            r.src_id = if up { p.dst_id } else { s.src_id };
            r.dst_id = if up { 0 } else { p.dst_id };
            r.block_id = s.block_id;
            r.count = self.regs.agg_count[i];
            r.round = s.round;
            r.segment = s.segment;
            r.frac_bits = s.frac_bits;
            r.flags.ecn = self.regs.agg_ecn[i] != 0;
            let sum = self.regs.agg_values[i];
            if seq_of(s.dst_id).is_some() {
                // Completed by a sequenced frame: kept for a pull until the aggregator is
                // reused.
                self.active -= 1;
                self.regs.agg_state[i] = agg_state::DONE;
            } else {
                self.release(i, agg_state::FREE, 0, 0);
            }
            // On a leaf, a partial sent up counts too: its share of the aggregate is complete.
            self.counters.results += 1;
            self.send_to_worker(p.dst_worker, r, Some(&sum), repr.ip.dscp, out);
        }
    }

    fn release(&mut self, i: usize, state: u8, t: u32, g: u16) {
        if self.regs.agg_state[i] == agg_state::ACTIVE {
            self.active -= 1;
        }
        self.regs.agg_values[i] = [0; LANES];
        self.regs.agg_count[i] = 0;
        self.regs.agg_ids[i] = 0;
        self.regs.agg_ecn[i] = 0;
        self.regs.agg_state[i] = state;
        self.regs.agg_tag[i] = t;
        self.regs.agg_gen[i] = g;
    }

    /// Whether `port_worker` maps `ingress` to `worker`: the worker's own port.
    fn on_its_port(&self, ingress: PortId, worker: u16) -> bool {
        self.tables.port_worker.get(&ingress) == Some(&PortEnd::Worker(worker))
    }

    /// Whether `port_worker` makes `ingress` a link cabled to another switch.
    fn on_link(&self, ingress: PortId) -> bool {
        matches!(
            self.tables.port_worker.get(&ingress),
            Some(PortEnd::Link(_))
        )
    }

    /// One access to worker `w`'s `seq_next` and `seq_gap` for number `n` (a Data frame's, or
    /// a tail probe's next number); see `sgnn_switch::recovery::seq_step`.
    fn seq_access(&mut self, w: u16, n: u16, probe: bool) -> SeqOutcome {
        let w = w as usize;
        if w >= MAX_WORKERS {
            return SeqOutcome::InOrder;
        }
        let (next, gap, o) = seq_step(self.regs.seq_next[w], self.regs.seq_gap[w], n, probe);
        self.regs.seq_next[w] = next;
        self.regs.seq_gap[w] = gap;
        o
    }

    /// The NACK frame to the worker `cause` came from (a Data frame after a gap, or a tail
    /// probe): an Ack with RESEND (`sgnn_switch::recovery`).
    fn send_nack(&mut self, cause: &FrameRepr, k: Nack, out: &mut Vec<Emitted>) {
        let c = cause.sgnn;
        let mut a = Repr::new(PacketType::Ack);
        a.flags.resend = true;
        a.worker_id = c.worker_id;
        a.src_id = k.range;
        a.dst_id = k.prev;
        a.block_id = c.block_id;
        a.round = c.round;
        a.count = k.gaps;
        a.segment = k.next;
        self.counters.nacked += k.new_gap as u64;
        self.send_to_worker(c.worker_id, a, None, cause.ip.dscp, out);
    }

    /// A worker's tail probe: from its own port only; always answered with a NACK frame.
    fn seq_probe(&mut self, ingress: PortId, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        if !self.on_its_port(ingress, s.worker_id) {
            self.counters.drop_wrong_port += 1;
            return;
        }
        if s.worker_id as usize >= MAX_WORKERS {
            self.counters.drop_unknown_worker += 1;
            return;
        }
        self.counters.seq_probed += 1;
        let n = s.src_id as u16;
        let o = self.seq_access(s.worker_id, n, true);
        let current = (s.round, s.block_id) == (self.regs.sync_round, self.regs.sync_block);
        // A leaf's count would cover its own workers only, and its notice would tell them
        // that contributions still on their way from other leaves were lost: a leaf counts
        // nothing and sends no notice (its workers pull after the fetch timeout).
        let leaf = matches!(self.config.role, FabricRole::Leaf { .. });
        if current && !leaf && probe_clean(n, s.count, o) {
            let w = s.worker_id as usize;
            let (done, count, sent) = sent_step(
                self.regs.sent_done[w],
                self.regs.sent_count,
                s.round,
                s.block_id,
                self.config.workers,
            );
            self.regs.sent_done[w] = done;
            self.regs.sent_count = count;
            if sent == SentOutcome::AllSent {
                self.all_sent(&repr, out);
                return;
            }
        }
        if let SeqOutcome::Nack(k) = o {
            self.send_nack(&repr, k, out);
        }
    }

    /// The replicas of the advance group (every worker), which BlockAdvance and the all-sent
    /// notice go to.
    fn advance_replicas(&self) -> Vec<Replica> {
        self.tables
            .multicast_groups
            .get(&ADVANCE_GROUP)
            .cloned()
            .unwrap_or_default()
    }

    /// The probe that completed the count becomes the all-sent notice: one replica per
    /// worker of the advance group, rewritten in egress for worker `rid`
    /// (`sgnn_switch::recovery`, "All sent").
    fn all_sent(&mut self, cause: &FrameRepr, out: &mut Vec<Emitted>) {
        self.counters.all_sent += 1;
        for r in self.advance_replicas() {
            let mut a = Repr::new(PacketType::Ack);
            a.worker_id = r.rid;
            a.dst_id = SEND_DONE;
            a.round = cause.sgnn.round;
            a.block_id = cause.sgnn.block_id;
            self.egress_to_worker(r.port, r.rid, a, None, cause.ip.dscp, out);
        }
    }

    /// A pull: a FetchReq to the switch's own address for the row `agg_table[(block, src,
    /// pass)]` feeds, segment `segment`. Answered to the row's destination worker with a
    /// Result carrying RESEND: what the aggregator holds for this round, block and generation
    /// (a kept complete aggregate, or a partial: its sum, `count` and contributor digest in
    /// `src_id`), nothing (`count` 0, `src_id` 0), or `src_id` `PULL_GONE` when another
    /// generation holds it or a RESEND released it.
    fn pull(&mut self, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        if (s.round, s.block_id) != (self.regs.sync_round, self.regs.sync_block) {
            self.counters.drop_stale += 1;
            return;
        }
        let action = self.tables.agg_table.get(&(s.block_id, s.src_id, s.pass));
        if matches!(self.config.role, FabricRole::Leaf { .. })
            && matches!(
                action,
                None | Some(AggAction::Up(_)) | Some(AggAction::Partials(_))
            )
        {
            // On a leaf, an aggregate that is not this leaf's own (its row lives on a spine,
            // or here only as the leaf's share) cannot be read: the requester is told it is
            // gone and takes its sources' raw values.
            let gone = (0, PULL_GONE, [0; LANES]);
            self.answer_pull(&repr, s.worker_id, s.dst_id, gone, out);
            return;
        }
        let Some(&action) = action else {
            self.counters.drop_no_entry += 1;
            return;
        };
        let AggAction::Aggregate(p) = action else {
            self.counters.drop_unexpected += 1;
            return;
        };
        let idx = p.agg_base as u64 + s.segment as u64;
        if idx >= self.config.aggregators as u64 {
            self.counters.drop_bad_index += 1;
            return;
        }
        let i = idx as usize;
        let state = self.regs.agg_state[i];
        let ours = state != agg_state::FREE && self.regs.agg_tag[i] == tag(s.round, s.block_id);
        let gen = self.regs.agg_gen[i];
        let (count, ids, lanes) = if ours
            && gen == p.generation
            && (state == agg_state::ACTIVE || state == agg_state::DONE)
        {
            (
                self.regs.agg_count[i],
                self.regs.agg_ids[i],
                self.regs.agg_values[i],
            )
        } else if ours
            && (gen > p.generation || (gen == p.generation && state == agg_state::BYPASSED))
        {
            (0, PULL_GONE, [0; LANES])
        } else {
            (0, 0, [0; LANES])
        };
        self.answer_pull(&repr, p.dst_worker, p.dst_id, (count, ids, lanes), out);
    }

    /// The answer to `pull`: a Result with RESEND for `dst_id` to `worker` (the row's
    /// destination worker, or on a leaf the requester), carrying `count`, the contributor
    /// digest (or `PULL_GONE`) in `src_id`, and the sum.
    fn answer_pull(
        &mut self,
        pull: &FrameRepr,
        worker: u16,
        dst_id: u32,
        (count, ids, lanes): (u16, u32, [i32; LANES]),
        out: &mut Vec<Emitted>,
    ) {
        let s = pull.sgnn;
        let mut r = Repr::new(PacketType::Result);
        r.flags.resend = true;
        r.worker_id = worker;
        r.src_id = ids;
        r.dst_id = dst_id;
        r.block_id = s.block_id;
        r.count = count;
        r.round = s.round;
        r.segment = s.segment;
        r.frac_bits = s.frac_bits;
        self.counters.pulled += 1;
        self.send_to_worker(worker, r, Some(&lanes), pull.ip.dscp, out);
    }

    fn block_done(&mut self, ingress: PortId, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        // port_worker first: only the sender on the ingress port (its worker, or the switch
        // at the other end of its link: a spine's leaf) may report for itself.
        if self.tables.port_worker.get(&ingress).map(|e| e.sender()) != Some(s.worker_id) {
            self.counters.drop_wrong_port += 1;
            return;
        }
        let w = s.worker_id.wrapping_sub(self.config.role.sync_base()) as usize;
        if w >= self.regs.sync_done.len() {
            self.counters.drop_unknown_worker += 1;
            return;
        }
        let cur = (self.regs.sync_round, self.regs.sync_block);
        let advance = |round: u16, block: u16| {
            let mut a = Repr::new(PacketType::BlockAdvance);
            a.round = round;
            a.block_id = block;
            a
        };
        if (s.round, s.block_id) < cur {
            // A worker that lost the advance asks again: answer it alone.
            self.counters.block_done_stale += 1;
            let mut a = advance(s.round, s.block_id);
            a.worker_id = s.worker_id;
            self.send_to_worker(s.worker_id, a, None, repr.ip.dscp, out);
            return;
        }
        if (s.round, s.block_id) > cur {
            self.counters.drop_stale += 1;
            return;
        }
        if self.regs.sync_done[w] {
            self.counters.block_done_duplicate += 1;
            // A worker asks again for an advance it has not seen. A leaf whose workers are
            // all in has sent its BlockDone up: that, or the root's advance, was lost. It
            // sends it up again; the root answers a block it has passed with its advance.
            if self.all_in() {
                self.report_up(cur, repr.ip.dscp, out);
            }
            return;
        }
        self.regs.sync_done[w] = true;
        self.regs.sync_count += 1;
        self.counters.block_done += 1;
        if self.all_in() && !self.report_up(cur, repr.ip.dscp, out) {
            self.advance(repr.ip.dscp, out);
        }
    }

    /// Every worker (on a spine, every leaf) has reported the current block.
    fn all_in(&self) -> bool {
        self.regs.sync_count as usize == self.regs.sync_done.len()
    }

    /// On a leaf: BlockDone for `cur` up to the root spine, as the leaf's peer id there (it
    /// then waits for the root's advance). Whether this switch is a leaf.
    fn report_up(&mut self, cur: (u16, u16), dscp: u8, out: &mut Vec<Emitted>) -> bool {
        let FabricRole::Leaf { id, root, .. } = self.config.role else {
            return false;
        };
        let mut d = Repr::new(PacketType::BlockDone);
        d.worker_id = id;
        d.round = cur.0;
        d.block_id = cur.1;
        self.send_to_worker(root, d, None, dscp, out);
        true
    }

    /// The root spine's BlockAdvance reaches a leaf: for the leaf's current block it advances
    /// as a star's switch does when its last worker is done.
    fn root_advance(&mut self, repr: FrameRepr, out: &mut Vec<Emitted>) {
        let s = repr.sgnn;
        if (s.round, s.block_id) != (self.regs.sync_round, self.regs.sync_block) {
            self.counters.drop_stale += 1;
            return;
        }
        self.advance(repr.ip.dscp, out);
    }

    /// Advances to the next block: BlockAdvance for the current one to every replica of the
    /// advance group.
    fn advance(&mut self, dscp: u8, out: &mut Vec<Emitted>) {
        let cur = (self.regs.sync_round, self.regs.sync_block);
        let base = self.config.role.sync_base();
        self.counters.block_advance += 1;
        // Multicast: one replica per worker, rewritten in egress for worker `rid`, whose
        // egress also clears `sync_done[rid]` (one pass cannot clear every cell).
        for r in self.advance_replicas() {
            if let Some(d) = self
                .regs
                .sync_done
                .get_mut(r.rid.wrapping_sub(base) as usize)
            {
                *d = false;
            }
            let mut a = Repr::new(PacketType::BlockAdvance);
            a.round = cur.0;
            a.block_id = cur.1;
            a.worker_id = r.rid;
            self.egress_to_worker(r.port, r.rid, a, None, dscp, out);
        }
        self.regs.sync_count = 0;
        self.regs.sync_block += 1;
        if self.regs.sync_block >= self.config.blocks_per_round {
            self.regs.sync_block = 0;
            self.regs.sync_round = self.regs.sync_round.wrapping_add(1);
        }
    }
}
