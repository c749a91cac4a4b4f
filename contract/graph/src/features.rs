//! Vertex features: a row-major `[N, D]` matrix of f32.

use std::path::Path;

use rand::{Rng, SeedableRng};

use crate::error::GraphError;
use crate::npy::read_npy;

/// Features of every vertex, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    /// Rows.
    pub num_vertices: usize,
    /// Columns (feature dimension).
    pub dim: usize,
    /// `num_vertices * dim` values.
    pub data: Vec<f32>,
}

impl Features {
    /// Loads a `.npy` `[N, D]` array of float32, float64, uint8 or any integer type.
    pub fn load(path: &Path) -> Result<Features, GraphError> {
        let a = read_npy(path)?;
        if a.shape.len() != 2 {
            return Err(GraphError::npy(
                path,
                format!("features must have shape [N, D], found {:?}", a.shape),
            ));
        }
        let data = a.data.to_f32().ok_or_else(|| {
            GraphError::npy(path, "features must be numeric, found bool".to_string())
        })?;
        Ok(Features {
            num_vertices: a.shape[0],
            dim: a.shape[1],
            data,
        })
    }

    /// Uniform random features in `[-1, 1)`, for graphs that come without any.
    pub fn random(num_vertices: usize, dim: usize, seed: u64) -> Features {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        Features {
            num_vertices,
            dim,
            data: (0..num_vertices * dim)
                .map(|_| rng.gen_range(-1.0f32..1.0))
                .collect(),
        }
    }

    /// Features of vertex `v`.
    pub fn row(&self, v: usize) -> &[f32] {
        &self.data[v * self.dim..(v + 1) * self.dim]
    }
}
