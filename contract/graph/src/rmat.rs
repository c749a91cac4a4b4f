//! R-MAT power-law graphs (Chakrabarti et al.; Graph500 parameters by default).
//!
//! Each edge picks one quadrant of the adjacency matrix per level with probabilities a, b, c, d,
//! `scale` levels deep, so `n = 2^scale`. Vertex ids are then relabelled by a seeded random
//! permutation so high-degree vertices are not all at low ids (which would make `chunk`
//! partitioning and id-order sends artificially good or bad). Edges are generated on two threads
//! with independent seeded streams, so the result depends only on the spec.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::VertexId;

/// An R-MAT generator configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RmatSpec {
    /// log2 of the vertex count.
    pub scale: u32,
    /// Edges generated per vertex (before removing self-loops and duplicates).
    pub edge_factor: u32,
    /// Probability of the top-left quadrant.
    pub a: f64,
    /// Top-right.
    pub b: f64,
    /// Bottom-left.
    pub c: f64,
    /// Bottom-right.
    pub d: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for RmatSpec {
    fn default() -> Self {
        RmatSpec {
            scale: 14,
            edge_factor: 16,
            a: 0.57,
            b: 0.19,
            c: 0.19,
            d: 0.05,
            seed: 1,
        }
    }
}

impl RmatSpec {
    /// Number of vertices.
    pub fn num_vertices(&self) -> usize {
        1usize << self.scale
    }

    /// Generates the raw edges.
    pub fn generate(&self) -> Vec<(VertexId, VertexId)> {
        let n = self.num_vertices();
        let m = n * self.edge_factor as usize;
        let ab = self.a + self.b;
        let a_norm = self.a / ab;
        let c_norm = self.c / (self.c + self.d);
        let threads = 2usize;
        let per = m.div_ceil(threads);
        let mut parts: Vec<Vec<(u32, u32)>> = Vec::new();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let count = per.min(m.saturating_sub(t * per));
                    let seed = self.seed;
                    let scale = self.scale;
                    s.spawn(move || {
                        let mut rng = ChaCha8Rng::seed_from_u64(seed);
                        rng.set_stream(t as u64 + 1);
                        let mut out = Vec::with_capacity(count);
                        for _ in 0..count {
                            let (mut u, mut v) = (0u32, 0u32);
                            for _ in 0..scale {
                                let down = rng.gen::<f64>() >= ab;
                                let right = rng.gen::<f64>() >= if down { c_norm } else { a_norm };
                                u = (u << 1) | down as u32;
                                v = (v << 1) | right as u32;
                            }
                            out.push((u, v));
                        }
                        out
                    })
                })
                .collect();
            parts = handles.into_iter().map(|h| h.join().unwrap()).collect();
        });
        let mut perm: Vec<u32> = (0..n as u32).collect();
        perm.shuffle(&mut ChaCha8Rng::seed_from_u64(
            self.seed ^ 0x9e37_79b9_7f4a_7c15,
        ));
        parts
            .into_iter()
            .flatten()
            .map(|(u, v)| (perm[u as usize], perm[v as usize]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Csr;

    #[test]
    fn deterministic_and_seed_dependent() {
        let s = RmatSpec {
            scale: 10,
            edge_factor: 8,
            ..RmatSpec::default()
        };
        assert_eq!(s.generate(), s.generate());
        let t = RmatSpec { seed: 2, ..s };
        assert_ne!(s.generate(), t.generate());
        assert_eq!(s.generate().len(), 1024 * 8);
    }

    #[test]
    fn degrees_are_skewed() {
        let s = RmatSpec {
            scale: 14,
            edge_factor: 16,
            ..RmatSpec::default()
        };
        let (g, _) = Csr::from_edges(s.num_vertices(), &s.generate());
        let n = g.num_vertices() as u32;
        let max = (0..n).map(|v| g.degree(v)).max().unwrap();
        let mean = g.num_directed() as f64 / n as f64;
        assert!(max as f64 > 20.0 * mean, "max {max}, mean {mean}");
    }
}
