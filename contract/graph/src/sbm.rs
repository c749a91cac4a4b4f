//! Stochastic block model graphs: `sbm:n=N,classes=K,p_in=P,p_out=Q[,seed=S]`, `N` vertices
//! in `K` equal classes of consecutive ids, each pair joined with probability `P` inside a
//! class and `Q` across. The mixing (`Q / P`) sets how much of a partition's traffic crosses
//! to other workers; the planner and the simulator are checked on two mixing levels of it
//! besides R-MAT's skews. (`sgnn train` takes `sbm:` too, with features and labels on top:
//! the same edges for the same keys and seed.)

use rand::{Rng, SeedableRng};

use crate::error::GraphError;
use crate::VertexId;

/// The keys of an `sbm:` spec, for error messages.
pub const SBM_KEYS: &str =
    "n (default 2000), classes (default 5), p_in (default 0.01), p_out (default 0.001), seed (default 1)";

/// An SBM graph's parameters (the edges only).
#[derive(Debug, Clone, PartialEq)]
pub struct SbmSpec {
    /// Vertices.
    pub n: usize,
    /// Classes (equal, of consecutive ids).
    pub classes: usize,
    /// Edge probability inside a class.
    pub p_in: f64,
    /// Edge probability across classes.
    pub p_out: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for SbmSpec {
    fn default() -> Self {
        SbmSpec {
            n: 2000,
            classes: 5,
            p_in: 0.01,
            p_out: 0.001,
            seed: 1,
        }
    }
}

impl SbmSpec {
    /// Parses the keys after `sbm:` (every key optional; unknown keys are refused).
    pub fn parse(s: &str) -> Result<SbmSpec, GraphError> {
        let mut spec = SbmSpec::default();
        let bad = |m: String| GraphError::Spec(format!("sbm:{s}: {m}; keys: {SBM_KEYS}"));
        for kv in s.split(',').filter(|x| !x.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| bad(format!("`{kv}` is not key=value")))?;
            let num = |v: &str| {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| bad(format!("{k}={v} is not a number >= 0")))
            };
            let int = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| bad(format!("{k}={v} is not a whole number")))
            };
            match k.trim() {
                "n" => spec.n = int(v)? as usize,
                "classes" => spec.classes = int(v)? as usize,
                "p_in" => spec.p_in = num(v)?,
                "p_out" => spec.p_out = num(v)?,
                "seed" => spec.seed = int(v)?,
                other => return Err(bad(format!("unknown key `{other}`"))),
            }
        }
        spec.check().map_err(bad)?;
        Ok(spec)
    }

    /// Refuses parameters that describe no graph (as the text to add to the spec).
    pub fn check(&self) -> Result<(), String> {
        if self.classes < 2 || self.n < 2 * self.classes {
            return Err("needs classes >= 2 and n >= 2 x classes".into());
        }
        if self.n > u32::MAX as usize {
            return Err(format!("n must be below 2^32, got {}", self.n));
        }
        if self.p_in > 1.0 || self.p_out > 1.0 {
            return Err("probabilities are at most 1".into());
        }
        Ok(())
    }

    /// The class of vertex `v`.
    pub fn class_of(&self, v: usize) -> usize {
        v * self.classes / self.n
    }

    /// The edges (u < v), drawn from `rng`: pair by pair in expected-linear time (geometric
    /// skips over each run of Bernoulli pairs).
    pub fn edges_with(&self, rng: &mut impl Rng) -> Vec<(VertexId, VertexId)> {
        let n = self.n;
        let mut edges = Vec::new();
        // Class c holds the vertices v with v * classes / n == c.
        let start = |c: usize| (c * n).div_ceil(self.classes);
        for u in 0..n {
            let cu = self.class_of(u);
            for c in cu..self.classes {
                let (lo, p) = if c == cu {
                    (u + 1, self.p_in)
                } else {
                    (start(c), self.p_out)
                };
                let hi = start(c + 1).min(n);
                let mut v = lo;
                while p > 0.0 && v < hi {
                    let skip = if p >= 1.0 {
                        0
                    } else {
                        let r: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
                        (r.ln() / (1.0 - p).ln()).floor() as usize
                    };
                    v = v.saturating_add(skip);
                    if v < hi {
                        edges.push((u as VertexId, v as VertexId));
                    }
                    v += 1;
                }
            }
        }
        edges
    }

    /// The edges from the spec's own seed (ChaCha8).
    pub fn generate(&self) -> Vec<(VertexId, VertexId)> {
        self.edges_with(&mut rand_chacha::ChaCha8Rng::seed_from_u64(self.seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_draws_about_the_expected_edges() {
        let s = SbmSpec::parse("n=4000,classes=4,p_in=0.01,p_out=0.001,seed=3").unwrap();
        let e = s.generate();
        // Expected: 4 x C(1000, 2) x 0.01 + C(4, 2) x 1000^2 x 0.001 = 19980 + 6000.
        let n = e.len() as f64;
        assert!((n - 25_980.0).abs() < 800.0, "{n}");
        let cross = e
            .iter()
            .filter(|&&(u, v)| s.class_of(u as usize) != s.class_of(v as usize))
            .count() as f64;
        assert!((cross - 6000.0).abs() < 400.0, "{cross}");
        assert!(e.iter().all(|&(u, v)| u < v && (v as usize) < 4000));
        assert_eq!(e, s.generate(), "the seed fixes the graph");
    }

    #[test]
    fn refuses_what_describes_no_graph() {
        for bad in ["classes=1", "n=3,classes=2", "p_in=1.5", "x=1", "n=-1", "n"] {
            let e = SbmSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("keys: n"), "{bad}: {e}");
        }
    }
}
