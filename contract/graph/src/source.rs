//! Where a graph comes from: a file or a generator spec, as given to `--graph`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::GraphError;
use crate::rmat::RmatSpec;
use crate::sbm::SbmSpec;
use crate::snap::{read_edge_list, read_npy_edges};
use crate::{BuildStats, Csr, VertexId};

/// A graph source: a file (`.npy` edge array, or a SNAP edge list, plain or gzip) or an R-MAT
/// spec `rmat:scale=S,edge_factor=F[,a=..,b=..,c=..,d=..,seed=..]`, or a stochastic block
/// model `sbm:n=N,classes=K,p_in=P,p_out=Q[,seed=..]` ([`crate::sbm`]).
#[derive(Debug, Clone, PartialEq)]
pub enum GraphSource {
    /// A file.
    File(PathBuf),
    /// A generated graph.
    Rmat(RmatSpec),
    /// A generated stochastic block model.
    Sbm(SbmSpec),
}

/// A loaded, cleaned graph.
#[derive(Debug, Clone)]
pub struct LoadedGraph {
    /// The graph.
    pub csr: Csr,
    /// What cleaning removed.
    pub stats: BuildStats,
    /// Human-readable origin.
    pub description: String,
    /// When the file's ids were sparse and got renumbered to `0..n` (`docs/formats.md`, "Graph
    /// input"): `original_ids[v]` is the id vertex `v` has in the file, ascending. `None` when
    /// the ids were kept (every dense file, every generated graph).
    pub original_ids: Option<Vec<u64>>,
}

impl LoadedGraph {
    /// The id vertex `v` has in the input.
    pub fn original_id(&self, v: VertexId) -> u64 {
        self.original_ids
            .as_ref()
            .map_or(v as u64, |ids| ids[v as usize])
    }

    /// The vertex whose id in the input is `id`, if any vertex has it.
    pub fn vertex_of(&self, id: u64) -> Option<VertexId> {
        match &self.original_ids {
            Some(ids) => ids.binary_search(&id).ok().map(|v| v as VertexId),
            None => (id < self.csr.num_vertices() as u64).then_some(id as VertexId),
        }
    }

    /// One line on what was loaded: `"g.txt: 3 vertices, 2 edges (0 self-loops, 0 duplicates
    /// removed)"`, followed by `"; sparse ids: 1 of 3 renumbered (largest id 4294967294)"`
    /// when the ids were renumbered.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{}: {} vertices, {} edges ({} self-loops, {} duplicates removed)",
            self.description,
            self.csr.num_vertices(),
            self.csr.num_edges(),
            self.stats.self_loops,
            self.stats.duplicates
        );
        if let Some(ids) = &self.original_ids {
            s.push_str(&format!(
                "; sparse ids: {} of {} renumbered (largest id {})",
                self.stats.renumbered,
                ids.len(),
                ids.last().copied().unwrap_or(0)
            ));
        }
        s
    }
}

const RMAT_KEYS: &str = "scale (required, 1..=31), edge_factor (default 16), a, b, c, d (default 0.57, 0.19, 0.19, 0.05; must sum to 1), seed (default 1)";

impl FromStr for GraphSource {
    type Err = GraphError;
    fn from_str(s: &str) -> Result<Self, GraphError> {
        if let Some(rest) = s.strip_prefix("sbm:") {
            return Ok(GraphSource::Sbm(SbmSpec::parse(rest)?));
        }
        let Some(rest) = s.strip_prefix("rmat:") else {
            if s.is_empty() {
                return Err(GraphError::Spec("empty graph source".into()));
            }
            return Ok(GraphSource::File(PathBuf::from(s)));
        };
        let mut spec = RmatSpec::default();
        let mut has_scale = false;
        for kv in rest.split(',').filter(|x| !x.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                GraphError::Spec(format!(
                    "rmat spec: {kv:?} is not key=value; keys: {RMAT_KEYS}"
                ))
            })?;
            let bad = || {
                GraphError::Spec(format!(
                    "rmat spec: bad value {v:?} for {k}; keys: {RMAT_KEYS}"
                ))
            };
            match k.trim() {
                "scale" => {
                    spec.scale = v.parse().map_err(|_| bad())?;
                    has_scale = true;
                }
                "edge_factor" => spec.edge_factor = v.parse().map_err(|_| bad())?,
                "a" => spec.a = v.parse().map_err(|_| bad())?,
                "b" => spec.b = v.parse().map_err(|_| bad())?,
                "c" => spec.c = v.parse().map_err(|_| bad())?,
                "d" => spec.d = v.parse().map_err(|_| bad())?,
                "seed" => spec.seed = v.parse().map_err(|_| bad())?,
                other => {
                    return Err(GraphError::Spec(format!(
                        "rmat spec: unknown key {other:?}; keys: {RMAT_KEYS}"
                    )))
                }
            }
        }
        if !has_scale {
            return Err(GraphError::Spec(format!(
                "rmat spec needs scale=; keys: {RMAT_KEYS}"
            )));
        }
        if spec.scale == 0 || spec.scale > 31 {
            return Err(GraphError::Spec(format!(
                "rmat spec: scale must be 1..=31, got {}",
                spec.scale
            )));
        }
        let sum = spec.a + spec.b + spec.c + spec.d;
        if (sum - 1.0).abs() > 1e-6 || [spec.a, spec.b, spec.c, spec.d].iter().any(|&p| p < 0.0) {
            return Err(GraphError::Spec(format!(
                "rmat spec: a+b+c+d must be 1 with none negative, got {sum}"
            )));
        }
        if spec.edge_factor == 0 {
            return Err(GraphError::Spec(
                "rmat spec: edge_factor must be at least 1".into(),
            ));
        }
        Ok(GraphSource::Rmat(spec))
    }
}

impl fmt::Display for GraphSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphSource::File(p) => write!(f, "{}", p.display()),
            GraphSource::Rmat(s) => write!(
                f,
                "rmat:scale={},edge_factor={},a={},b={},c={},d={},seed={}",
                s.scale, s.edge_factor, s.a, s.b, s.c, s.d, s.seed
            ),
            GraphSource::Sbm(s) => write!(
                f,
                "sbm:n={},classes={},p_in={},p_out={},seed={}",
                s.n, s.classes, s.p_in, s.p_out, s.seed
            ),
        }
    }
}

fn is_npy(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

impl GraphSource {
    /// Reads or generates the graph and cleans it (undirected; self-loops and duplicates
    /// removed and counted). A graph with no edge left is an error.
    pub fn load(&self) -> Result<LoadedGraph, GraphError> {
        let (n, edges, original_ids) = match self {
            GraphSource::File(p) => {
                let list = if is_npy(p) {
                    read_npy_edges(p, None)?
                } else {
                    read_edge_list(p, None)?
                };
                (list.num_vertices, list.edges, list.original_ids)
            }
            GraphSource::Rmat(s) => (s.num_vertices(), s.generate(), None),
            GraphSource::Sbm(s) => (s.n, s.generate(), None),
        };
        let (csr, mut stats) = Csr::from_edges(n, &edges);
        drop(edges);
        stats.renumbered = original_ids.as_ref().map_or(0, |ids| {
            ids.iter()
                .enumerate()
                .filter(|&(v, &id)| id != v as u64)
                .count() as u64
        });
        if csr.num_edges() == 0 {
            return Err(GraphError::Empty {
                source_name: self.to_string(),
                detail: format!(
                    "{} edges read, {} self-loops and {} duplicates removed",
                    stats.input_edges, stats.self_loops, stats.duplicates
                ),
            });
        }
        Ok(LoadedGraph {
            csr,
            stats,
            description: self.to_string(),
            original_ids,
        })
    }
}

/// Parses and loads a graph source string.
pub fn load_graph(spec: &str) -> Result<LoadedGraph, GraphError> {
    spec.parse::<GraphSource>()?.load()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs_and_reports_bad_keys() {
        let s: GraphSource = "rmat:scale=5,edge_factor=4,seed=9".parse().unwrap();
        let GraphSource::Rmat(r) = &s else { panic!() };
        assert_eq!((r.scale, r.edge_factor, r.seed), (5, 4, 9));
        assert_eq!(s.to_string().parse::<GraphSource>().unwrap(), s);
        for (bad, what) in [
            ("rmat:edge_factor=4", "needs scale"),
            ("rmat:scale=4,foo=1", "unknown key"),
            ("rmat:scale=40", "1..=31"),
            ("rmat:scale=4,a=0.9", "must be 1"),
        ] {
            let e = bad.parse::<GraphSource>().unwrap_err().to_string();
            assert!(e.contains(what), "{bad}: {e}");
        }
        assert!(matches!(
            "x.txt".parse::<GraphSource>().unwrap(),
            GraphSource::File(_)
        ));
    }

    #[test]
    fn empty_and_comment_only_files_are_errors() {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("empty.txt", ""),
            ("comments.txt", "# a\n# b\n"),
            ("loops.txt", "1 1\n"),
        ] {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            let e = GraphSource::File(p).load().unwrap_err().to_string();
            assert!(e.contains(name) && e.contains("no edges"), "{e}");
        }
    }
}
