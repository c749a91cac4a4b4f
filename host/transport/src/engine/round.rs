//! A round's data: the features encoded in and the local neighbours summed when it starts,
//! the sums decoded and its statistics recorded when it completes.

use std::collections::HashMap;

use sgnn_wire::codec::accumulate;
use sgnn_wire::LANES;

use super::{Direction, Engine, Layer, Phase};
use crate::class::TrafficClass;
use crate::error::BadInput;
use crate::stats::RoundStats;
use crate::TransportError;

/// A round's features and sums.
#[derive(Debug)]
pub(super) struct RoundData {
    pub(super) round: u16,
    pub(super) layer: Layer,
    pub(super) dim: usize,
    pub(super) segs: u16,
    /// Encoded features, `local * segs + g`.
    pub(super) enc: Vec<[i32; LANES]>,
    /// Sums, `local * segs + g`.
    pub(super) acc: Vec<[i32; LANES]>,
    /// Raw contributions of remote sources received this round, by `(source, segment)`.
    pub(super) raw: HashMap<(u32, u16), [i32; LANES]>,
    pub(super) started_at: u64,
    pub(super) sent_at_start: u64,
    pub(super) received_at_start: u64,
    pub(super) cells_by_result: u64,
    pub(super) cells_by_raw: u64,
}

impl Engine {
    /// Checks and encodes a round's features, sums the local neighbours and makes the round
    /// current (the previous one stays for peers' fetches); returns its segments per vertex.
    pub(super) fn begin_round(
        &mut self,
        now: u64,
        layer: Layer,
        dim: usize,
        features: &[f32],
    ) -> Result<usize, TransportError> {
        let view = self.view.clone();
        let segs = view.segments_for(dim)?;
        let n = view.num_local();
        if features.len() != n * dim {
            return Err(BadInput::FeatureCount {
                worker: view.worker,
                vertices: n,
                dim,
                got: features.len(),
            }
            .into());
        }
        let s = segs as usize;
        let mut enc = vec![[0i32; LANES]; n * s];
        let mut clamped = 0usize;
        for i in 0..n {
            let row = &features[i * dim..(i + 1) * dim];
            for g in 0..s {
                let lo = g * LANES;
                let hi = (lo + LANES).min(dim);
                clamped += view
                    .fixed
                    .encode(&row[lo..hi], &mut enc[i * s + g][..hi - lo]);
            }
        }
        self.stats.clamped_values += clamped as u64;
        // Local neighbours never use the network: sum them now.
        let mut acc = vec![[0i32; LANES]; n * s];
        let mut sat = 0usize;
        for i in 0..n {
            for &j in view.local_neighbors(i) {
                for g in 0..s {
                    let x = enc[j as usize * s + g];
                    sat += accumulate(&mut acc[i * s + g], &x);
                }
            }
        }
        self.stats.saturated_lanes += sat as u64;
        let sent = self.stats.sent.total().wire_bytes;
        let received = self.stats.received.total().wire_bytes;
        self.prev = self.cur.take();
        self.cur = Some(RoundData {
            round: self.round,
            layer,
            dim,
            segs,
            enc,
            acc,
            raw: HashMap::new(),
            started_at: now,
            sent_at_start: sent,
            received_at_start: received,
            cells_by_result: 0,
            cells_by_raw: 0,
        });
        Ok(s)
    }

    pub(super) fn complete_round(&mut self, now: u64) {
        let cur = self.cur.as_ref().expect("round running");
        let view = &self.view;
        let (n, s, dim) = (view.num_local(), cur.segs as usize, cur.dim);
        let mut sums = Vec::with_capacity(n * dim);
        for i in 0..n {
            for g in 0..s {
                let lo = g * LANES;
                let hi = (lo + LANES).min(dim);
                view.fixed
                    .decode_extend(&cur.acc[i * s + g][..hi - lo], &mut sums);
            }
        }
        debug_assert_eq!(sums.len(), n * dim);
        let st = RoundStats {
            round: cur.round,
            layer: cur.layer.index,
            direction: match cur.layer.direction {
                Direction::Forward => "forward".into(),
                Direction::Backward => "backward".into(),
            },
            dim,
            seconds: now.saturating_sub(cur.started_at) as f64 * 1e-9,
            sent_wire_bytes: self.stats.sent.total().wire_bytes - cur.sent_at_start,
            received_wire_bytes: self.stats.received.total().wire_bytes - cur.received_at_start,
            cells_by_result: cur.cells_by_result,
            cells_by_raw: cur.cells_by_raw,
        };
        self.stats.rounds.push(st);
        self.sums = Some(sums);
        self.round = self.round.wrapping_add(1);
        self.phase = Phase::Idle;
        // Leftover first transmissions of a finished exchange are never needed.
        self.queues[TrafficClass::Data.index()].clear();
    }

    pub(super) fn segs(&self) -> usize {
        self.cur.as_ref().map_or(0, |c| c.segs as usize)
    }

    pub(super) fn cur_round(&self) -> u16 {
        self.cur.as_ref().map_or(u16::MAX, |c| c.round)
    }
}
