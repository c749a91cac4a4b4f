//! What must hold in a run of the real code, checked by the harness as it goes:
//!
//! - after every pass of a Data frame through the switch: the pass counted the contribution
//!   (source, segment, pass, in its round and block) into an aggregator at most once, and no
//!   earlier pass counted it ([`Invariants::pass`]): an aggregator never counts a
//!   contribution twice;
//! - after every event: the switch's block synchronisation (`sync_round`, `sync_block`) and
//!   every engine's (round, block) never go back ([`Invariants::after_event`]);
//! - at the end of every layer: no aggregator busy with the block the switch is at
//!   ([`Invariants::end_of_layer`]);
//! - for every worker's sums, as they arrive: bit for bit the single-process reference
//!   (`sgnn_transport::reference`), and within the codec's error bound of the real sums
//!   ([`check_sums`]).
//!
//! A broken invariant is a [`Violation`]: the event number, the seed and what broke.

use std::collections::HashMap;

use sgnn_graph::Csr;
use sgnn_transport::Engine;
use sgnn_wire::codec::FixedPoint;
use softswitch::Pipeline;

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The event it broke at (counted from 1: frame deliveries and timer steps).
    pub event: u64,
    /// The run's seed.
    pub seed: u64,
    /// Virtual time, ns.
    pub now: u64,
    /// What broke.
    pub what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invariant broken at event {} (seed {}, {} ns): {}",
            self.event, self.seed, self.now, self.what
        )
    }
}

/// A contribution as the switch counts it: (round, block, source, segment, pass).
type Contribution = (u16, u16, u32, u16, u8);

/// The checkers' state for one run.
#[derive(Debug, Default)]
pub struct Invariants {
    /// Every contribution the switch counted, and the event that counted it.
    counted: HashMap<Contribution, u64>,
    /// The switch's (round, block) at the last event.
    sync: Option<(u16, u16)>,
    /// Each engine's (round, block) at the last event it was in a block.
    engines: Vec<Option<(u16, usize)>>,
}

impl Invariants {
    /// Forgets the switch's state (it was replaced: restarted, reloaded).
    pub fn switch_replaced(&mut self) {
        self.counted.clear();
        self.sync = None;
    }

    /// One pass of a Data frame (`round`, `block`, `src`, `segment`) through the switch, pass
    /// number `pass`, that grew its `aggregated` counter by `counted`.
    pub fn pass(
        &mut self,
        event: u64,
        (round, block, src, segment): (u16, u16, u32, u16),
        pass: u8,
        counted: u64,
    ) -> Result<(), String> {
        if counted == 0 {
            return Ok(());
        }
        if counted > 1 {
            return Err(format!(
                "one pass counted {counted} contributions: source {src} segment {segment} pass \
                 {pass} of round {round} block {block}"
            ));
        }
        let key = (round, block, src, segment, pass);
        if let Some(first) = self.counted.insert(key, event) {
            return Err(format!(
                "an aggregator counted source {src} segment {segment} pass {pass} of round \
                 {round} block {block} twice (first at event {first})"
            ));
        }
        Ok(())
    }

    /// After an event: the switch's and every engine's block synchronisation went forward or
    /// stayed.
    pub fn after_event(&mut self, switch: &Pipeline, engines: &[Engine]) -> Result<(), String> {
        let at = (switch.regs.sync_round, switch.regs.sync_block);
        if let Some(was) = self.sync {
            if at < was {
                return Err(format!(
                    "the switch went back from round {} block {} to round {} block {}",
                    was.0, was.1, at.0, at.1
                ));
            }
        }
        self.sync = Some(at);
        self.engines.resize(engines.len(), None);
        for (w, e) in engines.iter().enumerate() {
            let Some(b) = e.block() else { continue };
            let at = (e.round(), b);
            if let Some(was) = self.engines[w] {
                if at < was {
                    return Err(format!(
                        "worker {w} went back from round {} block {} to round {} block {}",
                        was.0, was.1, at.0, at.1
                    ));
                }
            }
            self.engines[w] = Some(at);
        }
        Ok(())
    }

    /// At the end of a layer (every worker holds its sums): no aggregator busy with the block
    /// the switch is at.
    pub fn end_of_layer(&self, switch: &Pipeline) -> Result<(), String> {
        let (busy, stale) = switch.aggregators_in_use();
        if busy > 0 {
            return Err(format!(
                "{busy} aggregators busy at the end of the layer ({stale} stale), round {} \
                 block {}",
                switch.regs.sync_round, switch.regs.sync_block
            ));
        }
        Ok(())
    }
}

/// The first of `vertices` whose sums in `got` (`dim` values each, in `vertices`' order)
/// differ from `want` (all vertices, row-major) in any bit.
pub fn first_wrong_sum(vertices: &[u32], got: &[f32], want: &[f32], dim: usize) -> Option<u32> {
    vertices.iter().enumerate().find_map(|(i, &v)| {
        let a = &got[i * dim..(i + 1) * dim];
        let b = &want[v as usize * dim..(v as usize + 1) * dim];
        a.iter()
            .zip(b)
            .any(|(p, q)| p.to_bits() != q.to_bits())
            .then_some(v)
    })
}

/// A worker's sums `got` for `vertices` (`dim` values each) against the layer's input `x`
/// (all vertices, row-major) and the reference sums `want`: within the codec's error bound
/// of the f64 sums of the real values (lanes where a neighbour's value was clamped apart:
/// those are compared bitwise only), and bit for bit the reference.
pub fn check_sums(
    graph: &Csr,
    fixed: FixedPoint,
    dim: usize,
    x: &[f32],
    want: &[f32],
    vertices: &[u32],
    got: &[f32],
) -> Result<(), String> {
    let clamp = fixed.limit as f64 / fixed.scale() as f64;
    for (i, &v) in vertices.iter().enumerate() {
        let nb = graph.neighbors(v);
        let bound = fixed.error_bound(nb.len() as u32) as f64;
        for k in 0..dim {
            let values = nb.iter().map(|&u| x[u as usize * dim + k] as f64);
            if values.clone().any(|a| a.abs() > clamp) {
                continue; // a clamped value: compared bitwise below
            }
            let exact: f64 = values.sum();
            let g = got[i * dim + k] as f64;
            if (g - exact).abs() > bound {
                return Err(format!(
                    "vertex {v} lane {k}: {g} vs {exact} (bound {bound})"
                ));
            }
        }
    }
    if let Some(v) = first_wrong_sum(vertices, got, want, dim) {
        let i = vertices.iter().position(|&u| u == v).expect("found");
        let k = (0..dim)
            .find(|&k| got[i * dim + k].to_bits() != want[v as usize * dim + k].to_bits())
            .expect("differs");
        return Err(format!(
            "vertex {v} value {k}: got {}, reference {}",
            got[i * dim + k],
            want[v as usize * dim + k]
        ));
    }
    Ok(())
}
