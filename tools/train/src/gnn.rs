//! GCN (Kipf and Welling: symmetric normalisation with self loops) and GraphSAGE-mean, any
//! number of layers, with forward and backward passes written by hand against
//! [`Exchange`]'s neighbour sum (`docs/training.md` derives them).
//!
//! With `S` the neighbour sum, `d` the degree and `c = (d + 1)^-1/2`:
//! - GCN layer: `Z = H W`, `Y = c * (S(c * Z) + c * Z) + b` (that is `Â Z + b`,
//!   `Â = D̃^-1/2 (A + I) D̃^-1/2`); backward `dZ = c * (S(c * dY) + c * dY)`, `dW = Hᵀ dZ`,
//!   `dH = dZ Wᵀ`. Multiplying by `W` first means the exchange carries `out` values per
//!   vertex, not `in` (16 instead of 1,433 on cora's first layer).
//! - SAGE-mean layer: `Y = H Ws + S(H Wn) / d + b` (0 for isolated vertices); backward
//!   `dWs = Hᵀ dY`, `dZn = S(dY / d)`, `dWn = Hᵀ dZn`, `dH = dY Wsᵀ + dZn Wnᵀ`.
//! - ReLU between layers, dropout on every layer's input (training only), softmax
//!   cross-entropy over the training vertices at the end.
//!
//! Every row-wise quantity (features, degrees, labels) is per local vertex, so the same code
//! runs on one worker's rows with a distributed [`Exchange`].

use ndarray::{Array1, Array2, ArrayView2, Axis, Zip};
use rand::{Rng, SeedableRng};
use sprs::CsMat;

use crate::exchange::Exchange;
use crate::{InputError, TrainError};

/// The model family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Graph convolutional network.
    Gcn,
    /// GraphSAGE with the mean aggregator.
    Sage,
}

impl ModelKind {
    /// Parses `gcn` or `sage`.
    pub fn parse(s: &str) -> Result<ModelKind, TrainError> {
        match s {
            "gcn" => Ok(ModelKind::Gcn),
            "sage" => Ok(ModelKind::Sage),
            _ => Err(InputError::UnknownModel { given: s.into() }.into()),
        }
    }
}

/// One layer's parameters (and, with the same shapes, its gradients).
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// `in x out`: GCN's weight, SAGE's self weight.
    pub w: Array2<f32>,
    /// `in x out`: SAGE's neighbour weight (empty for GCN).
    pub w_neigh: Array2<f32>,
    /// `out`.
    pub b: Array1<f32>,
}

impl Layer {
    fn zeros_like(&self) -> Layer {
        Layer {
            w: Array2::zeros(self.w.raw_dim()),
            w_neigh: Array2::zeros(self.w_neigh.raw_dim()),
            b: Array1::zeros(self.b.raw_dim()),
        }
    }

    /// Every parameter, flattened in a fixed order (for the gradient all-reduce and Adam).
    pub fn params_mut(&mut self) -> [&mut [f32]; 3] {
        [
            self.w.as_slice_mut().expect("standard layout"),
            self.w_neigh.as_slice_mut().expect("standard layout"),
            self.b.as_slice_mut().expect("standard layout"),
        ]
    }
}

/// A model: its kind and layers.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// GCN or SAGE.
    pub kind: ModelKind,
    /// Layers, input first.
    pub layers: Vec<Layer>,
}

/// Per local vertex: what the layers scale by.
#[derive(Debug, Clone)]
pub struct RowScales {
    /// `(d + 1)^-1/2` (GCN).
    pub gcn: Array1<f32>,
    /// `1 / d`, 0 for isolated vertices (SAGE).
    pub inv_deg: Array1<f32>,
}

impl RowScales {
    /// From the degrees (in the whole graph) of the local vertices.
    pub fn from_degrees(deg: &[u32]) -> RowScales {
        RowScales {
            gcn: deg.iter().map(|&d| 1.0 / ((d + 1) as f32).sqrt()).collect(),
            inv_deg: deg
                .iter()
                .map(|&d| if d == 0 { 0.0 } else { 1.0 / d as f32 })
                .collect(),
        }
    }
}

/// The first layer's input: dense, or sparse (bag-of-words features: cora's are 1.3% non-zero,
/// and a sparse product, and dropout of the non-zeros only, is 50 times cheaper).
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// Row-major `rows x dim`.
    Dense(ArrayView2<'a, f32>),
    /// CSR `rows x dim`.
    Sparse(&'a CsMat<f32>),
}

impl Input<'_> {
    /// Rows.
    pub fn rows(&self) -> usize {
        match self {
            Input::Dense(x) => x.nrows(),
            Input::Sparse(x) => x.rows(),
        }
    }

    /// Columns (feature length).
    pub fn cols(&self) -> usize {
        match self {
            Input::Dense(x) => x.ncols(),
            Input::Sparse(x) => x.cols(),
        }
    }
}

/// A layer's input as kept for the backward pass.
enum Held {
    Dense(Array2<f32>),
    Sparse(CsMat<f32>),
}

impl Held {
    fn dot(&self, w: &Array2<f32>) -> Array2<f32> {
        match self {
            Held::Dense(h) => h.dot(w),
            Held::Sparse(h) => h * w,
        }
    }

    /// `selfᵀ d`.
    fn t_dot(&self, d: &Array2<f32>) -> Array2<f32> {
        match self {
            Held::Dense(h) => row_major(h.t().dot(d)),
            Held::Sparse(h) => row_major(&h.transpose_view() * d),
        }
    }
}

/// What the backward pass needs from the forward pass, per layer.
pub struct Cache {
    /// Each layer's input after dropout.
    inputs: Vec<Held>,
    /// Each layer's dropout mask (scaled keep mask), if dropout was on.
    masks: Vec<Option<Array2<f32>>>,
    /// Each hidden layer's pre-activation (for the ReLU's gradient).
    pre: Vec<Array2<f32>>,
}

/// `a` in row-major layout (a product with a transposed operand may come out column-major;
/// parameters and gradients are flattened row-major).
fn row_major(a: Array2<f32>) -> Array2<f32> {
    if a.is_standard_layout() {
        a
    } else {
        a.as_standard_layout().into_owned()
    }
}

/// Scales each row `v` of `x` by `s[v]`.
fn scale_rows(x: &Array2<f32>, s: &Array1<f32>) -> Array2<f32> {
    x * &s.view().insert_axis(Axis(1))
}

impl Model {
    /// Glorot-uniform weights and zero biases, seeded: `dims = [in, hidden..., classes]`.
    pub fn new(kind: ModelKind, dims: &[usize], seed: u64) -> Model {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut glorot = |i: usize, o: usize| {
            let a = (6.0 / (i + o) as f32).sqrt();
            Array2::from_shape_fn((i, o), |_| rng.gen_range(-a..a))
        };
        let layers = dims
            .windows(2)
            .map(|w| Layer {
                w: glorot(w[0], w[1]),
                w_neigh: if kind == ModelKind::Sage {
                    glorot(w[0], w[1])
                } else {
                    Array2::zeros((0, 0))
                },
                b: Array1::zeros(w[1]),
            })
            .collect();
        Model { kind, layers }
    }

    /// Zero gradients of the same shapes.
    pub fn zeros_like(&self) -> Model {
        Model {
            kind: self.kind,
            layers: self.layers.iter().map(Layer::zeros_like).collect(),
        }
    }

    /// Number of parameters.
    pub fn num_params(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.w.len() + l.w_neigh.len() + l.b.len())
            .sum()
    }

    /// The logits of the local rows; `dropout = Some((p, seed))` in training.
    pub fn forward(
        &self,
        x: Input,
        scales: &RowScales,
        ex: &mut dyn Exchange,
        dropout: Option<(f32, u64)>,
    ) -> Result<(Array2<f32>, Cache), TrainError> {
        let mut cache = Cache {
            inputs: Vec::new(),
            masks: Vec::new(),
            pre: Vec::new(),
        };
        let mut next = match x {
            Input::Dense(x) => Held::Dense(x.to_owned()),
            Input::Sparse(x) => Held::Sparse(x.clone()),
        };
        let last = self.layers.len() - 1;
        for (l, layer) in self.layers.iter().enumerate() {
            let mut mask = None;
            if let Some((p, seed)) = dropout.filter(|d| d.0 > 0.0) {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (l as u64) << 48);
                let keep = 1.0 / (1.0 - p);
                let mut draw = move || if rng.gen::<f32>() < p { 0.0 } else { keep };
                match &mut next {
                    Held::Dense(h) => {
                        let m = Array2::from_shape_fn(h.raw_dim(), |_| draw());
                        *h *= &m;
                        mask = Some(m);
                    }
                    // Only the non-zeros can change; the first layer needs no input gradient.
                    Held::Sparse(h) => h.data_mut().iter_mut().for_each(|v| *v *= draw()),
                }
            }
            let h = &next;
            let y = match self.kind {
                ModelKind::Gcn => {
                    let z = h.dot(&layer.w);
                    let cz = scale_rows(&z, &scales.gcn);
                    let s = ex.neighbour_sum(l as u32, false, cz.view())?;
                    scale_rows(&(s + &cz), &scales.gcn) + &layer.b
                }
                ModelKind::Sage => {
                    let zn = h.dot(&layer.w_neigh);
                    let s = ex.neighbour_sum(l as u32, false, zn.view())?;
                    h.dot(&layer.w) + scale_rows(&s, &scales.inv_deg) + &layer.b
                }
            };
            cache.inputs.push(next);
            cache.masks.push(mask);
            if l < last {
                next = Held::Dense(y.mapv(|v| v.max(0.0)));
                cache.pre.push(y);
            } else {
                return Ok((y, cache));
            }
        }
        unreachable!("the last layer returns")
    }

    /// Gradients of every parameter given the gradient of the logits.
    pub fn backward(
        &self,
        cache: &Cache,
        dlogits: Array2<f32>,
        scales: &RowScales,
        ex: &mut dyn Exchange,
    ) -> Result<Model, TrainError> {
        let mut grads = self.zeros_like();
        let mut dy = dlogits;
        for l in (0..self.layers.len()).rev() {
            let layer = &self.layers[l];
            let h = &cache.inputs[l];
            let g = &mut grads.layers[l];
            g.b = dy.sum_axis(Axis(0));
            let dh = match self.kind {
                ModelKind::Gcn => {
                    let cd = scale_rows(&dy, &scales.gcn);
                    let s = ex.neighbour_sum(l as u32, true, cd.view())?;
                    let dz = scale_rows(&(s + &cd), &scales.gcn);
                    g.w = h.t_dot(&dz);
                    (l > 0).then(|| dz.dot(&layer.w.t()))
                }
                ModelKind::Sage => {
                    let sd = scale_rows(&dy, &scales.inv_deg);
                    let dzn = ex.neighbour_sum(l as u32, true, sd.view())?;
                    g.w = h.t_dot(&dy);
                    g.w_neigh = h.t_dot(&dzn);
                    (l > 0).then(|| dy.dot(&layer.w.t()) + dzn.dot(&layer.w_neigh.t()))
                }
            };
            if let Some(mut dh) = dh {
                if let Some(m) = &cache.masks[l] {
                    dh *= m;
                }
                // Through the previous layer's ReLU.
                Zip::from(&mut dh).and(&cache.pre[l - 1]).for_each(|d, &y| {
                    if y <= 0.0 {
                        *d = 0.0
                    }
                });
                dy = dh;
            }
        }
        Ok(grads)
    }
}

/// Softmax cross-entropy summed over the rows with `mask`, divided by `count` (the global
/// number of training vertices), and its gradient with respect to the logits.
pub fn cross_entropy(
    logits: &Array2<f32>,
    labels: &[i64],
    mask: &[bool],
    count: usize,
) -> (f64, Array2<f32>) {
    let mut grad = Array2::<f32>::zeros(logits.raw_dim());
    let mut loss = 0f64;
    let scale = 1.0 / count.max(1) as f32;
    for (v, row) in logits.outer_iter().enumerate() {
        if !mask[v] {
            continue;
        }
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exps: Vec<f32> = row.iter().map(|&z| (z - max).exp()).collect();
        let sum: f32 = exps.iter().sum();
        let y = labels[v] as usize;
        loss -= ((exps[y] / sum) as f64).ln();
        for (c, e) in exps.iter().enumerate() {
            grad[[v, c]] = (e / sum - if c == y { 1.0 } else { 0.0 }) * scale;
        }
    }
    (loss / count.max(1) as f64, grad)
}

/// Correct predictions and masked rows (argmax of the logits against the labels).
pub fn correct(logits: &Array2<f32>, labels: &[i64], mask: &[bool]) -> (u64, u64) {
    let (mut ok, mut n) = (0, 0);
    for (v, row) in logits.outer_iter().enumerate() {
        if !mask[v] {
            continue;
        }
        n += 1;
        let best = row
            .iter()
            .enumerate()
            .fold(
                (0, f32::NEG_INFINITY),
                |b, (i, &x)| if x > b.1 { (i, x) } else { b },
            )
            .0;
        if best as i64 == labels[v] {
            ok += 1;
        }
    }
    (ok, n)
}

/// Adam (Kingma and Ba) over every parameter of a model.
#[derive(Debug, Clone)]
pub struct Adam {
    /// Learning rate.
    pub lr: f32,
    m: Model,
    v: Model,
    t: i32,
}

impl Adam {
    /// Zero moments for `model`'s shapes.
    pub fn new(model: &Model, lr: f32) -> Adam {
        Adam {
            lr,
            m: model.zeros_like(),
            v: model.zeros_like(),
            t: 0,
        }
    }

    /// One step with gradients `g` (beta1 0.9, beta2 0.999, eps 1e-8).
    pub fn step(&mut self, model: &mut Model, g: &mut Model) {
        let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
        self.t += 1;
        let c1 = 1.0 - b1.powi(self.t);
        let c2 = 1.0 - b2.powi(self.t);
        for l in 0..model.layers.len() {
            let ps = model.layers[l].params_mut();
            let gs = g.layers[l].params_mut();
            let ms = self.m.layers[l].params_mut();
            let vs = self.v.layers[l].params_mut();
            for (((p, g), m), v) in ps.into_iter().zip(gs).zip(ms).zip(vs) {
                for i in 0..p.len() {
                    m[i] = b1 * m[i] + (1.0 - b1) * g[i];
                    v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
                    p[i] -= self.lr * (m[i] / c1) / ((v[i] / c2).sqrt() + eps);
                }
            }
        }
    }
}
