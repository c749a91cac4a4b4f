//! [`run_layers`]: layers run one after another on a [`Cluster`], as the daemon's stand-alone
//! mode chains them (the next layer's input is the mean of this one's sums), every worker's
//! sums checked as they arrive ([`super::invariants::check_sums`]) and the switch checked at
//! the end of every layer.

use std::sync::Arc;

use sgnn_transport::engine::Layer;
use sgnn_transport::reference::{next_layer, reference_sums};
use sgnn_transport::{Stats, WorkerView};

use super::Cluster;

/// Feature of vertex `v`, lane `d`: a value in [-1, 1) from a hash of `(seed, v, d)`, so
/// every worker makes its own without a global array.
pub fn feature(seed: u64, v: u32, d: u32) -> f32 {
    let h = crate::hash::splitmix64(seed ^ crate::hash::splitmix64((v as u64) << 32 | d as u64));
    ((h >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

/// What [`run_layers`] checks besides the sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerCheck {
    /// No aggregator busy at the end of every layer ([`super::Invariants::end_of_layer`]).
    pub no_busy_aggregator: bool,
}

impl Default for LayerCheck {
    fn default() -> Self {
        LayerCheck {
            no_busy_aggregator: true,
        }
    }
}

/// Virtual time a layer may take, ns (then the run panics: nothing finished).
pub const LAYER_LIMIT_NS: u64 = 600_000_000_000;

/// Runs `rounds` forward layers on `cluster`, the first on `x` (`[N, dim]` row-major, all
/// vertices), and checks every worker's sums against the reference as they arrive; panics on
/// an engine error or a broken invariant. Returns the engines' stats.
pub fn run_layers(
    cluster: &mut Cluster,
    mut x: Vec<f32>,
    dim: usize,
    rounds: usize,
    check: LayerCheck,
) -> Vec<Stats> {
    let n = cluster.plan.graph.num_vertices();
    assert_eq!(x.len(), n * dim, "features must be [N, dim]");
    let views: Vec<Arc<WorkerView>> = cluster
        .engines
        .iter()
        .map(|e| Arc::new(e.view().clone()))
        .collect();
    let fixed = views[0].fixed;
    let degrees: Vec<u32> = (0..n as u32)
        .map(|v| cluster.plan.graph.degree(v) as u32)
        .collect();
    for r in 0..rounds {
        let want = reference_sums(&cluster.plan.graph, fixed, dim, &x);
        let layer = Layer::forward(r as u32);
        let now = cluster.now;
        if cluster.inject.as_ref().is_some_and(|(at, _)| *at == r) {
            for (to, f) in cluster.inject.take().expect("checked").1 {
                cluster.channel.inject(now, to, f);
            }
        }
        for (w, e) in cluster.engines.iter_mut().enumerate() {
            let local = views[w].local_rows(&x, dim);
            e.start_round(now, layer, dim, &local)
                .expect("a round starts");
        }
        let mut got: Vec<Option<Vec<f32>>> = vec![None; views.len()];
        let limit = cluster.now + LAYER_LIMIT_NS;
        cluster
            .run(limit, |c| {
                for w in 0..c.engines.len() {
                    let Some(g) = c.engines[w].take_sums() else {
                        continue;
                    };
                    let checked = super::invariants::check_sums(
                        &c.plan.graph,
                        fixed,
                        dim,
                        &x,
                        &want,
                        &views[w].local_vertices,
                        &g,
                    );
                    if let Err(what) = checked {
                        c.violated(format!("round {r}, worker {w}'s sums: {what}"));
                    }
                    got[w] = Some(g);
                }
                got.iter().all(|g| g.is_some())
            })
            .unwrap_or_else(|e| panic!("{e} (seed {})", cluster.seed()));
        if check.no_busy_aggregator {
            if let Err(what) = cluster.invariants.end_of_layer(&cluster.switch) {
                cluster.violated(format!("round {r}: {what}"));
            }
        }
        let mut sums = vec![0f32; n * dim];
        for (w, g) in got.into_iter().enumerate() {
            let g = g.expect("every worker's sums");
            for (i, &v) in views[w].local_vertices.iter().enumerate() {
                sums[v as usize * dim..(v as usize + 1) * dim]
                    .copy_from_slice(&g[i * dim..(i + 1) * dim]);
            }
        }
        x = next_layer(&sums, &degrees, dim);
    }
    cluster.engines.iter().map(|e| e.stats()).collect()
}
