//! Fixtures of the crate's unit tests: a profile, unlimited sizes, small and random graphs.

use sgnn_graph::Csr;
use sgnn_plan::profile::SwitchProfile;
use sgnn_wire::{wire_bytes, CONTROL_FRAME_LEN, DATA_FRAME_LEN};

use crate::choice::Choice;
use crate::cost::{evaluate, Sizes};
use crate::pair_index::PairIndex;
use rand::Rng;

pub(crate) fn prof() -> SwitchProfile {
    SwitchProfile::named("default").unwrap()
}

pub(crate) const BIG: Sizes = Sizes {
    segments: 1,
    aggregators: 1 << 20,
    recycle_slack: None,
    seen_cells: u64::MAX,
};

/// Worker 0 holds a hub 0 and leaves 1, 2; worker 1 holds 3, 4; worker 2 holds 5.
/// Cross edges: 0-3, 0-4, 0-5, 1-3, 2-3.
pub(crate) fn small() -> (Csr, Vec<u32>) {
    let edges = [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 3), (2, 3)];
    (Csr::from_edges(6, &edges).0, vec![0, 0, 0, 1, 1, 2])
}

pub(crate) fn load_of(idx: &PairIndex, part: &[u32], c: &Choice) -> (Vec<u64>, Vec<u64>, u64, u64) {
    let r = evaluate(idx, part, c, &prof(), BIG);
    let seg = wire_bytes(DATA_FRAME_LEN);
    let ctl = wire_bytes(CONTROL_FRAME_LEN) * r.prediction.blocks.saturating_sub(1);
    let f = |v: &Vec<u64>, c: u64| v.iter().map(|b| (b - c) / seg).collect::<Vec<_>>();
    (
        f(&r.traffic.per_worker_uplink, 0),
        f(&r.traffic.per_worker_downlink, ctl),
        r.prediction.recirc_passes,
        r.prediction.switch_destinations,
    )
}

/// `n` vertices and `edges` random draws of an edge (self-loops dropped), each vertex on
/// one of `parts` random workers, from `rng`.
pub(crate) fn random_graph(
    rng: &mut rand_chacha::ChaCha8Rng,
    n: usize,
    edges: usize,
    parts: u32,
) -> (Csr, Vec<u32>) {
    let edges: Vec<(u32, u32)> = (0..edges)
        .map(|_| (rng.gen_range(0..n as u32), rng.gen_range(0..n as u32)))
        .filter(|(a, b)| a != b)
        .collect();
    let g = Csr::from_edges(n, &edges).0;
    let part = (0..n).map(|_| rng.gen_range(0..parts)).collect();
    (g, part)
}
