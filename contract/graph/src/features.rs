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
    /// Loads a `.npy` `[N, D]` array of float32, float64, uint8 or any integer type. Every
    /// value must be finite: a NaN or an infinity (also a float64 beyond float32's range) is
    /// a [`GraphError::NonFinite`] naming the file and the first bad index.
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
        // NaN or infinite values (in the file, or float64 values beyond float32's range) would
        // train to a NaN loss and sum to garbage: refused here, naming the first.
        if let Some(index) = data.iter().position(|x| !x.is_finite()) {
            let dim = a.shape[1].max(1);
            return Err(GraphError::NonFinite {
                path: path.to_path_buf(),
                row: index / dim,
                col: index % dim,
                index,
                value: data[index],
            });
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::write_npy;

    /// NaN and infinite values are refused at load, naming the file and the first bad index;
    /// a float64 beyond float32's range (infinite once converted) is too.
    #[test]
    fn non_finite_features_are_refused_naming_the_first_bad_index() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("features.npy");
        write_npy(
            &p,
            &[2, 3],
            &[0.5f32, 1.0, 2.0, -1.0, f32::NAN, f32::INFINITY],
        )
        .unwrap();
        let e = Features::load(&p).unwrap_err();
        assert!(
            matches!(&e, GraphError::NonFinite { path, row: 1, col: 1, index: 4, value }
                if path == &p && value.is_nan()),
            "{e:?}"
        );
        let m = e.to_string();
        assert!(m.contains("features.npy") && m.contains("[1, 1]"), "{m}");
        write_npy(&p, &[1, 2], &[f32::NEG_INFINITY, 0.0]).unwrap();
        assert!(matches!(
            Features::load(&p).unwrap_err(),
            GraphError::NonFinite { index: 0, .. }
        ));
        // float64 1e300 does not fit float32: infinite after conversion, refused.
        let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(h.len() as u16 + 1).to_le_bytes());
        bytes.extend_from_slice(h.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(&1.0f64.to_le_bytes());
        bytes.extend_from_slice(&1e300f64.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        assert!(matches!(
            Features::load(&p).unwrap_err(),
            GraphError::NonFinite { index: 1, .. }
        ));
        // Finite values load.
        write_npy(&p, &[1, 2], &[f32::MAX, -3.0]).unwrap();
        assert_eq!(Features::load(&p).unwrap().data, vec![f32::MAX, -3.0]);
    }
}
