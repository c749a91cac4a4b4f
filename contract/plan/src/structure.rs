//! The structural checks every reader of a plan runs at load ([`Plan::check_structure`]).
//!
//! Digests catch corruption, not a planner bug or a hand edit with the digests recomputed.
//! These checks make sure no value of a loaded plan is used as an index out of range, put on
//! the wire outside its field, or contradicts the partition, so `switch-ctl load`,
//! `softswitch --plan`, `sgnn-hostd --plan` and `switch-ctl plan --verify` refuse such a plan
//! with the file and the field instead of panicking or summing the wrong values. They are
//! linear in the plan's size (one pass over the partition, the blocks and, for paper plans,
//! the graph) and cost a few percent of [`Plan::load`] (docs/formats.md, "Structural checks").
//! [`crate::verify`] runs them first, then the deeper invariants (coverage, graph edges,
//! disjoint aggregator ranges, summaries).
//!
//! Checked, each failing as [`PlanError::Structure`]:
//! - `plan.json`: `frac_bits` in `0..=30` (the wire's `Frac_bits`), the configuration valid
//!   ([`crate::PlanConfig::validate`]), at most 65,536 workers (16-bit `Worker_id`), `segments`
//!   and `aggregators` derived from the configuration, the vertex and edge counts those of the
//!   graph, one summary per block and at most [`MAX_BLOCKS`] blocks;
//! - `partition.npy`: one entry per vertex, each a worker;
//! - `partials.npy`: destinations are vertices, senders are workers other than the
//!   destination's;
//! - `replicate_ptr.npy`/`replicate.npy`: ascending offsets, workers other than the vertex's;
//! - every block: sources are vertices or partials; `fanout_ptr` has one more entry than the
//!   sources, starts at 0, never decreases and ends at `fanout`'s length; every `fanout` entry
//!   is a row of `aggregators`; every row's destination is a vertex, its aggregators
//!   `[first, first + segments)` inside the switch, its expected count in `1..=65535` and equal
//!   to the passes that feed it, its generation within 16 bits; a partial feeds exactly its
//!   own destination's row;
//! - the partition agrees with the blocks: no contribution goes from a worker to its own
//!   vertex, and (paper plans) every vertex receives through the blocks exactly as many
//!   contributions as it has neighbours on other workers, so a vertex moved to another worker
//!   in `partition.npy` is refused.

use std::path::PathBuf;

use sgnn_wire::codec::FixedPoint;

use crate::model::AggregateMode;
use crate::model::{Plan, MAX_BLOCKS, MAX_EXPECTED, MAX_GENERATION};
use crate::PlanError;

fn bad<T>(
    path: impl Into<PathBuf>,
    field: impl Into<String>,
    message: impl Into<String>,
) -> Result<T, PlanError> {
    Err(PlanError::Structure {
        path: path.into(),
        field: field.into(),
        message: message.into(),
    })
}

/// Most workers a plan may have: `Worker_id` is 16 bits.
const MAX_WORKERS: u32 = 1 << 16;

impl Plan {
    /// Runs the structural checks of this module on the plan; [`Plan::load`] runs them on
    /// every plan it reads. Errors name the file (relative to the plan directory; `Plan::load`
    /// makes it the file's full path) and the field.
    pub fn check_structure(&self) -> Result<(), PlanError> {
        let m = &self.manifest;
        let cfg = &m.config;
        let n = self.graph.num_vertices();
        let manifest = "plan.json";

        if m.frac_bits > FixedPoint::MAX_FRAC_BITS {
            return bad(
                manifest,
                "frac_bits",
                format!(
                    "{} is outside 0..={} (the wire's Frac_bits: a lane is an int32, so more fraction bits overflow the sums)",
                    m.frac_bits,
                    FixedPoint::MAX_FRAC_BITS
                ),
            );
        }
        if let Err(e) = cfg.validate() {
            return bad(manifest, "config", e.to_string());
        }
        if cfg.workers > MAX_WORKERS {
            return bad(
                manifest,
                "config.workers",
                format!(
                    "{} workers do not fit the 16-bit Worker_id field (at most {MAX_WORKERS})",
                    cfg.workers
                ),
            );
        }
        if m.segments != cfg.segments() || m.aggregators != cfg.aggregators() {
            return bad(
                manifest,
                "segments",
                format!(
                    "segments {} and aggregators {} disagree with the configuration's {} and {}",
                    m.segments,
                    m.aggregators,
                    cfg.segments(),
                    cfg.aggregators()
                ),
            );
        }
        if m.graph.num_vertices != n as u64 || m.graph.num_edges != self.graph.num_edges() {
            return bad(
                manifest,
                "graph.num_vertices",
                format!(
                    "the manifest says {} vertices and {} edges, the graph files hold {n} and {}",
                    m.graph.num_vertices,
                    m.graph.num_edges,
                    self.graph.num_edges()
                ),
            );
        }
        // A plan split over cores: the original's sizes times the cores (checked products:
        // a manifest's values are not trusted to fit), so every reader may size the unsplit
        // job's features from them.
        if let Some(c) = m.split {
            if c.cores < 2
                || c.workers.checked_mul(c.cores) != Some(cfg.workers)
                || c.vertices.checked_mul(c.cores as u64) != Some(n as u64)
                || cfg.feature_dim.checked_mul(c.cores) != Some(c.feature_dim)
            {
                return bad(
                    manifest,
                    "split",
                    format!(
                        "split over {} cores of {} workers, {} vertices, {} values does not give this plan's {} workers, {n} vertices, {} values",
                        c.cores, c.workers, c.vertices, c.feature_dim, cfg.workers, cfg.feature_dim
                    ),
                );
            }
        }
        if self.blocks.len() != m.blocks.len() || self.blocks.len() > MAX_BLOCKS {
            return bad(
                manifest,
                "blocks",
                format!(
                    "{} block summaries for {} blocks (at most {MAX_BLOCKS}, the 16-bit Block_id)",
                    m.blocks.len(),
                    self.blocks.len()
                ),
            );
        }
        let ids = n as u64 + self.partials.len() as u64;
        if ids > u32::MAX as u64 {
            return bad(
                "partials.npy",
                "shape",
                format!(
                    "{n} vertices and {} partials need source ids beyond 32 bits",
                    self.partials.len()
                ),
            );
        }

        let workers = cfg.workers;
        let part = &self.partition;
        if part.len() != n {
            return bad(
                "partition.npy",
                "shape",
                format!("{} entries for {n} vertices", part.len()),
            );
        }
        if let Some(v) = part.iter().position(|&p| p >= workers) {
            return bad(
                "partition.npy",
                format!("[{v}]"),
                format!(
                    "vertex {v} is assigned to worker {}, but there are {workers} workers",
                    part[v]
                ),
            );
        }

        for (k, p) in self.partials.iter().enumerate() {
            if p.dst as usize >= n || p.sender >= workers || part[p.dst as usize] == p.sender {
                return bad(
                    "partials.npy",
                    format!("row {k}"),
                    format!(
                        "partial {k} names destination {} and sender {}: the destination must be a vertex (n = {n}) and the sender one of the {workers} workers other than the destination's",
                        p.dst, p.sender
                    ),
                );
            }
        }

        if !self.replicate_ptr.is_empty() || !self.replicate.is_empty() {
            let ptr = &self.replicate_ptr;
            let ok = ptr.len() == n + 1
                && ptr[0] == 0
                && ptr.windows(2).all(|w| w[0] <= w[1])
                && ptr[n] as usize == self.replicate.len();
            if !ok {
                return bad(
                    "replicate_ptr.npy",
                    "shape",
                    format!(
                        "must hold {} ascending offsets from 0 to {} (replicate.npy's length)",
                        n + 1,
                        self.replicate.len()
                    ),
                );
            }
            for u in 0..n {
                let set = &self.replicate[ptr[u] as usize..ptr[u + 1] as usize];
                for (k, &w) in set.iter().enumerate() {
                    if w >= workers || w == part[u] || (k > 0 && set[k - 1] >= w) {
                        return bad(
                            "replicate.npy",
                            format!("[{}]", ptr[u] as usize + k),
                            format!(
                                "vertex {u} (worker {}) is replicated to {set:?}: workers must be ascending, below {workers} and not its own",
                                part[u]
                            ),
                        );
                    }
                }
            }
        }

        let segments = cfg.segments() as u64;
        let switch_aggs = cfg.aggregators();
        let paper = cfg.aggregate == AggregateMode::Paper
            && self.partials.is_empty()
            && self.replicate.is_empty();
        // Contributions the blocks deliver to each vertex (paper plans).
        let mut received: Vec<u64> = if paper { vec![0; n] } else { Vec::new() };
        let mut fed: Vec<u32> = Vec::new();
        let mut row_worker: Vec<u32> = Vec::new();
        for (b, block) in self.blocks.iter().enumerate() {
            let file = |f: &str| format!("blocks/{b:05}/{f}");
            let (s, a, f) = (
                block.sources.len(),
                block.aggregators.len(),
                block.fanout.len(),
            );
            let ptr = &block.fanout_ptr;
            if ptr.len() != s + 1 || ptr[0] != 0 || ptr[s] as usize != f {
                return bad(
                    file("fanout_ptr.npy"),
                    "shape",
                    format!(
                        "block {b}: {} entries for {s} sources must be {} offsets from 0 to {f} (fanout.npy's length)",
                        ptr.len(),
                        s + 1
                    ),
                );
            }
            if let Some(i) = ptr.windows(2).position(|w| w[0] > w[1]) {
                return bad(
                    file("fanout_ptr.npy"),
                    format!("[{}]", i + 1),
                    format!(
                        "block {b}: fanout_ptr decreases at source {} ({} then {})",
                        block.sources[i],
                        ptr[i],
                        ptr[i + 1]
                    ),
                );
            }
            // The worker of each row's destination, the one value the passes below need.
            row_worker.clear();
            for (r, row) in block.aggregators.iter().enumerate() {
                let at = |col: &str| format!("row {r}, column {col}");
                if row.dst as usize >= n {
                    return bad(
                        file("aggregators.npy"),
                        at("0 (destination)"),
                        format!(
                            "block {b}: destination {} is not a vertex (n = {n})",
                            row.dst
                        ),
                    );
                }
                if row.base as u64 + segments > switch_aggs {
                    return bad(
                        file("aggregators.npy"),
                        at("1 (first aggregator)"),
                        format!(
                            "block {b}: destination {} uses aggregators {}..{}, beyond the switch's {switch_aggs}",
                            row.dst,
                            row.base,
                            row.base as u64 + segments
                        ),
                    );
                }
                if row.expected == 0 || row.expected > MAX_EXPECTED {
                    return bad(
                        file("aggregators.npy"),
                        at("2 (expected)"),
                        format!(
                            "block {b}: destination {} expects {} contributions; must be 1..={MAX_EXPECTED} (16-bit Count)",
                            row.dst, row.expected
                        ),
                    );
                }
                if row.generation > MAX_GENERATION {
                    return bad(
                        file("aggregators.npy"),
                        at("3 (generation)"),
                        format!(
                            "block {b}: destination {} has generation {}, beyond 16 bits",
                            row.dst, row.generation
                        ),
                    );
                }
                row_worker.push(part[row.dst as usize]);
            }
            fed.clear();
            fed.resize(a, 0);
            for (i, &src) in block.sources.iter().enumerate() {
                if src as u64 >= ids {
                    return bad(
                        file("sources.npy"),
                        format!("[{i}]"),
                        format!(
                            "block {b}: source {src} is neither a vertex (n = {n}) nor one of the {} partials",
                            self.partials.len()
                        ),
                    );
                }
                let partial = self.partial(src);
                let owner = match partial {
                    Some(p) => p.sender,
                    None => part[src as usize],
                };
                let (lo, hi) = (ptr[i] as usize, ptr[i + 1] as usize);
                if let Some(p) = partial {
                    if hi - lo != 1 || block.fanout[lo] as usize >= a {
                        return bad(
                            file("fanout.npy"),
                            format!("[{lo}]"),
                            format!(
                                "block {b}: partial {src} (worker {}'s sum for {}) must feed exactly one row, its destination's; it feeds {}",
                                p.sender,
                                p.dst,
                                hi - lo
                            ),
                        );
                    }
                    let dst = block.aggregators[block.fanout[lo] as usize].dst;
                    if dst != p.dst {
                        return bad(
                            file("fanout.npy"),
                            format!("[{lo}]"),
                            format!(
                                "block {b}: partial {src} (for {}) feeds the row of {dst}",
                                p.dst
                            ),
                        );
                    }
                }
                for (k, &row) in block.fanout[lo..hi].iter().enumerate() {
                    let Some(&to) = row_worker.get(row as usize) else {
                        return bad(
                            file("fanout.npy"),
                            format!("[{}]", lo + k),
                            format!(
                                "block {b}: source {src} feeds aggregator row {row}, but the block has {a} rows"
                            ),
                        );
                    };
                    if to == owner {
                        let dst = block.aggregators[row as usize].dst;
                        return bad(
                            "partition.npy",
                            format!("[{dst}]"),
                            format!(
                                "block {b}: source {src} (worker {owner}) feeds destination {dst} of the same worker: partition.npy and the blocks disagree (local edges never use the switch)"
                            ),
                        );
                    }
                    fed[row as usize] += 1;
                }
            }
            for (r, row) in block.aggregators.iter().enumerate() {
                if row.expected != fed[r] {
                    return bad(
                        file("aggregators.npy"),
                        format!("row {r}, column 2 (expected)"),
                        format!(
                            "block {b}: destination {} expects {} contributions but {} passes feed its row",
                            row.dst, row.expected, fed[r]
                        ),
                    );
                }
                if paper {
                    received[row.dst as usize] += row.expected as u64;
                }
            }
        }
        if paper {
            let (indptr, indices) = (self.graph.indptr(), self.graph.indices());
            for (v, &got) in received.iter().enumerate() {
                let pv = part[v];
                let cross: u64 = indices[indptr[v] as usize..indptr[v + 1] as usize]
                    .iter()
                    .map(|&u| (part[u as usize] != pv) as u64)
                    .sum();
                if got != cross {
                    let what = if got < cross {
                        "a cross edge into it is served by no block"
                    } else {
                        "the blocks feed it more than its cross edges"
                    };
                    return bad(
                        "partition.npy",
                        format!("[{v}]"),
                        format!(
                            "vertex {v} (worker {pv}) has {cross} neighbours on other workers, but the blocks deliver {got} contributions to it: {what}, or partition.npy and the blocks disagree"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        AggSlot, Block, GraphSummary, Manifest, Partitioner, PlanConfig, SendOrder,
    };
    use sgnn_graph::Csr;

    /// The path 0 - 1 - 2 - 3 over two workers (0, 1 | 2, 3): one cross edge, 1 - 2, served by
    /// one block whose sources 1 and 2 feed each other's rows.
    fn tiny() -> Plan {
        let graph = Csr::from_edges(4, &[(0, 1), (1, 2), (2, 3)]).0;
        let config = PlanConfig {
            workers: 2,
            partitioner: Partitioner::Chunk,
            switch_mem_bytes: 16 * 128,
            agg_bytes: 128,
            feature_dim: 32,
            order: SendOrder::Id,
            seed: 1,
            max_passes: crate::model::DEFAULT_MAX_PASSES,
            leaves: 1,
            aggregate: AggregateMode::Paper,
            recycle_slack: None,
        };
        let block = Block {
            level: 0,
            sources: vec![1, 2],
            fanout_ptr: vec![0, 1, 2],
            fanout: vec![0, 1],
            aggregators: vec![
                AggSlot {
                    dst: 2,
                    base: 0,
                    expected: 1,
                    generation: 0,
                },
                AggSlot {
                    dst: 1,
                    base: 1,
                    expected: 1,
                    generation: 0,
                },
            ],
        };
        let manifest = Manifest {
            format: crate::FORMAT_NAME.into(),
            version: crate::FORMAT_VERSION,
            created_by: "test".into(),
            graph: GraphSummary {
                source: "path".into(),
                num_vertices: 4,
                num_edges: graph.num_edges(),
                fingerprint: format!("{:016x}", graph.fingerprint()),
                self_loops_removed: 0,
                duplicates_removed: 0,
            },
            segments: config.segments(),
            aggregators: config.aggregators(),
            frac_bits: 16,
            max_abs_value: 1.0,
            blocks: vec![block.summary(0, config.segments())],
            files: Default::default(),
            digest: String::new(),
            split: None,
            config,
        };
        Plan {
            manifest,
            graph,
            partition: vec![0, 0, 1, 1],
            blocks: vec![block],
            partials: Vec::new(),
            replicate_ptr: Vec::new(),
            replicate: Vec::new(),
        }
    }

    /// The file and field of `plan`'s structural error; and `verify` refuses it too, without
    /// panicking (it runs the same checks first).
    fn refused(plan: &Plan) -> (String, String, String) {
        let e = plan.check_structure().unwrap_err();
        let shown = e.to_string();
        let PlanError::Structure { path, field, .. } = e else {
            panic!("expected a structural error, got {e:?}");
        };
        assert!(crate::verify(plan).is_err());
        (path.display().to_string(), field, shown)
    }

    #[test]
    fn the_tiny_plan_is_sound() {
        let p = tiny();
        p.check_structure().unwrap();
        assert_eq!(crate::verify(&p).unwrap().contributions, 2);
    }

    /// Each edit that once panicked a reader or gave wrong sums is refused, naming the file
    /// and the field.
    #[test]
    fn every_structural_fault_is_refused_naming_the_file_and_the_field() {
        type Edit = fn(&mut Plan);
        let cases: [(&str, Edit, &str, &str, &str); 13] = [
            // A non-monotone fanout_ptr (it panicked `plan --verify`, load and the daemons).
            (
                "fanout_ptr",
                |p| p.blocks[0].fanout_ptr = vec![0, 3, 2],
                "blocks/00000/fanout_ptr.npy",
                "[2]",
                "decreases",
            ),
            (
                "fanout_ptr length",
                |p| p.blocks[0].fanout_ptr = vec![0, 2],
                "blocks/00000/fanout_ptr.npy",
                "shape",
                "3 offsets",
            ),
            // An aggregator row id beyond the block's rows (it panicked the switch's tables).
            (
                "fanout",
                |p| p.blocks[0].fanout[1] = 7,
                "blocks/00000/fanout.npy",
                "[1]",
                "row 7",
            ),
            (
                "destination",
                |p| p.blocks[0].aggregators[0].dst = 9,
                "blocks/00000/aggregators.npy",
                "row 0, column 0 (destination)",
                "not a vertex",
            ),
            (
                "base",
                |p| p.blocks[0].aggregators[1].base = 16,
                "blocks/00000/aggregators.npy",
                "row 1, column 1 (first aggregator)",
                "beyond the switch's 16",
            ),
            (
                "expected",
                |p| p.blocks[0].aggregators[0].expected = 2,
                "blocks/00000/aggregators.npy",
                "row 0, column 2 (expected)",
                "1 passes feed",
            ),
            (
                "generation",
                |p| p.blocks[0].aggregators[0].generation = 70_000,
                "blocks/00000/aggregators.npy",
                "row 0, column 3 (generation)",
                "16 bits",
            ),
            (
                "source",
                |p| p.blocks[0].sources[1] = 99,
                "blocks/00000/sources.npy",
                "[1]",
                "neither a vertex",
            ),
            (
                "worker",
                |p| p.partition[0] = 5,
                "partition.npy",
                "[0]",
                "2 workers",
            ),
            // A vertex moved to the other worker: its contribution stays inside one worker.
            (
                "moved into",
                |p| p.partition[1] = 1,
                "partition.npy",
                "[2]",
                "same worker",
            ),
            // Moved away from its only cross neighbour's worker: edges no block serves.
            (
                "moved away",
                |p| p.partition[3] = 0,
                "partition.npy",
                "[2]",
                "deliver 1 contributions",
            ),
            // 31 fraction bits overflow the int32 lanes (sums were off by up to 32).
            (
                "frac_bits",
                |p| p.manifest.frac_bits = 31,
                "plan.json",
                "frac_bits",
                "0..=30",
            ),
            (
                "segments",
                |p| p.manifest.segments = 2,
                "plan.json",
                "segments",
                "disagree",
            ),
        ];
        for (what, edit, file, field, says) in cases {
            let mut p = tiny();
            edit(&mut p);
            let (got_file, got_field, shown) = refused(&p);
            assert_eq!(
                (got_file.as_str(), got_field.as_str()),
                (file, field),
                "{what}: {shown}"
            );
            assert!(
                shown.contains(says) && shown.contains(file),
                "{what}: {shown}"
            );
        }
    }
}
