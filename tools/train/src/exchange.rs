//! The one graph operation the models need: the sum over each vertex's neighbours,
//! `S(X)[v] = sum over u in N(v) of X[u]` (unweighted, no self loop). It is the operation the
//! SwitchGNN daemon performs (local neighbours on the host, remote ones through the switch or
//! the host-based baseline), so a model written against [`Exchange`] trains in one process or
//! across workers unchanged. `S` is symmetric on an undirected graph, so the backward pass of
//! `Y = S(X)` is `dX = S(dY)`: the same exchange on the gradients.

use ndarray::{Array2, ArrayView2};
use sprs::{CsMat, TriMat};

use crate::{ShapeMismatch, TrainError};

/// One neighbour-sum exchange per call, in the same order on every worker.
pub trait Exchange {
    /// `S(x)` for this worker's rows: `x` has one row per local vertex, the result too.
    /// `layer` and `backward` name the exchange (they must agree across workers).
    fn neighbour_sum(
        &mut self,
        layer: u32,
        backward: bool,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>, TrainError>;

    /// Bytes this exchange put on links so far (0 in one process).
    fn bytes_on_links(&self) -> u64 {
        0
    }
}

/// The whole graph in one process: a sparse CSR product (sprs, multi-threaded).
pub struct LocalExchange {
    adj: CsMat<f32>,
}

impl LocalExchange {
    /// The adjacency of `g` (both directions of every undirected edge).
    pub fn new(g: &sgnn_graph::Csr) -> LocalExchange {
        let n = g.num_vertices();
        let mut t = TriMat::new((n, n));
        for v in 0..n as u32 {
            for &u in g.neighbors(v) {
                t.add_triplet(v as usize, u as usize, 1.0f32);
            }
        }
        LocalExchange { adj: t.to_csr() }
    }
}

impl Exchange for LocalExchange {
    fn neighbour_sum(
        &mut self,
        _layer: u32,
        _backward: bool,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>, TrainError> {
        if x.nrows() != self.adj.rows() {
            return Err(ShapeMismatch::NeighbourSum {
                rows: x.nrows(),
                vertices: self.adj.rows(),
            }
            .into());
        }
        Ok(&self.adj * &x)
    }
}
