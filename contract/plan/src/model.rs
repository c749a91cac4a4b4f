//! The plan's data model: configuration, blocks, aggregator slots and worker schedules.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sgnn_graph::{Csr, VertexId};

use crate::PlanError;

/// Largest block id the wire format can carry (`Block_id` is 16 bits).
pub const MAX_BLOCKS: usize = 1 << 16;
/// Largest expected contribution count an aggregator can wait for (`Count` is 16 bits).
pub const MAX_EXPECTED: u32 = u16::MAX as u32;
/// Largest generation of a recycled aggregator row (the `aggregate` action's `generation`
/// is 16 bits).
pub const MAX_GENERATION: u32 = u16::MAX as u32;
/// Default cap on aggregators one source feeds in one block (`pass` is 8 bits: passes 0..=255).
pub const DEFAULT_MAX_PASSES: u32 = 256;

/// What the user asked the planner for. Stored verbatim in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanConfig {
    /// Number of workers (graph partitions), M.
    pub workers: u32,
    /// How the graph is partitioned over the workers (`metis`, `random`, `chunk` or `g3` in
    /// the manifest).
    pub partitioner: Partitioner,
    /// Switch memory available for aggregators, in bytes.
    pub switch_mem_bytes: u64,
    /// Bytes of one aggregator (the paper's 128 B: 32 lanes of int32).
    pub agg_bytes: u32,
    /// Length of one vertex's feature vector (values per layer).
    pub feature_dim: u32,
    /// Send order inside a block (`gamr`, `random` or `id` in the manifest).
    pub order: SendOrder,
    /// Seed for every randomised step, so a plan is reproducible.
    pub seed: u64,
    /// Most aggregators one source may feed in one block (one recirculation pass each).
    pub max_passes: u32,
    /// Leaf switches the workers are spread over, `workers / leaves` consecutive worker ids
    /// on each (leaf `l` holds workers `l * M / L .. (l + 1) * M / L`). With more than one,
    /// the partitioner places partitions on leaves: it first splits the graph into one part
    /// per leaf, then each leaf's part among its workers, so neighbours stay under one leaf
    /// (docs/planner.md). 1 (the default, and what plans written before this field load
    /// with) places nothing.
    #[serde(default = "one_leaf")]
    pub leaves: u32,
    /// How the cross-partition sums are delivered (`switch-ctl plan --aggregate`): `paper`
    /// (the paper's per-edge blocks; the default, and what plans written before this field load
    /// with; left out of the manifest so paper plans stay byte for byte what they were),
    /// `partials`, `multicast` or `auto` (delivery plans: blocks of destination rows,
    /// [`Plan::partials`] and [`Plan::replicas`]). docs/planner.md, "What the hosts and the
    /// switch run".
    #[serde(default, skip_serializing_if = "is_paper")]
    pub aggregate: AggregateMode,
    /// Aggregator recycling by live range for delivery plans (`switch-ctl plan --recycle`):
    /// `None` (the default, and what plans written before this field load with; left out of
    /// the manifest) keeps one aggregator row per destination for the whole block;
    /// `Some(slack)` lets destinations whose contributions are over share an aggregator, in
    /// blocks cut where the rows live at once would exceed the memory, with `slack` feature
    /// vectors of margin after a row's last contribution before its aggregator is reused
    /// (docs/planner.md, "Recycling by live range").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recycle_slack: Option<u64>,
}

fn one_leaf() -> u32 {
    1
}

/// What `switch-ctl plan --aggregate` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AggregateMode {
    /// Today's plan, the paper's design: every pair `R`, multi-level blocks.
    #[default]
    Paper,
    /// Every pair `M`.
    Multicast,
    /// Every pair `A`.
    Partials,
    /// `M`, `A` or `R` per pair, chosen to minimise the predicted time.
    Auto,
}

impl AggregateMode {
    /// Every mode, in report order.
    pub const ALL: [AggregateMode; 4] = [
        AggregateMode::Paper,
        AggregateMode::Multicast,
        AggregateMode::Partials,
        AggregateMode::Auto,
    ];

    /// The flag value and report name.
    pub fn name(self) -> &'static str {
        match self {
            AggregateMode::Paper => "paper",
            AggregateMode::Multicast => "multicast",
            AggregateMode::Partials => "partials",
            AggregateMode::Auto => "auto",
        }
    }

    /// Parses a flag value.
    pub fn parse(s: &str) -> Result<AggregateMode, PlanError> {
        AggregateMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                PlanError::Config(format!(
                    "unknown --aggregate `{s}`: use auto, paper, multicast or partials"
                ))
            })
    }
}

impl std::fmt::Display for AggregateMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl std::str::FromStr for AggregateMode {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Self, PlanError> {
        AggregateMode::parse(s)
    }
}

fn is_paper(m: &AggregateMode) -> bool {
    *m == AggregateMode::Paper
}

/// How the planner partitions the graph over the workers (`switch-ctl plan --partitioner`).
/// Plans and reports spell it as [`Partitioner::name`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Partitioner {
    /// METIS k-way (minimum edge cut, balanced vertex counts).
    Metis,
    /// Vertices dealt to workers in a seeded random order (balanced, locality-blind).
    Random,
    /// Contiguous id ranges of equal size.
    Chunk,
    /// G3's locality-aware iterative partitioning: METIS with two balance constraints (vertices
    /// and degree), then swaps between the partitions with most and fewest remote vertices.
    G3,
}

impl Partitioner {
    /// Every partitioner, in the order the flag's help lists them.
    pub const ALL: [Partitioner; 4] = [
        Partitioner::Metis,
        Partitioner::Random,
        Partitioner::Chunk,
        Partitioner::G3,
    ];

    /// The flag value, and the name in plans and reports.
    pub fn name(self) -> &'static str {
        match self {
            Partitioner::Metis => "metis",
            Partitioner::Random => "random",
            Partitioner::Chunk => "chunk",
            Partitioner::G3 => "g3",
        }
    }
}

impl fmt::Display for Partitioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Partitioner {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Self, PlanError> {
        Partitioner::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                PlanError::Config(format!(
                    "unknown partitioner {s:?}: use metis, random, chunk or g3"
                ))
            })
    }
}

/// How the sources of a block are ordered (`switch-ctl plan --order`). Plans and reports spell
/// it as [`SendOrder::name`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendOrder {
    /// Graph-aware multicast reordering: priority BFS, highest degree first (paper 3.2).
    Gamr,
    /// Seeded random order (the strawman's graph-agnostic order).
    Random,
    /// Ascending vertex id.
    Id,
}

impl SendOrder {
    /// Every order, in the order the flag's help lists them.
    pub const ALL: [SendOrder; 3] = [SendOrder::Gamr, SendOrder::Random, SendOrder::Id];

    /// The flag value, and the name in plans and reports.
    pub fn name(self) -> &'static str {
        match self {
            SendOrder::Gamr => "gamr",
            SendOrder::Random => "random",
            SendOrder::Id => "id",
        }
    }
}

impl fmt::Display for SendOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for SendOrder {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Self, PlanError> {
        SendOrder::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| {
                PlanError::Config(format!("unknown send order {s:?}: use gamr, random or id"))
            })
    }
}

/// One pre-aggregated partial of a delivery plan: worker `sender` sums its own neighbours of
/// vertex `dst` (a vertex of another worker) and sends the sum as one contribution, under the
/// virtual source id `num_vertices + k` for the `k`-th partial ([`Plan::partials`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    /// The vertex whose aggregate the partial feeds.
    pub dst: VertexId,
    /// The worker that computes and sends it.
    pub sender: u32,
}

impl PlanConfig {
    /// Values (int32 lanes) one aggregator holds.
    pub fn lanes_per_aggregator(&self) -> u32 {
        self.agg_bytes / 4
    }

    /// Aggregators one vertex's feature vector occupies: `ceil(feature_dim / lanes)`.
    pub fn segments(&self) -> u32 {
        self.feature_dim.div_ceil(self.lanes_per_aggregator())
    }

    /// Aggregators the switch memory holds.
    pub fn aggregators(&self) -> u64 {
        self.switch_mem_bytes / self.agg_bytes as u64
    }

    /// Destination vertices one block may hold: every destination takes `segments()` aggregators.
    pub fn block_capacity(&self) -> u64 {
        self.aggregators() / self.segments() as u64
    }

    /// Checks the configuration on its own (the graph is checked by the planner).
    pub fn validate(&self) -> Result<(), PlanError> {
        let bad = |m: String| Err(PlanError::Config(m));
        if self.workers < 2 {
            return bad(format!(
                "--workers must be at least 2 (got {}): with one worker nothing crosses the network",
                self.workers
            ));
        }
        if self.leaves == 0 {
            return bad(
                "--leaves must be at least 1 (1 = one switch, or no placement on leaves)".into(),
            );
        }
        if !self.workers.is_multiple_of(self.leaves) {
            let near = (1..=self.leaves.min(self.workers))
                .rev()
                .find(|l| self.workers.is_multiple_of(*l))
                .unwrap_or(1);
            return bad(format!(
                "--leaves {} does not divide --workers {}: every leaf holds the same number of workers (workers / leaves = {:.2}); use --leaves {near}, or a --workers that is a multiple of {}",
                self.leaves,
                self.workers,
                self.workers as f64 / self.leaves as f64,
                self.leaves
            ));
        }
        if self.agg_bytes < 4 || !self.agg_bytes.is_multiple_of(4) {
            return bad(format!(
                "--agg-bytes must be a positive multiple of 4 (one int32 lane), got {}",
                self.agg_bytes
            ));
        }
        if self.feature_dim == 0 {
            return bad("--feature-dim must be at least 1".into());
        }
        if self.max_passes == 0 || self.max_passes > DEFAULT_MAX_PASSES {
            return bad(format!(
                "max passes must be in 1..={DEFAULT_MAX_PASSES} (the pass field is 8 bits), got {}",
                self.max_passes
            ));
        }
        if self.block_capacity() < 2 {
            return bad(format!(
                "--switch-mem {} B holds {} aggregators of {} B, but one edge needs 2 destinations x {} segments = {} aggregators; raise --switch-mem to at least {} B or lower --feature-dim",
                self.switch_mem_bytes,
                self.aggregators(),
                self.agg_bytes,
                self.segments(),
                2 * self.segments(),
                2 * self.segments() as u64 * self.agg_bytes as u64
            ));
        }
        Ok(())
    }
}

/// One aggregator allocation: a destination vertex and the `segments` consecutive aggregators
/// starting at `base` that sum its in-block remote contributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AggSlot {
    /// Destination vertex.
    pub dst: VertexId,
    /// First aggregator index; segment `s` uses `base + s`.
    pub base: u32,
    /// Contributions (one per in-block remote neighbour) that complete the aggregate.
    pub expected: u32,
    /// Generation of the aggregators at `base` this row uses: 0 unless the plan recycles
    /// aggregators by live range (`switch-ctl plan --recycle`), where rows sharing `base` in one
    /// block are numbered 0, 1, 2, ... in send order. The switch bypasses to the host a
    /// contribution for an older generation than the one its aggregator holds, so a late or
    /// resent contribution never lands in a recycled aggregator.
    #[serde(default)]
    pub generation: u32,
}

/// One block: a set of cross-partition edges whose destinations fit the switch at once.
///
/// Both directions of an undirected cross edge are served by the same block. The switch table
/// of the block maps `(block, source, pass)` to `aggregators[fanout[fanout_ptr[i] + pass]]`
/// for the `i`-th source; sources are listed in send order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// Level of the multi-level partitioning this block came from (0 = first split).
    pub level: u32,
    /// Source vertices in send order.
    pub sources: Vec<VertexId>,
    /// `fanout_ptr[i]..fanout_ptr[i+1]` indexes `fanout` for `sources[i]`.
    pub fanout_ptr: Vec<u32>,
    /// Aggregator slot (row of `aggregators`) of each pass, in pass order.
    pub fanout: Vec<u32>,
    /// Aggregator allocation, one row per destination vertex.
    pub aggregators: Vec<AggSlot>,
}

impl Block {
    /// Aggregator rows `sources[i]` feeds, one per recirculation pass.
    pub fn passes(&self, i: usize) -> &[u32] {
        &self.fanout[self.fanout_ptr[i] as usize..self.fanout_ptr[i + 1] as usize]
    }

    /// Directed contributions the block serves (twice its undirected edges).
    pub fn num_contributions(&self) -> u64 {
        self.fanout.len() as u64
    }

    /// Aggregators the block occupies at its peak.
    pub fn aggregators_used(&self, segments: u32) -> u64 {
        if self.aggregators.iter().all(|a| a.generation == 0) {
            return self.aggregators.len() as u64 * segments as u64;
        }
        // Recycled rows share their aggregators: count each first aggregator once.
        let mut bases: Vec<u32> = self.aggregators.iter().map(|a| a.base).collect();
        bases.sort_unstable();
        bases.dedup();
        bases.len() as u64 * segments as u64
    }

    /// Largest number of passes any source needs.
    pub fn max_passes(&self) -> u32 {
        (0..self.sources.len())
            .map(|i| self.passes(i).len() as u32)
            .max()
            .unwrap_or(0)
    }

    /// A short summary for the manifest.
    pub fn summary(&self, id: usize, segments: u32) -> BlockSummary {
        BlockSummary {
            id: id as u32,
            level: self.level,
            sources: self.sources.len() as u64,
            destinations: self.aggregators.len() as u64,
            edges: self.num_contributions() / 2,
            aggregators_used: self.aggregators_used(segments),
            max_passes: self.max_passes(),
        }
    }
}

/// Per-block facts kept in the manifest so tools can read a plan's shape without its arrays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSummary {
    /// Block id (position in the send sequence).
    pub id: u32,
    /// Multi-level partitioning level.
    pub level: u32,
    /// Source vertices sent in this block.
    pub sources: u64,
    /// Destination vertices aggregated in this block.
    pub destinations: u64,
    /// Undirected cross edges served.
    pub edges: u64,
    /// Aggregators occupied (destinations x segments).
    pub aggregators_used: u64,
    /// Most recirculation passes of one source.
    pub max_passes: u32,
}

/// What the manifest says about the graph the plan was made for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphSummary {
    /// How the graph was given (`--graph`).
    pub source: String,
    /// Vertex count.
    pub num_vertices: u64,
    /// Undirected edge count after cleaning.
    pub num_edges: u64,
    /// FNV-1a fingerprint of the CSR arrays, as 16 hex digits.
    pub fingerprint: String,
    /// Self-loops dropped while reading.
    pub self_loops_removed: u64,
    /// Duplicate edges dropped while reading.
    pub duplicates_removed: u64,
}

/// `plan.json`: the plan's header, readable without loading any array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`crate::FORMAT_NAME`].
    pub format: String,
    /// [`crate::FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// Tool and version that wrote the plan.
    pub created_by: String,
    /// The graph.
    pub graph: GraphSummary,
    /// The request.
    pub config: PlanConfig,
    /// Derived sizes, repeated here so readers need no arithmetic.
    pub segments: u32,
    /// Aggregators the switch memory holds.
    pub aggregators: u64,
    /// Fixed-point fraction bits hosts use for values, chosen for the largest expected count.
    pub frac_bits: u8,
    /// Largest absolute feature value the fixed-point scale was chosen for.
    pub max_abs_value: f32,
    /// Per-block summaries, in send order.
    pub blocks: Vec<BlockSummary>,
    /// Integrity: the FNV-1a 64-bit digest (16 hex digits) of every array file, by path
    /// relative to the plan directory, written by [`Plan::save`] and checked by every reader
    /// before it parses a file. Any one-byte change of a file changes its digest. Empty in
    /// plans written before digests existed (then nothing is checked).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub files: std::collections::BTreeMap<String, String>,
    /// The digest of this manifest itself: of its pretty JSON with this field empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    /// Set when this plan is another plan split over several cores per worker by feature
    /// columns (`switch-ctl plan --cores N`, [`ColumnSplit`]); absent in every other plan,
    /// and in plans written before splits existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<ColumnSplit>,
}

/// What a plan split by columns (`switch-ctl plan --cores N`; docs/host.md, "One worker on
/// several cores") is made of. The original plan has `workers` workers, `vertices` vertices
/// and `feature_dim` values per vertex. The split plan has `workers * cores` workers, the
/// graph `cores` times over, and `feature_dim / cores` values per vertex:
///
/// - split worker `x` is core `x % cores` of original worker `x / cores`;
/// - split vertex `k * vertices + v` is copy `k` of vertex `v`: it carries its columns
///   `k * feature_dim / cores ..` `(k + 1) * feature_dim / cores`, and core `k` of `v`'s
///   worker owns it;
/// - copy `k` of every block row uses the `k`-th `segments / cores` of the row's aggregators.
///
/// The switch sees `workers * cores` workers; every sum stays the same column for column,
/// since a column's sum never mixes with another's, and the links carry the same frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnSplit {
    /// Cores (split workers) per original worker.
    pub cores: u32,
    /// Workers of the original plan.
    pub workers: u32,
    /// Vertices of the original graph.
    pub vertices: u64,
    /// Values per vertex of the original plan.
    pub feature_dim: u32,
}

impl ColumnSplit {
    /// The original worker split worker `x` runs for.
    pub fn machine(&self, x: u32) -> u32 {
        x / self.cores
    }

    /// Which core of its machine split worker `x` is: the copy of the graph it owns.
    pub fn core(&self, x: u32) -> u32 {
        x % self.cores
    }

    /// Values per vertex of one copy.
    pub fn copy_dim(&self) -> u32 {
        self.feature_dim / self.cores
    }

    /// The original vertices, the original values per vertex, and one copy's.
    fn sizes(&self) -> (usize, usize, usize) {
        (
            self.vertices as usize,
            self.feature_dim as usize,
            self.copy_dim() as usize,
        )
    }

    /// The split plan's `[cores * vertices, feature_dim / cores]` features of the original
    /// `[vertices, feature_dim]` ones (row-major): row `k * vertices + v` is columns
    /// `k * d .. (k + 1) * d` of row `v`, `d = feature_dim / cores`.
    pub fn split_rows(&self, original: &[f32]) -> Vec<f32> {
        let (n, dim, d) = self.sizes();
        assert_eq!(
            original.len(),
            n * dim,
            "features must be [vertices, feature_dim]"
        );
        let mut out = Vec::with_capacity(original.len());
        for k in 0..self.cores as usize {
            for v in 0..n {
                out.extend_from_slice(&original[v * dim + k * d..v * dim + (k + 1) * d]);
            }
        }
        out
    }

    /// The inverse of [`ColumnSplit::split_rows`]: the original `[vertices, feature_dim]`
    /// rows of the split plan's rows.
    pub fn join_rows(&self, split: &[f32]) -> Vec<f32> {
        let (n, dim, d) = self.sizes();
        assert_eq!(
            split.len(),
            n * dim,
            "rows must be [cores * vertices, feature_dim / cores]"
        );
        let mut out = vec![0.0; n * dim];
        for k in 0..self.cores as usize {
            for v in 0..n {
                let row = &split[(k * n + v) * d..(k * n + v + 1) * d];
                out[v * dim + k * d..v * dim + (k + 1) * d].copy_from_slice(row);
            }
        }
        out
    }
}

/// FNV-1a, 64 bits, as 16 hex digits: the plan's file digest. It detects corruption (every
/// one-byte change of a file of unchanged length changes it, since each step is a bijection
/// of the state), not tampering.
pub fn digest_bytes(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// What one worker needs from a plan: what it sends and what it waits for, block by block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerSchedule {
    /// Worker id.
    pub worker: u32,
    /// `(block, source)` in send order (blocks ascending, planned order inside each block).
    pub sends: Vec<(u32, VertexId)>,
    /// `(block, destination, expected contributions)` of the aggregates this worker receives.
    pub receives: Vec<(u32, VertexId, u32)>,
}

/// A complete plan: the graph, its partition, and the blocks in send order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Header.
    pub manifest: Manifest,
    /// The graph (stored in the plan so hosts and tools need nothing else).
    pub graph: Csr,
    /// Worker of each vertex.
    pub partition: Vec<u32>,
    /// Blocks in send order; the index is the block id.
    pub blocks: Vec<Block>,
    /// Pre-aggregated partials (empty in paper plans): the `k`-th is the block source id
    /// `num_vertices + k` ([`Plan::owner`], [`Plan::partial_terms`]).
    pub partials: Vec<Partial>,
    /// Raw features replicated by the switch (`M`, and the raw half of `C`): the workers
    /// vertex `u`'s raw frame goes to are `replicate[replicate_ptr[u]..replicate_ptr[u + 1]]`
    /// (ascending); each adds it to all of its own neighbours of `u`. Both empty when no
    /// vertex is replicated ([`Plan::replicas`]).
    pub replicate_ptr: Vec<u32>,
    /// See `replicate_ptr`.
    pub replicate: Vec<u32>,
}

/// Multicast group id of the first replication set ([`Plan::replica_groups`]); group 1 is the
/// block-advance group of every worker.
pub const FIRST_REPLICA_GROUP: u32 = 2;

/// The distinct worker sets raw frames are replicated to, numbered from
/// [`FIRST_REPLICA_GROUP`] in the order the blocks first use them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaGroups {
    /// Worker set of group `FIRST_REPLICA_GROUP + i`.
    pub sets: Vec<Vec<u32>>,
    /// Vertex -> its group id.
    pub of_vertex: std::collections::HashMap<VertexId, u32>,
}

impl Plan {
    /// The schedule of worker `w`, derived from the blocks and the partition.
    pub fn worker_schedule(&self, w: u32) -> WorkerSchedule {
        let mut s = WorkerSchedule {
            worker: w,
            ..WorkerSchedule::default()
        };
        for (b, block) in self.blocks.iter().enumerate() {
            for &src in &block.sources {
                if self.owner(src) == Some(w) {
                    s.sends.push((b as u32, src));
                }
            }
            for slot in &block.aggregators {
                if self.partition[slot.dst as usize] == w {
                    s.receives.push((b as u32, slot.dst, slot.expected));
                }
            }
        }
        s
    }

    /// The worker that sends block source `src`: a vertex's owner, or a partial's sender
    /// (`src = num_vertices + k`); `None` for an id that is neither.
    pub fn owner(&self, src: u32) -> Option<u32> {
        let n = self.partition.len();
        match (src as usize).checked_sub(n) {
            None => Some(self.partition[src as usize]),
            Some(k) => self.partials.get(k).map(|p| p.sender),
        }
    }

    /// The partial of block source `src`, if it is one.
    pub fn partial(&self, src: u32) -> Option<Partial> {
        (src as usize)
            .checked_sub(self.partition.len())
            .and_then(|k| self.partials.get(k).copied())
    }

    /// The vertices a partial sums: its sender's own neighbours of its destination that are
    /// not replicated raw to the destination's worker (those reach it by themselves; the cover
    /// delivery `C` splits a pair's edges this way), ascending.
    pub fn partial_terms(&self, p: Partial) -> impl Iterator<Item = VertexId> + '_ {
        let to = self.partition[p.dst as usize];
        self.graph
            .neighbors(p.dst)
            .iter()
            .copied()
            .filter(move |&u| {
                self.partition[u as usize] == p.sender && !self.replicas(u).contains(&to)
            })
    }

    /// The workers vertex `u`'s raw frame is replicated to (empty for most plans).
    pub fn replicas(&self, u: VertexId) -> &[u32] {
        let u = u as usize;
        if u + 1 >= self.replicate_ptr.len() {
            return &[];
        }
        let (lo, hi) = (
            self.replicate_ptr[u] as usize,
            self.replicate_ptr[u + 1] as usize,
        );
        self.replicate.get(lo..hi).unwrap_or(&[])
    }

    /// The multicast groups the replicated raw frames need.
    pub fn replica_groups(&self) -> ReplicaGroups {
        let mut g = ReplicaGroups::default();
        let mut ids: std::collections::HashMap<&[u32], u32> = std::collections::HashMap::new();
        for b in &self.blocks {
            for &u in &b.sources {
                let set = self.replicas(u);
                if set.is_empty() {
                    continue;
                }
                let next = FIRST_REPLICA_GROUP + g.sets.len() as u32;
                let id = *ids.entry(set).or_insert_with(|| {
                    g.sets.push(set.to_vec());
                    next
                });
                g.of_vertex.insert(u, id);
            }
        }
        g
    }

    /// Number of workers.
    pub fn workers(&self) -> u32 {
        self.manifest.config.workers
    }

    /// The shape `[rows, columns]` of the job's features for `dim` values per vertex of this
    /// plan: its own vertices, or for a plan split over cores ([`ColumnSplit`]) the unsplit
    /// job's, `[vertices, dim * cores]`.
    pub fn job_shape(&self, dim: usize) -> (usize, usize) {
        match self.manifest.split {
            Some(c) => (c.vertices as usize, dim * c.cores as usize),
            None => (self.graph.num_vertices(), dim),
        }
    }

    /// The job's features (of [`Plan::job_shape`]) as this plan's rows: as they are, or
    /// shared out over the cores of a split plan ([`ColumnSplit::split_rows`]).
    pub fn job_rows(&self, features: Vec<f32>) -> Vec<f32> {
        match self.manifest.split {
            Some(c) => c.split_rows(&features),
            None => features,
        }
    }

    /// The plan's identity as the switch knows it: a 32-bit FNV-1a digest of everything the
    /// switch's tables and the hosts' schedules are built from (the graph's fingerprint, the
    /// partition, the sizes, and every block's sources, passes and aggregator slots), never 0
    /// (0 is a switch with no plan loaded). `switch-ctl load` installs it in `switch_config`,
    /// the switch writes it into its answer to a daemon's start-up probe, and the daemon refuses
    /// to run if it differs from its own plan's (docs/switch-interface.md, "Plan tag").
    /// The tool version and the graph's file name are left out: re-planning the same graph
    /// with the same options gives the same tag.
    pub fn tag(&self) -> u32 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |x: u64| {
            for b in x.to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        for b in self.manifest.graph.fingerprint.bytes() {
            eat(b as u64);
        }
        eat(self.workers() as u64);
        eat(self.manifest.segments as u64);
        eat(self.manifest.aggregators);
        eat(self.manifest.frac_bits as u64);
        for &p in &self.partition {
            eat(p as u64);
        }
        eat(self.blocks.len() as u64);
        for b in &self.blocks {
            eat(b.sources.len() as u64);
            for &v in &b.sources {
                eat(v as u64);
            }
            for &p in &b.fanout_ptr {
                eat(p as u64);
            }
            for &f in &b.fanout {
                eat(f as u64);
            }
            for a in &b.aggregators {
                eat(((a.dst as u64) << 32) | a.base as u64);
                eat(a.expected as u64);
            }
        }
        // Paper plans have none, so their tag is what it was before partials existed.
        if !self.partials.is_empty() {
            eat(self.partials.len() as u64);
            for p in &self.partials {
                eat(((p.dst as u64) << 32) | p.sender as u64);
            }
        }
        if !self.replicate.is_empty() {
            eat(self.replicate.len() as u64);
            for &x in self.replicate_ptr.iter().chain(&self.replicate) {
                eat(x as u64);
            }
        }
        match (h ^ (h >> 32)) as u32 {
            0 => 1,
            t => t,
        }
    }

    /// The workers other than `u`'s own that hold a neighbour of `u` (sorted, without
    /// repeats), written into `out`: where a boundary vertex's feature has to go.
    pub fn remote_parts(&self, u: u32, out: &mut Vec<u32>) {
        out.clear();
        let pu = self.partition[u as usize];
        out.extend(
            self.graph
                .neighbors(u)
                .iter()
                .map(|&v| self.partition[v as usize])
                .filter(|&p| p != pu),
        );
        out.sort_unstable();
        out.dedup();
    }

    /// Number of multi-level partitioning levels used.
    pub fn levels(&self) -> u32 {
        self.blocks.iter().map(|b| b.level + 1).max().unwrap_or(0)
    }

    /// How the partition's cut falls on the leaf switches of [`PlanConfig::leaves`]: the
    /// edges between workers, and those of them between workers under different leaves.
    pub fn leaf_cut(&self) -> LeafCut {
        let c = &self.manifest.config;
        let per = c.workers / c.leaves;
        let p = &self.partition;
        let (mut cross, mut cross_leaf) = (0u64, 0u64);
        for (u, v) in self.graph.edges() {
            let (a, b) = (p[u as usize], p[v as usize]);
            if a != b {
                cross += 1;
                if a / per != b / per {
                    cross_leaf += 1;
                }
            }
        }
        LeafCut {
            workers_per_leaf: per,
            cross_edges: cross,
            cross_leaf_edges: cross_leaf,
        }
    }
}

/// A plan's cut on leaf switches ([`Plan::leaf_cut`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafCut {
    /// Workers under each leaf (`workers / leaves`; leaf `l` holds workers
    /// `l * per .. (l + 1) * per`).
    pub workers_per_leaf: u32,
    /// Edges between vertices of different workers.
    pub cross_edges: u64,
    /// Of those, the edges between workers under different leaves: what a leaf-spine
    /// fabric's uplinks carry.
    pub cross_leaf_edges: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(workers: u32, leaves: u32) -> PlanConfig {
        PlanConfig {
            workers,
            partitioner: Partitioner::Metis,
            switch_mem_bytes: 1_000_000,
            agg_bytes: 128,
            feature_dim: 128,
            order: SendOrder::Gamr,
            seed: 1,
            max_passes: DEFAULT_MAX_PASSES,
            leaves,
            aggregate: AggregateMode::Paper,
            recycle_slack: None,
        }
    }

    fn err(c: &PlanConfig) -> String {
        c.validate().unwrap_err().to_string()
    }

    #[test]
    fn leaves_must_divide_the_workers_and_be_positive() {
        for (w, l) in [(8, 1), (8, 2), (8, 4), (8, 8), (6, 3)] {
            config(w, l).validate().unwrap();
        }
        let e = err(&config(8, 0));
        assert!(e.contains("--leaves must be at least 1"), "{e}");
        let e = err(&config(8, 3));
        assert!(
            e.contains("--leaves 3 does not divide --workers 8") && e.contains("use --leaves 2"),
            "{e}"
        );
        // More leaves than workers cannot divide them either; the hint is a divisor.
        let e = err(&config(4, 6));
        assert!(
            e.contains("does not divide") && e.contains("use --leaves 4"),
            "{e}"
        );
        let e = err(&config(9, 2));
        assert!(e.contains("use --leaves 1"), "{e}");
    }

    #[test]
    fn manifests_without_leaves_load_with_one_leaf() {
        let old = r#"{"workers": 8, "partitioner": "metis", "switch_mem_bytes": 10000000,
            "agg_bytes": 128, "feature_dim": 128, "order": "gamr", "seed": 1,
            "max_passes": 256}"#;
        let c: PlanConfig = serde_json::from_str(old).unwrap();
        assert_eq!(c, config(8, 1).with_mem(10_000_000));
        let placed = config(8, 4);
        let back: PlanConfig =
            serde_json::from_str(&serde_json::to_string(&placed).unwrap()).unwrap();
        assert_eq!(back, placed);
    }

    /// Manifests on disk spell the partitioner, the order and the delivery as the strings
    /// these fields held before they were enums; every such manifest still loads, writes back
    /// the same strings, and the flags take the same spellings.
    #[test]
    fn manifests_keep_their_partitioner_order_and_delivery_strings() {
        let partitioners = ["metis", "random", "chunk", "g3"];
        let orders = ["gamr", "random", "id"];
        let deliveries = ["paper", "partials", "multicast", "auto"];
        for p in partitioners {
            for o in orders {
                for d in deliveries {
                    let text = format!(
                        r#"{{"workers": 8, "partitioner": "{p}", "switch_mem_bytes": 10000000,
                        "agg_bytes": 128, "feature_dim": 128, "order": "{o}", "seed": 1,
                        "max_passes": 256, "leaves": 1, "aggregate": "{d}"}}"#
                    );
                    let c: PlanConfig = serde_json::from_str(&text).unwrap();
                    assert_eq!(c.partitioner, p.parse::<Partitioner>().unwrap());
                    assert_eq!(c.order, o.parse::<SendOrder>().unwrap());
                    assert_eq!(c.aggregate, d.parse::<AggregateMode>().unwrap());
                    assert_eq!(
                        (c.partitioner.to_string(), c.order.to_string()),
                        (p.to_string(), o.to_string())
                    );
                    assert_eq!(c.aggregate.to_string(), d);
                    let back: serde_json::Value = serde_json::to_value(&c).unwrap();
                    assert_eq!(back["partitioner"], p);
                    assert_eq!(back["order"], o);
                    // `paper` is left out of the manifest, as it always was.
                    match d {
                        "paper" => assert!(back.get("aggregate").is_none()),
                        _ => assert_eq!(back["aggregate"], d),
                    }
                }
            }
        }
        assert_eq!(
            serde_json::to_string(&config(8, 1)).unwrap(),
            r#"{"workers":8,"partitioner":"metis","switch_mem_bytes":1000000,"agg_bytes":128,"feature_dim":128,"order":"gamr","seed":1,"max_passes":256,"leaves":1}"#
        );
        assert_eq!(Partitioner::ALL.map(Partitioner::name), partitioners);
        assert_eq!(SendOrder::ALL.map(SendOrder::name), orders);
        // Padding applies as it did to the strings.
        assert_eq!(format!("[{:<6}]", Partitioner::G3), "[g3    ]");
        assert_eq!(
            "METIS".parse::<Partitioner>().unwrap_err().to_string(),
            "unknown partitioner \"METIS\": use metis, random, chunk or g3"
        );
        assert_eq!(
            "bfs".parse::<SendOrder>().unwrap_err().to_string(),
            "unknown send order \"bfs\": use gamr, random or id"
        );
        let bad = r#"{"workers": 8, "partitioner": "kahip", "switch_mem_bytes": 10000000,
            "agg_bytes": 128, "feature_dim": 128, "order": "gamr", "seed": 1, "max_passes": 256}"#;
        let e = serde_json::from_str::<PlanConfig>(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `kahip`"), "{e}");
    }

    impl PlanConfig {
        fn with_mem(mut self, m: u64) -> PlanConfig {
            self.switch_mem_bytes = m;
            self
        }
    }
}
