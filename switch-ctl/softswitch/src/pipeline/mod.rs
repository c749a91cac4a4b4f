//! One pass of the SwitchGNN pipeline per call, with recirculation, as the P4 program does it
//! (`p4/v1model/switchgnn.p4`, whose ingress applies the controls in the order
//! [`Pipeline::ingress`] calls them here).
//!
//! One file per control, named as its P4 file in `p4/v1model/` and its module of the switch
//! contract (`sgnn_switch`): `switch_config` and `config` (settings and
//! sizes), `counters`, `parser`, `drop_simulator`, `admission`, `aggregation`, `recovery`,
//! `block_sync`, `forwarding`, `priority`, `ecn`. This file holds the [`Pipeline`], its
//! registers and the per-frame order of the controls; `shards` runs it over several threads
//! (a front and aggregator shards, [`shards::Shards`]).
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

mod admission;
mod aggregation;
mod block_sync;
mod config;
mod counters;
mod drop_simulator;
mod ecn;
mod forwarding;
mod parser;
mod priority;
mod recovery;
pub mod shards;
mod switch_config;

use rand::SeedableRng;
use sgnn_wire::frame::{Frame, FrameRepr};
use sgnn_wire::{PacketType, LANES};

use sgnn_switch::recovery::SeqOutcome;
use sgnn_wire::recovery::{seq_of, SEQ_PROBE};

use crate::tables::{PortId, Tables};
use parser::Ipv4;

use config::MAX_WORKERS;
pub use config::{PORTS, SEEN_CELLS};
pub use counters::{Counters, PortCount};
pub use sgnn_switch::aggregation::agg_state;
pub use sgnn_switch::aggregation::SEEN_VALID;
pub use switch_config::{FabricRole, SwitchConfig};

/// The register arrays.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Some on the front of [`shards::Shards`]: the passes and pulls that reach an
    /// aggregator are kept here for the shard that owns it instead of being applied.
    deferred: Option<Vec<shards::Deferred>>,
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
            queue_depth: Vec::new(),
            host_ports: None,
            active: 0,
            rng,
            deferred: None,
        }
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
        match self.parse_ipv4(frame) {
            Ipv4::Dropped => return None,
            Ipv4::Other { dst, dscp } => {
                self.forward(dst, dscp, frame.to_vec(), out);
                return None;
            }
            Ipv4::SwitchGnn => {}
        }
        if self.drop_simulated() {
            self.counters.drop_simulated += 1;
            return None;
        }
        let (repr, lanes) = self.parse_sgnn(frame)?;
        // Whose port, whose address, whose job (admission.p4), before any control acts.
        if !self.admitted(ingress, &repr) {
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
                let mut f = Frame::new_unchecked(frame.to_vec());
                let mut p = f.sgnn_mut();
                p.set_src_id(self.config.plan_tag);
                p.set_round(self.regs.sync_round);
                p.set_block_id(self.regs.sync_block);
                p.set_job(self.config.job);
                self.forward(repr.ip.dst, repr.ip.dscp, f.into_inner(), out)
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
                if self.on_root_link(ingress) {
                    self.root_advance(repr, out);
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
}
