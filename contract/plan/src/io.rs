//! The on-disk plan directory (format `sgnn-plan` version 1, documented in `docs/formats.md`).
//!
//! ```text
//! DIR/plan.json                      manifest (JSON)
//! DIR/report.json                    planning report and traffic model (written by switch-ctl)
//! DIR/graph/indptr.npy               uint64 [n+1]   CSR row pointers
//! DIR/graph/indices.npy              uint32 [2m]    CSR neighbour lists (both directions)
//! DIR/partition.npy                  uint32 [n]     worker of every vertex
//! DIR/partials.npy                   uint32 [P,2]   (destination, sender) of partial k, whose
//!                                                   block source id is n + k (delivery plans)
//! DIR/replicate_ptr.npy              uint32 [n+1]   vertex u is replicated raw to the workers
//! DIR/replicate.npy                  uint32 [K]     replicate[ptr[u]..ptr[u+1]] (delivery plans)
//! DIR/blocks/NNNNN/sources.npy       uint32 [S]     sources in send order
//! DIR/blocks/NNNNN/fanout_ptr.npy    uint32 [S+1]   passes of source i: fanout[ptr[i]..ptr[i+1]]
//! DIR/blocks/NNNNN/fanout.npy        uint32 [F]     aggregator row of each pass
//! DIR/blocks/NNNNN/aggregators.npy   uint32 [A,3]   (destination, first aggregator, expected),
//!                                    or [A,4]       and the generation (plans with --recycle)
//! DIR/workers/NNN/sends.npy          uint32 [K,2]   (block, source) in send order
//! DIR/workers/NNN/receives.npy       uint32 [R,3]   (block, destination, expected)
//! ```
//! Arrays are NumPy `.npy` files so a training script in Python can read a plan directly.
//! `plan.json` lists every array's digest (`files`) and its own (`digest`); every reader checks
//! them before parsing, so a corrupted or edited file is an error naming it, never wrong sums.

use std::fs;
use std::path::{Path, PathBuf};

use sgnn_graph::npy::{self, NpyData};
use sgnn_graph::Csr;

use crate::model::AggregateMode;
use crate::model::{digest_bytes, AggSlot, Block, Manifest, Partial, Plan, WorkerSchedule};
use crate::{PlanError, FORMAT_NAME, FORMAT_VERSION};

fn write_u32(path: &Path, shape: &[usize], data: &[u32]) -> Result<(), PlanError> {
    npy::write_npy(path, shape, data).map_err(|e| PlanError::io(path, e))
}

fn write_u64(path: &Path, shape: &[usize], data: &[u64]) -> Result<(), PlanError> {
    npy::write_npy(path, shape, data).map_err(|e| PlanError::io(path, e))
}

/// The digest of the file at `dir/rel`.
fn digest_file(dir: &Path, rel: &str) -> Result<String, PlanError> {
    let path = dir.join(rel);
    let bytes = fs::read(&path).map_err(|e| PlanError::io(&path, e))?;
    Ok(digest_bytes(&bytes))
}

/// The manifest's own digest: of its pretty JSON with `digest` empty.
fn manifest_digest(m: &Manifest) -> String {
    let mut m = m.clone();
    m.digest.clear();
    digest_bytes(
        serde_json::to_string_pretty(&m)
            .expect("a manifest serialises")
            .as_bytes(),
    )
}

/// Checks `dir/rel` against the manifest's digest before a reader parses it (plans without
/// digests are not checked).
fn check_file(dir: &Path, m: &Manifest, rel: &str) -> Result<(), PlanError> {
    if m.files.is_empty() {
        return Ok(());
    }
    let path = dir.join(rel);
    let Some(want) = m.files.get(rel) else {
        return Err(PlanError::format(
            &path,
            "the manifest lists no digest for this file: plan.json and the arrays are from different plans; re-plan",
        ));
    };
    let got = digest_file(dir, rel)?;
    if &got != want {
        return Err(PlanError::format(
            &path,
            format!(
                "digest {got} does not match the manifest's {want}: the file was changed or corrupted after planning; re-plan (switch-ctl plan)"
            ),
        ));
    }
    Ok(())
}

/// Reads a uint32 array and checks it has `cols` columns (`None` for a 1-D array).
fn read_u32(path: &Path, cols: Option<usize>) -> Result<Vec<u32>, PlanError> {
    let arr = npy::read_npy(path).map_err(|e| PlanError::format(path, e.to_string()))?;
    check_shape(path, &arr.shape, cols)?;
    match arr.data {
        NpyData::U32(v) => Ok(v),
        other => Err(PlanError::format(
            path,
            format!("expected dtype uint32, found {}", other.dtype_name()),
        )),
    }
}

/// Reads a 2-D uint32 array with one of `cols` columns; returns the values and the columns.
fn read_u32_cols(path: &Path, cols: &[usize]) -> Result<(Vec<u32>, usize), PlanError> {
    let arr = npy::read_npy(path).map_err(|e| PlanError::format(path, e.to_string()))?;
    let c = match arr.shape.as_slice() {
        [_, c] if cols.contains(c) => *c,
        shape => {
            let want: Vec<String> = cols.iter().map(|c| format!("[N, {c}]")).collect();
            return Err(PlanError::format(
                path,
                format!("expected shape {}, found {shape:?}", want.join(" or ")),
            ));
        }
    };
    match arr.data {
        NpyData::U32(v) => Ok((v, c)),
        other => Err(PlanError::format(
            path,
            format!("expected dtype uint32, found {}", other.dtype_name()),
        )),
    }
}

fn read_u64(path: &Path) -> Result<Vec<u64>, PlanError> {
    let arr = npy::read_npy(path).map_err(|e| PlanError::format(path, e.to_string()))?;
    check_shape(path, &arr.shape, None)?;
    match arr.data {
        NpyData::U64(v) => Ok(v),
        other => Err(PlanError::format(
            path,
            format!("expected dtype uint64, found {}", other.dtype_name()),
        )),
    }
}

fn check_shape(path: &Path, shape: &[usize], cols: Option<usize>) -> Result<(), PlanError> {
    let ok = match cols {
        None => shape.len() == 1,
        Some(c) => shape.len() == 2 && shape[1] == c,
    };
    if ok {
        Ok(())
    } else {
        let want = match cols {
            None => "[N]".to_string(),
            Some(c) => format!("[N, {c}]"),
        };
        Err(PlanError::format(
            path,
            format!("expected shape {want}, found {shape:?}"),
        ))
    }
}

fn mkdir(path: &Path) -> Result<(), PlanError> {
    fs::create_dir_all(path).map_err(|e| PlanError::io(path, e))
}

/// Directory of block `b` inside a plan directory.
/// The array files of a block directory.
const BLOCK_FILES: [&str; 4] = [
    "sources.npy",
    "fanout_ptr.npy",
    "fanout.npy",
    "aggregators.npy",
];

/// The array files of a worker directory.
const WORKER_FILES: [&str; 2] = ["sends.npy", "receives.npy"];

fn block_rel(b: usize) -> String {
    format!("blocks/{b:05}")
}

fn worker_rel(w: u32) -> String {
    format!("workers/{w:03}")
}

pub fn block_dir(dir: &Path, b: usize) -> PathBuf {
    dir.join(block_rel(b))
}

/// Directory of worker `w` inside a plan directory.
pub fn worker_dir(dir: &Path, w: u32) -> PathBuf {
    dir.join(worker_rel(w))
}

impl Plan {
    /// Writes the plan into `dir` (created if missing). Existing plan files are overwritten;
    /// stale block directories beyond this plan's blocks are removed so the directory is exact.
    pub fn save(&self, dir: &Path) -> Result<(), PlanError> {
        mkdir(&dir.join("graph"))?;
        write_u64(
            &dir.join("graph/indptr.npy"),
            &[self.graph.indptr().len()],
            self.graph.indptr(),
        )?;
        write_u32(
            &dir.join("graph/indices.npy"),
            &[self.graph.indices().len()],
            self.graph.indices(),
        )?;
        write_u32(
            &dir.join("partition.npy"),
            &[self.partition.len()],
            &self.partition,
        )?;
        let partials_path = dir.join("partials.npy");
        if self.partials.is_empty() {
            if partials_path.exists() {
                fs::remove_file(&partials_path).map_err(|e| PlanError::io(&partials_path, e))?;
            }
        } else {
            let flat: Vec<u32> = self
                .partials
                .iter()
                .flat_map(|p| [p.dst, p.sender])
                .collect();
            write_u32(&partials_path, &[self.partials.len(), 2], &flat)?;
        }
        for (name, data) in [
            ("replicate_ptr.npy", &self.replicate_ptr),
            ("replicate.npy", &self.replicate),
        ] {
            let path = dir.join(name);
            if self.replicate.is_empty() {
                if path.exists() {
                    fs::remove_file(&path).map_err(|e| PlanError::io(&path, e))?;
                }
            } else {
                write_u32(&path, &[data.len()], data)?;
            }
        }
        let blocks_root = dir.join("blocks");
        if blocks_root.exists() {
            fs::remove_dir_all(&blocks_root).map_err(|e| PlanError::io(&blocks_root, e))?;
        }
        for (b, block) in self.blocks.iter().enumerate() {
            let bd = block_dir(dir, b);
            mkdir(&bd)?;
            write_u32(
                &bd.join("sources.npy"),
                &[block.sources.len()],
                &block.sources,
            )?;
            write_u32(
                &bd.join("fanout_ptr.npy"),
                &[block.fanout_ptr.len()],
                &block.fanout_ptr,
            )?;
            write_u32(&bd.join("fanout.npy"), &[block.fanout.len()], &block.fanout)?;
            // A fourth column (the generation) only in plans that recycle aggregators, so
            // every other plan stays byte for byte what it was.
            let cols = if block.aggregators.iter().any(|a| a.generation != 0) {
                4
            } else {
                3
            };
            let flat: Vec<u32> = block
                .aggregators
                .iter()
                .flat_map(|a| {
                    [a.dst, a.base, a.expected, a.generation]
                        .into_iter()
                        .take(cols)
                })
                .collect();
            write_u32(
                &bd.join("aggregators.npy"),
                &[block.aggregators.len(), cols],
                &flat,
            )?;
        }
        let workers_root = dir.join("workers");
        if workers_root.exists() {
            fs::remove_dir_all(&workers_root).map_err(|e| PlanError::io(&workers_root, e))?;
        }
        for w in 0..self.workers() {
            let s = self.worker_schedule(w);
            let wd = worker_dir(dir, w);
            mkdir(&wd)?;
            let sends: Vec<u32> = s.sends.iter().flat_map(|&(b, v)| [b, v]).collect();
            write_u32(&wd.join("sends.npy"), &[s.sends.len(), 2], &sends)?;
            let recv: Vec<u32> = s.receives.iter().flat_map(|&(b, v, e)| [b, v, e]).collect();
            write_u32(&wd.join("receives.npy"), &[s.receives.len(), 3], &recv)?;
        }
        // Every array's digest, then the manifest's own; the manifest goes last: a directory
        // with a manifest is a complete plan.
        let mut m = self.manifest.clone();
        m.files.clear();
        let mut rels = vec![
            "graph/indptr.npy".to_string(),
            "graph/indices.npy".to_string(),
            "partition.npy".to_string(),
        ];
        if !self.partials.is_empty() {
            rels.push("partials.npy".to_string());
        }
        if !self.replicate.is_empty() {
            rels.push("replicate_ptr.npy".to_string());
            rels.push("replicate.npy".to_string());
        }
        for b in 0..self.blocks.len() {
            for f in BLOCK_FILES {
                rels.push(format!("{}/{f}", block_rel(b)));
            }
        }
        for w in 0..self.workers() {
            for f in WORKER_FILES {
                rels.push(format!("{}/{f}", worker_rel(w)));
            }
        }
        for rel in rels {
            let d = digest_file(dir, &rel)?;
            m.files.insert(rel, d);
        }
        m.digest = manifest_digest(&m);
        let path = dir.join("plan.json");
        let text = serde_json::to_string_pretty(&m)
            .map_err(|e| PlanError::format(&path, e.to_string()))?;
        fs::write(&path, text + "\n").map_err(|e| PlanError::io(&path, e))
    }

    /// Reads only `plan.json`, checking format name and version.
    pub fn load_manifest(dir: &Path) -> Result<Manifest, PlanError> {
        let path = dir.join("plan.json");
        let text = fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                PlanError::format(
                    &path,
                    "no plan manifest here: is this a directory written by `switch-ctl plan --out`?",
                )
            } else {
                PlanError::io(&path, e)
            }
        })?;
        let head: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| PlanError::format(&path, e.to_string()))?;
        let format = head.get("format").and_then(|v| v.as_str()).unwrap_or("");
        let version = head.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
        if format != FORMAT_NAME || version != FORMAT_VERSION as u64 {
            return Err(PlanError::Version {
                path,
                found: format!("{format:?} v{version}"),
                expected: format!("{FORMAT_NAME:?} v{FORMAT_VERSION}"),
            });
        }
        let m: Manifest =
            serde_json::from_value(head).map_err(|e| PlanError::format(&path, e.to_string()))?;
        if !m.digest.is_empty() && manifest_digest(&m) != m.digest {
            return Err(PlanError::format(
                &path,
                "the manifest's contents do not match its digest: plan.json was changed or corrupted after planning; re-plan (switch-ctl plan)",
            ));
        }
        if m.digest.is_empty() && !m.files.is_empty() {
            return Err(PlanError::format(
                &path,
                "the manifest lists file digests but has no digest of its own: it was changed after planning; re-plan",
            ));
        }
        Ok(m)
    }

    /// Reads a whole plan. Structural problems (shapes, dtypes, a graph that is not a valid
    /// CSR or does not match the manifest's fingerprint, and everything
    /// [`Plan::check_structure`] checks) are errors here; deeper invariants are checked by
    /// [`crate::verify`].
    pub fn load(dir: &Path) -> Result<Plan, PlanError> {
        let manifest = Plan::load_manifest(dir)?;
        for rel in ["graph/indptr.npy", "graph/indices.npy", "partition.npy"] {
            check_file(dir, &manifest, rel)?;
        }
        let indptr = read_u64(&dir.join("graph/indptr.npy"))?;
        let indices = read_u32(&dir.join("graph/indices.npy"), None)?;
        // Name the array at fault: the row pointers, or the neighbour lists they point into.
        let graph = Csr::from_raw(indptr, indices).map_err(|m| {
            let file = if m.in_indptr() {
                "graph/indptr.npy"
            } else {
                "graph/indices.npy"
            };
            PlanError::format(dir.join(file), m.to_string())
        })?;
        let fp = format!("{:016x}", graph.fingerprint());
        if fp != manifest.graph.fingerprint {
            return Err(PlanError::format(
                dir.join("graph"),
                format!(
                    "graph fingerprint {fp} does not match the manifest's {}: the graph files were changed after planning",
                    manifest.graph.fingerprint
                ),
            ));
        }
        let partition = read_u32(&dir.join("partition.npy"), None)?;
        // A delivery plan lists its optional arrays in the manifest's digests; a file the
        // manifest lists must be there, and one it does not list is not read.
        let listed = |rel: &str| {
            manifest.config.aggregate != AggregateMode::Paper
                && (manifest.files.contains_key(rel)
                    || (manifest.files.is_empty() && dir.join(rel).exists()))
        };
        let partials = if listed("partials.npy") {
            check_file(dir, &manifest, "partials.npy")?;
            read_u32(&dir.join("partials.npy"), Some(2))?
                .chunks_exact(2)
                .map(|r| Partial {
                    dst: r[0],
                    sender: r[1],
                })
                .collect()
        } else {
            Vec::new()
        };
        let (mut replicate_ptr, mut replicate) = (Vec::new(), Vec::new());
        if listed("replicate.npy") {
            for rel in ["replicate_ptr.npy", "replicate.npy"] {
                check_file(dir, &manifest, rel)?;
            }
            replicate_ptr = read_u32(&dir.join("replicate_ptr.npy"), None)?;
            replicate = read_u32(&dir.join("replicate.npy"), None)?;
            let n = graph.num_vertices();
            let ok = replicate_ptr.len() == n + 1
                && replicate_ptr.first() == Some(&0)
                && replicate_ptr.windows(2).all(|w| w[0] <= w[1])
                && *replicate_ptr.last().unwrap() as usize == replicate.len();
            if !ok {
                return Err(PlanError::format(
                    dir.join("replicate_ptr.npy"),
                    format!(
                        "must hold {} ascending offsets from 0 to {} (replicate.npy's length); re-plan",
                        n + 1,
                        replicate.len()
                    ),
                ));
            }
        }
        let mut blocks = Vec::with_capacity(manifest.blocks.len());
        for (b, summary) in manifest.blocks.iter().enumerate() {
            let bd = block_dir(dir, b);
            for f in BLOCK_FILES {
                check_file(dir, &manifest, &format!("{}/{f}", block_rel(b)))?;
            }
            let sources = read_u32(&bd.join("sources.npy"), None)?;
            let fanout_ptr = read_u32(&bd.join("fanout_ptr.npy"), None)?;
            let fanout = read_u32(&bd.join("fanout.npy"), None)?;
            let path = bd.join("aggregators.npy");
            let (flat, cols) = read_u32_cols(&path, &[3, 4])?;
            let aggregators = flat
                .chunks_exact(cols)
                .map(|r| AggSlot {
                    dst: r[0],
                    base: r[1],
                    expected: r[2],
                    generation: r.get(3).copied().unwrap_or(0),
                })
                .collect();
            blocks.push(Block {
                level: summary.level,
                sources,
                fanout_ptr,
                fanout,
                aggregators,
            });
        }
        let plan = Plan {
            manifest,
            graph,
            partition,
            blocks,
            partials,
            replicate_ptr,
            replicate,
        };
        // Every consumer loads through here: none of them may index out of range, put a value
        // outside its wire field, or sum against a partition the blocks contradict.
        plan.check_structure().map_err(|e| e.under(dir))?;
        Ok(plan)
    }

    /// Reads worker `w`'s schedule files (what `sgnn-hostd` loads).
    pub fn load_worker_schedule(dir: &Path, w: u32) -> Result<WorkerSchedule, PlanError> {
        let manifest = Plan::load_manifest(dir)?;
        for f in WORKER_FILES {
            check_file(dir, &manifest, &format!("{}/{f}", worker_rel(w)))?;
        }
        let wd = worker_dir(dir, w);
        let sends = read_u32(&wd.join("sends.npy"), Some(2))?;
        let recv = read_u32(&wd.join("receives.npy"), Some(3))?;
        Ok(WorkerSchedule {
            worker: w,
            sends: sends.chunks_exact(2).map(|r| (r[0], r[1])).collect(),
            receives: recv.chunks_exact(3).map(|r| (r[0], r[1], r[2])).collect(),
        })
    }
}
