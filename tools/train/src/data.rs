//! Labelled graphs: a dataset directory (`docs/formats.md`, "Labelled graphs") or a generated
//! stochastic block model (`sbm:`), with features, labels and train/validation/test splits.

use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sgnn_graph::npy::{read_npy, NpyData};
use sgnn_graph::{Csr, Features};

use crate::{InputError, SbmProblem, TrainError};

/// A graph with a feature row and a label per vertex and the three splits.
#[derive(Debug, Clone)]
pub struct LabelledGraph {
    /// Where it came from.
    pub description: String,
    /// Undirected adjacency (no self loops).
    pub csr: Csr,
    /// `n x dim` features, row-major.
    pub features: Vec<f32>,
    /// Feature length.
    pub dim: usize,
    /// Class of each vertex, `-1` for unlabelled.
    pub labels: Vec<i64>,
    /// Number of classes (largest label + 1).
    pub classes: usize,
    /// Vertices whose labels train the model.
    pub train: Vec<bool>,
    /// Vertices that select the model (validation accuracy).
    pub val: Vec<bool>,
    /// Vertices of the reported test accuracy.
    pub test: Vec<bool>,
}

impl LabelledGraph {
    /// Vertices.
    pub fn num_vertices(&self) -> usize {
        self.csr.num_vertices()
    }

    /// Loads `spec`: `sbm:...` (see [`SbmSpec`]) or a dataset directory (its path, or its name
    /// under `datasets`).
    pub fn load(spec: &str, datasets: &Path, seed: u64) -> Result<LabelledGraph, TrainError> {
        if let Some(rest) = spec.strip_prefix("sbm:") {
            return Ok(SbmSpec::parse(rest)?.generate());
        }
        let dir = if Path::new(spec).is_dir() {
            PathBuf::from(spec)
        } else if datasets.join(spec).is_dir() {
            datasets.join(spec)
        } else {
            return Err(InputError::UnknownGraph {
                spec: spec.to_string(),
                datasets: datasets.to_path_buf(),
            }
            .into());
        };
        load_dir(&dir, seed)
    }

    /// The features as the first layer's input: sparse (CSR) when fewer than 10% of the values
    /// are non-zero, as bag-of-words features are, else dense.
    pub fn input(&self) -> OwnedInput {
        input_of(&self.features, self.num_vertices(), self.dim)
    }

    /// The rows of `vertices` (ascending ids: one worker's partition, the row order of its
    /// daemon), with each vertex's degree in the whole graph.
    pub fn shard(&self, vertices: Vec<u32>) -> Shard {
        let d = self.dim;
        let mut features = Vec::with_capacity(vertices.len() * d);
        for &v in &vertices {
            features.extend_from_slice(&self.features[v as usize * d..(v as usize + 1) * d]);
        }
        let pick = |m: &[bool]| vertices.iter().map(|&v| m[v as usize]).collect();
        Shard {
            features,
            dim: d,
            labels: vertices.iter().map(|&v| self.labels[v as usize]).collect(),
            classes: self.classes,
            train: pick(&self.train),
            val: pick(&self.val),
            test: pick(&self.test),
            degrees: vertices
                .iter()
                .map(|&v| self.csr.degree(v) as u32)
                .collect(),
            vertices,
        }
    }

    /// Every row (the single-process run).
    pub fn whole(&self) -> Shard {
        self.shard((0..self.num_vertices() as u32).collect())
    }

    /// Divides every feature row by its sum (rows summing to 0 are left as they are), as Kipf
    /// and Welling do for the citation graphs.
    pub fn normalise_rows(&mut self) {
        for row in self.features.chunks_mut(self.dim.max(1)) {
            let s: f32 = row.iter().sum();
            if s != 0.0 {
                row.iter_mut().for_each(|x| *x /= s);
            }
        }
    }
}

/// Most classes a labelled graph may have: training allocates a weight column (and a
/// per-class count) for every class up to the largest label, so a label of 2^31 - 1 would
/// allocate hundreds of gigabytes. Labels must also be below the number of vertices
/// ([`class_limit`]). docs/formats.md, "Labelled graphs".
pub const MAX_CLASSES: u64 = 1 << 20;

/// The exclusive bound on the labels of a graph of `n` vertices: `min(n, MAX_CLASSES)`.
pub fn class_limit(n: usize) -> u64 {
    (n as u64).min(MAX_CLASSES)
}

/// `raw` as labels: each -1 (unlabelled) or a class below `limit`; the first other value is a
/// [`TrainError::Label`] naming `path`, its row and the limit.
fn checked_labels(path: &Path, raw: &[i128], limit: u64) -> Result<Vec<i64>, TrainError> {
    raw.iter()
        .enumerate()
        .map(|(row, &l)| {
            if l == -1 || (0..limit as i128).contains(&l) {
                Ok(l as i64)
            } else {
                Err(TrainError::Label {
                    path: path.to_path_buf(),
                    row,
                    label: l,
                    limit,
                })
            }
        })
        .collect()
}

fn need(dir: &Path, name: &'static str) -> Result<PathBuf, TrainError> {
    let p = dir.join(name);
    if p.is_file() {
        Ok(p)
    } else {
        Err(InputError::MissingFile {
            dir: dir.to_path_buf(),
            name,
        }
        .into())
    }
}

fn mask(dir: &Path, name: &str, n: usize) -> Result<Option<Vec<bool>>, TrainError> {
    let p = dir.join(name);
    if !p.is_file() {
        return Ok(None);
    }
    let a = read_npy(&p).map_err(InputError::Graph)?;
    let v: Vec<bool> = match &a.data {
        NpyData::Bool(b) => b.clone(),
        other => (0..other.len())
            .map(|i| other.get_int(i).unwrap_or(0) != 0)
            .collect(),
    };
    if v.len() != n {
        return Err(InputError::MaskLength {
            path: p,
            entries: v.len(),
            vertices: n,
        }
        .into());
    }
    if !v.iter().any(|&b| b) {
        return Err(InputError::EmptyMask { path: p }.into());
    }
    Ok(Some(v))
}

fn input_of(features: &[f32], n: usize, dim: usize) -> OwnedInput {
    let nnz = features.iter().filter(|&&x| x != 0.0).count();
    if nnz * 10 < features.len() {
        let mut t = sprs::TriMat::with_capacity((n, dim), nnz);
        for (i, &x) in features.iter().enumerate() {
            if x != 0.0 {
                t.add_triplet(i / dim, i % dim, x);
            }
        }
        OwnedInput::Sparse(t.to_csr())
    } else {
        OwnedInput::Dense(
            ndarray::Array2::from_shape_vec((n, dim), features.to_vec()).expect("n x dim values"),
        )
    }
}

/// One worker's rows of a labelled graph: what a worker process holds. Written to and read
/// from a directory of `.npy` files (`vertices`, `features`, `labels`, `degrees`, and the
/// masks as uint8) by the process that partitions the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// Global ids of the rows, ascending.
    pub vertices: Vec<u32>,
    /// `rows x dim` features.
    pub features: Vec<f32>,
    /// Feature length.
    pub dim: usize,
    /// Label per row.
    pub labels: Vec<i64>,
    /// Classes in the whole graph.
    pub classes: usize,
    /// Training rows.
    pub train: Vec<bool>,
    /// Validation rows.
    pub val: Vec<bool>,
    /// Test rows.
    pub test: Vec<bool>,
    /// Degree of each row's vertex in the whole graph.
    pub degrees: Vec<u32>,
}

impl Shard {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.vertices.len()
    }

    /// The first layer's input (sparse when under 10% non-zero, as [`LabelledGraph::input`]).
    pub fn input(&self) -> OwnedInput {
        input_of(&self.features, self.rows(), self.dim)
    }

    /// The trainer's view of these rows, with `input` from [`Shard::input`].
    pub fn local<'a>(&'a self, input: &'a OwnedInput) -> crate::train::Local<'a> {
        crate::train::Local {
            features: input.view(),
            labels: &self.labels,
            train: &self.train,
            val: &self.val,
            test: &self.test,
            scales: crate::gnn::RowScales::from_degrees(&self.degrees),
            classes: self.classes,
        }
    }

    /// Writes the shard into `dir` (created).
    pub fn write(&self, dir: &Path) -> Result<(), TrainError> {
        use sgnn_graph::npy::write_npy;
        let io = |reason: std::io::Error| InputError::WriteShard {
            dir: dir.to_path_buf(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let n = self.rows();
        write_npy(&dir.join("vertices.npy"), &[n], &self.vertices).map_err(io)?;
        write_npy(&dir.join("features.npy"), &[n, self.dim], &self.features).map_err(io)?;
        write_npy(&dir.join("labels.npy"), &[n], &self.labels).map_err(io)?;
        write_npy(&dir.join("degrees.npy"), &[n], &self.degrees).map_err(io)?;
        for (name, m) in [
            ("train", &self.train),
            ("val", &self.val),
            ("test", &self.test),
        ] {
            let b: Vec<u8> = m.iter().map(|&x| x as u8).collect();
            write_npy(&dir.join(format!("{name}_mask.npy")), &[n], &b).map_err(io)?;
        }
        std::fs::write(dir.join("classes.txt"), format!("{}\n", self.classes)).map_err(io)?;
        Ok(())
    }

    /// Reads a shard written by [`Shard::write`], checking that every file has one entry per
    /// vertex.
    pub fn read(dir: &Path) -> Result<Shard, TrainError> {
        let ints = |name: &str| -> Result<Vec<i128>, TrainError> {
            let p = dir.join(name);
            let a = read_npy(&p).map_err(|reason| InputError::ShardFile {
                path: p.clone(),
                reason,
            })?;
            (0..a.data.len())
                .map(|i| a.data.get_int(i))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| InputError::NotIntegers { path: p }.into())
        };
        let vertices: Vec<u32> = ints("vertices.npy")?
            .into_iter()
            .map(|x| x as u32)
            .collect();
        let n = vertices.len();
        let fp = dir.join("features.npy");
        let f = Features::load(&fp).map_err(|reason| InputError::ShardFile {
            path: fp.clone(),
            reason,
        })?;
        let degrees: Vec<u32> = ints("degrees.npy")?.into_iter().map(|x| x as u32).collect();
        let masks: Vec<Vec<bool>> = ["train", "val", "test"]
            .iter()
            .map(|m| {
                Ok(ints(&format!("{m}_mask.npy"))?
                    .into_iter()
                    .map(|x| x != 0)
                    .collect())
            })
            .collect::<Result<_, TrainError>>()?;
        let cp = dir.join("classes.txt");
        let classes: usize = std::fs::read_to_string(&cp)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .ok_or_else(|| InputError::ClassCount { path: cp.clone() })?;
        if classes as u64 > MAX_CLASSES {
            return Err(InputError::TooManyClasses { path: cp, classes }.into());
        }
        let labels = checked_labels(
            &dir.join("labels.npy"),
            &ints("labels.npy")?,
            classes as u64,
        )?;
        if f.num_vertices != n
            || labels.len() != n
            || degrees.len() != n
            || masks.iter().any(|m| m.len() != n)
        {
            return Err(InputError::ShardRows {
                dir: dir.to_path_buf(),
                vertices: n,
            }
            .into());
        }
        let mut masks = masks.into_iter();
        Ok(Shard {
            vertices,
            features: f.data,
            dim: f.dim,
            labels,
            classes,
            train: masks.next().expect("3 masks"),
            val: masks.next().expect("3 masks"),
            test: masks.next().expect("3 masks"),
            degrees,
        })
    }
}

/// Owned first-layer input ([`crate::gnn::Input`] borrows it).
#[derive(Debug, Clone)]
pub enum OwnedInput {
    /// Dense rows.
    Dense(ndarray::Array2<f32>),
    /// Sparse rows.
    Sparse(sprs::CsMat<f32>),
}

impl OwnedInput {
    /// The borrowed view the model takes.
    pub fn view(&self) -> crate::gnn::Input<'_> {
        match self {
            OwnedInput::Dense(x) => crate::gnn::Input::Dense(x.view()),
            OwnedInput::Sparse(x) => crate::gnn::Input::Sparse(x),
        }
    }
}

/// Loads a labelled graph directory.
pub fn load_dir(dir: &Path, seed: u64) -> Result<LabelledGraph, TrainError> {
    let edges = need(dir, "edges.txt.gz")?;
    let fpath = need(dir, "features.npy")?;
    let lpath = need(dir, "labels.npy")?;
    let f = Features::load(&fpath).map_err(InputError::Graph)?;
    let la = read_npy(&lpath).map_err(InputError::Graph)?;
    let raw: Vec<i128> = (0..la.data.len())
        .map(|i| la.data.get_int(i))
        .collect::<Option<_>>()
        .ok_or_else(|| InputError::LabelType {
            path: lpath.clone(),
            dtype: la.data.dtype_name(),
        })?;
    let n = raw.len();
    let labels = checked_labels(&lpath, &raw, class_limit(n))?;
    if f.num_vertices != n {
        return Err(InputError::LabelCount {
            features: fpath,
            rows: f.num_vertices,
            labels_path: lpath,
            labels: n,
        }
        .into());
    }
    let g = sgnn_graph::load_graph(&edges.display().to_string()).map_err(InputError::Graph)?;
    if g.csr.num_vertices() > n {
        return Err(InputError::EdgesBeyondLabels {
            edges,
            max_vertex: g.csr.num_vertices() - 1,
            labels_path: lpath,
            labels: n,
        }
        .into());
    }
    // Isolated vertices past the last edge's ids exist too: the label count is the vertex count.
    let list: Vec<(u32, u32)> = g.csr.edges().collect();
    let csr = Csr::from_edges(n, &list).0;
    let classes = labels.iter().copied().max().unwrap_or(-1) + 1;
    if classes < 2 {
        return Err(InputError::FewClasses { path: lpath }.into());
    }
    let (train, val, test) = match (
        mask(dir, "train_mask.npy", n)?,
        mask(dir, "val_mask.npy", n)?,
        mask(dir, "test_mask.npy", n)?,
    ) {
        (Some(a), Some(b), Some(c)) => (a, b, c),
        _ => random_split(&labels, seed),
    };
    for (name, m) in [("train", &train), ("val", &val), ("test", &test)] {
        if m.iter().zip(&labels).any(|(&s, &l)| s && l < 0) {
            return Err(InputError::MaskSelectsUnlabelled {
                dir: dir.to_path_buf(),
                mask: name,
            }
            .into());
        }
    }
    Ok(LabelledGraph {
        description: dir.display().to_string(),
        csr,
        features: f.data,
        dim: f.dim,
        labels,
        classes: classes as usize,
        train,
        val,
        test,
    })
}

/// A seeded random split of the labelled vertices: 20 per class for training (Kipf and
/// Welling's protocol), then 500 for validation and 1,000 for testing (or 10% and 20% of the
/// labelled vertices when there are fewer than 3,000).
pub fn random_split(labels: &[i64], seed: u64) -> (Vec<bool>, Vec<bool>, Vec<bool>) {
    let n = labels.len();
    let mut ids: Vec<usize> = (0..n).filter(|&v| labels[v] >= 0).collect();
    ids.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5eed));
    let classes = labels.iter().copied().max().unwrap_or(-1) + 1;
    let mut per_class = vec![0usize; classes.max(0) as usize];
    let (mut train, mut val, mut test) = (vec![false; n], vec![false; n], vec![false; n]);
    let mut rest = Vec::new();
    for &v in &ids {
        let c = labels[v] as usize;
        if per_class[c] < 20 {
            per_class[c] += 1;
            train[v] = true;
        } else {
            rest.push(v);
        }
    }
    let (nv, nt) = if ids.len() >= 3000 {
        (500, 1000)
    } else {
        (ids.len() / 10, ids.len() / 5)
    };
    for (i, &v) in rest.iter().enumerate() {
        if i < nv {
            val[v] = true;
        } else if i < nv + nt {
            test[v] = true;
        }
    }
    (train, val, test)
}

/// `sbm:n=N,classes=K,p_in=P,p_out=Q,dim=D,signal=S,seed=X`: a stochastic block model of `N`
/// vertices in `K` equal classes; each pair of vertices is joined with probability `p_in`
/// inside a class and `p_out` across; features are Gaussian noise plus `signal` on the class's
/// own block of `D / K` feature columns. Defaults: n=2000, classes=5, p_in=0.01,
/// p_out=0.001, dim=64, signal=0.5, seed=1. Sampled edge by edge in expected-linear time.
#[derive(Debug, Clone, PartialEq)]
pub struct SbmSpec {
    /// The graph: vertices, classes, edge probabilities and seed (`sgnn_graph::sbm`, which
    /// `--graph sbm:...` of the other commands reads too).
    pub graph: sgnn_graph::sbm::SbmSpec,
    /// Feature length.
    pub dim: usize,
    /// Mean added to the class's own feature columns.
    pub signal: f32,
}

impl SbmSpec {
    /// Parses the part after `sbm:`: `dim` and `signal` here, the graph's keys by
    /// `sgnn_graph::sbm::SbmSpec::parse`.
    pub fn parse(s: &str) -> Result<SbmSpec, TrainError> {
        let bad = |problem: SbmProblem| InputError::Sbm {
            spec: s.to_string(),
            problem,
        };
        let (mut dim, mut signal) = (64usize, 0.5f32);
        let mut graph_keys = Vec::new();
        for kv in s.split(',').filter(|x| !x.is_empty()) {
            let num = |k: &'static str, v: &str| {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| -> TrainError {
                        bad(SbmProblem::NotANumber {
                            key: k,
                            value: v.to_string(),
                        })
                        .into()
                    })
            };
            match kv.split_once('=') {
                Some(("dim", v)) => dim = num("dim", v)? as usize,
                Some(("signal", v)) => signal = num("signal", v)? as f32,
                _ => graph_keys.push(kv),
            }
        }
        let graph = sgnn_graph::sbm::SbmSpec::parse(&graph_keys.join(","))
            .map_err(|e| bad(SbmProblem::Graph(e)))?;
        if dim == 0 {
            return Err(bad(SbmProblem::ZeroDim).into());
        }
        Ok(SbmSpec { graph, dim, signal })
    }

    /// Generates the graph, its features and labels, and a seeded random split.
    pub fn generate(&self) -> LabelledGraph {
        let graph = &self.graph;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(graph.seed);
        let n = graph.n;
        let labels: Vec<i64> = (0..n).map(|v| graph.class_of(v) as i64).collect();
        // The edges first, then the features, from one stream: `sgnn sim --graph sbm:...`
        // draws the same edges for the same keys and seed.
        let edges = graph.edges_with(&mut rng);
        let csr = Csr::from_edges(n, &edges).0;
        let block = (self.dim / graph.classes).max(1);
        let mut features = vec![0f32; n * self.dim];
        for v in 0..n {
            let c = labels[v] as usize;
            for j in 0..self.dim {
                // Box-Muller: standard normal noise.
                let (a, b): (f64, f64) = (rng.gen_range(f64::MIN_POSITIVE..1.0), rng.gen());
                let z = ((-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()) as f32;
                let own = j / block == c;
                features[v * self.dim + j] = z + if own { self.signal } else { 0.0 };
            }
        }
        let (train, val, test) = random_split(&labels, graph.seed);
        LabelledGraph {
            description: format!(
                "sbm:n={},classes={},p_in={},p_out={},dim={},signal={},seed={}",
                graph.n, graph.classes, graph.p_in, graph.p_out, self.dim, self.signal, graph.seed
            ),
            csr,
            features,
            dim: self.dim,
            labels,
            classes: graph.classes,
            train,
            val,
            test,
        }
    }
}
