//! What both runtime fuzz targets share: two small plans (the paper's and `auto`, planned once
//! per process) and frames built from fuzzer-chosen header fields, valid enough to reach the
//! logic behind the parser, optionally with one byte flipped.

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use sgnn_plan::Plan;
use sgnn_wire::addressing::{worker_ip, worker_mac, SWITCH_IP, SWITCH_MAC};
use sgnn_wire::recovery;
use sgnn_wire::sgnn::{Flags, Repr};
use sgnn_wire::{ethernet, ipv4, FrameRepr, PacketType, LANES};

/// The plans: 3 workers, a 512-vertex R-MAT graph, 64 values per vertex (2 segments), 8 KB
/// of aggregators (several blocks); `[paper, auto]`.
pub fn plans() -> &'static [Plan; 2] {
    static PLANS: OnceLock<[Plan; 2]> = OnceLock::new();
    PLANS.get_or_init(|| {
        let g = sgnn_graph::load_graph("rmat:scale=9,edge_factor=6,seed=7").expect("graph");
        let req = sgnn_planner::planner::PlanRequest {
            config: sgnn_plan::PlanConfig {
                workers: 3,
                partitioner: sgnn_plan::Partitioner::Chunk,
                switch_mem_bytes: 8_000,
                agg_bytes: 128,
                feature_dim: 64,
                order: sgnn_plan::SendOrder::Gamr,
                seed: 1,
                max_passes: 256,
                leaves: 1,
                aggregate: sgnn_plan::AggregateMode::Paper,
                recycle_slack: None,
            },
            graph_source: "rmat".into(),
            max_abs_value: 8.0,
        };
        let (paper, mut report) =
            sgnn_planner::planner::make_plan(g.csr, g.stats, &req, &mut |_| {}).expect("plan");
        let prof = sgnn_plan::profile::SwitchProfile::named("default").expect("profile");
        let auto = sgnn_planner::planner::apply_delivery(
            paper.clone(),
            &mut report,
            sgnn_plan::AggregateMode::Auto,
            &prof,
        )
        .expect("auto plan");
        [paper, auto]
    })
}

/// One frame's header fields, each reduced into a range near the plan's so most frames
/// reach the tables, plus an optional one-byte corruption.
#[derive(Debug, Arbitrary)]
pub struct Op {
    pub port: u8,
    pub kind: u8,
    pub worker: u16,
    pub src: u32,
    pub dst: u32,
    pub block: u16,
    pub round: u8,
    pub segment: u8,
    pub pass: u8,
    pub flags: u8,
    pub count: u16,
    pub lane: i32,
    pub frac_bits: u8,
    pub flip: Option<(u16, u8)>,
    /// Virtual time that passes before this frame (engine target), in 64 us steps.
    #[allow(dead_code)]
    pub wait: u8,
}

impl Op {
    /// The frame, from worker `from` (or the switch when `from` is `None`) to `to_ip`.
    pub fn frame(&self, plan: &Plan, from: Option<u16>, to_ip: [u8; 4]) -> Option<Vec<u8>> {
        let n = plan.graph.num_vertices() as u32 + plan.partials.len() as u32;
        let workers = plan.workers() as u16;
        let kind = match self.kind % 7 {
            0 => PacketType::Data,
            1 => PacketType::Result,
            2 => PacketType::Ack,
            3 => PacketType::FetchReq,
            4 => PacketType::Bypass,
            5 => PacketType::BlockDone,
            _ => PacketType::BlockAdvance,
        };
        let pick = |x: u32, m: u32| if x & 0x8000_0000 != 0 { x } else { x % m.max(1) };
        let mut s = Repr::new(kind);
        s.flags = Flags {
            ack: kind == PacketType::Ack,
            fetch: kind == PacketType::FetchReq,
            ecn: self.flags & 1 != 0,
            resend: self.flags & 2 != 0,
        };
        s.worker_id = if self.worker & 0x8000 != 0 {
            self.worker
        } else {
            self.worker % (workers + 1)
        };
        s.src_id = pick(self.src, n + 2);
        // Loss recovery's code points (sgnn_wire::recovery) too: numbered Data frames with
        // numbers near the start (in order, gaps and late ones), tail probes, send-done
        // notices; a NACK (an Ack with RESEND) names a range of such numbers.
        s.dst_id = match self.dst % 8 {
            0 => u32::MAX,
            1 => u32::MAX - 1,
            2 => recovery::SEQ_PROBE,
            3 => recovery::SEND_DONE,
            4 | 5 => recovery::SEQ_VALID | ((self.dst >> 3) % 64),
            _ => pick(self.dst, n + 2),
        };
        if kind == PacketType::Ack && s.flags.resend {
            s.src_id = ((self.src >> 8) % 64) << 16 | (self.src % 64);
        }
        s.block_id = self.block % (plan.blocks.len() as u16 + 2);
        s.round = self.round as u16 % 3;
        s.segment = self.segment as u16 % 3;
        s.pass = self.pass % 4;
        s.count = self.count % 40;
        s.frac_bits = if self.frac_bits & 0x80 != 0 {
            self.frac_bits
        } else {
            plan.manifest.frac_bits
        };
        let (src_mac, src_ip) = match from {
            Some(w) => (worker_mac(w), worker_ip(w)),
            None => (SWITCH_MAC, SWITCH_IP),
        };
        let repr = FrameRepr {
            eth: ethernet::Repr {
                dst: SWITCH_MAC,
                src: src_mac,
                ethertype: ethernet::ETHERTYPE_IPV4,
            },
            ip: ipv4::Repr {
                src: src_ip,
                dst: to_ip,
                ttl: 64,
                ..Default::default()
            },
            sgnn: s,
        };
        let lanes = [self.lane; LANES];
        let mut buf = vec![0u8; repr.frame_len()];
        // Lanes for the types that carry them (emit refuses a mismatch); a header emit refuses
        // (inconsistent fields) is not a frame.
        let l = kind.has_lanes().then_some(&lanes);
        repr.emit(l, &mut buf).ok()?;
        if let Some((at, x)) = self.flip {
            let i = at as usize % buf.len();
            buf[i] ^= x;
        }
        Some(buf)
    }
}
