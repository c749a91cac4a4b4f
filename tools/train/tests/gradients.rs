//! The hand-written backward passes against central finite differences, for every layer type
//! and for deep and shallow models, through the real neighbour-sum exchange.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use sgnn_graph::Csr;
use sgnn_train::exchange::LocalExchange;
use sgnn_train::gnn::{cross_entropy, Input, Model, ModelKind, RowScales};

fn graph(n: usize, seed: u64) -> Csr {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let edges: Vec<(u32, u32)> = (0..3 * n)
        .map(|_| (rng.gen_range(0..n as u32), rng.gen_range(0..n as u32)))
        .filter(|(a, b)| a != b)
        .collect();
    Csr::from_edges(n, &edges).0
}

/// The loss of `model` on the graph (no dropout), as f64.
fn loss(
    model: &Model,
    x: &Array2<f32>,
    scales: &RowScales,
    ex: &mut LocalExchange,
    labels: &[i64],
    mask: &[bool],
) -> f64 {
    let (logits, _) = model
        .forward(Input::Dense(x.view()), scales, ex, None)
        .unwrap();
    cross_entropy(&logits, labels, mask, mask.iter().filter(|&&m| m).count()).0
}

fn check(kind: ModelKind, dims: &[usize]) {
    let n = 30;
    let g = graph(n, 5);
    let deg: Vec<u32> = (0..n as u32).map(|v| g.degree(v) as u32).collect();
    let scales = RowScales::from_degrees(&deg);
    let mut ex = LocalExchange::new(&g);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let x = Array2::from_shape_fn((n, dims[0]), |_| rng.gen_range(-1.0f32..1.0));
    let classes = *dims.last().unwrap();
    let labels: Vec<i64> = (0..n).map(|v| (v % classes) as i64).collect();
    let mask: Vec<bool> = (0..n).map(|v| v % 3 != 0).collect();
    let model = Model::new(kind, dims, 3);
    let (logits, cache) = model
        .forward(Input::Dense(x.view()), &scales, &mut ex, None)
        .unwrap();
    let count = mask.iter().filter(|&&m| m).count();
    let (_, dlogits) = cross_entropy(&logits, &labels, &mask, count);
    let grads = model.backward(&cache, dlogits, &scales, &mut ex).unwrap();
    let eps = 1e-2f32;
    let mut checked = 0;
    for l in 0..model.layers.len() {
        for which in 0..3 {
            let len = match which {
                0 => model.layers[l].w.len(),
                1 => model.layers[l].w_neigh.len(),
                _ => model.layers[l].b.len(),
            };
            for i in (0..len).step_by(len.div_ceil(6).max(1)) {
                let mut plus = model.clone();
                let mut minus = model.clone();
                plus.layers[l].params_mut()[which][i] += eps;
                minus.layers[l].params_mut()[which][i] -= eps;
                let numeric = (loss(&plus, &x, &scales, &mut ex, &labels, &mask)
                    - loss(&minus, &x, &scales, &mut ex, &labels, &mask))
                    / (2.0 * eps as f64);
                let mut g = grads.clone();
                let analytic = g.layers[l].params_mut()[which][i] as f64;
                let err = (numeric - analytic).abs() / (numeric.abs() + analytic.abs()).max(1e-3);
                assert!(
                    err < 0.05,
                    "{kind:?} {dims:?} layer {l} param {which}[{i}]: numeric {numeric:.6} analytic {analytic:.6}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 6 * dims.len() - 6, "{checked}");
}

#[test]
fn gcn_gradients_match_finite_differences() {
    check(ModelKind::Gcn, &[5, 3]);
    check(ModelKind::Gcn, &[6, 4, 3]);
    check(ModelKind::Gcn, &[4, 5, 5, 3]);
}

#[test]
fn sage_gradients_match_finite_differences() {
    check(ModelKind::Sage, &[5, 3]);
    check(ModelKind::Sage, &[6, 4, 3]);
    check(ModelKind::Sage, &[4, 5, 5, 3]);
}
