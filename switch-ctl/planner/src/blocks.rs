//! Multi-level partitioning of the boundary graph into blocks (paper 3.3).
//!
//! The boundary graph (every cross-partition edge) is split with METIS into parts whose
//! destinations fit the switch's aggregators; each part's internal edges form a block, and the
//! edges METIS cut form the next level's graph, which is split the same way until every block
//! fits. A block *fits* when the vertices its edges touch need no more aggregators than the
//! switch has and no vertex has more in-block neighbours than the pass limit (one recirculation
//! pass per aggregator a source feeds; also the expected count of a destination). METIS is
//! asked for parts by size only; a part that fits by size but has hubs over the pass limit
//! keeps every edge it can and passes only the hubs' excess edges to the next level. Every edge
//! leaves a level either inside exactly one block or in the cut set, so every cross edge is
//! served by exactly one block. When METIS cannot make progress (it cuts every edge), a
//! greedy first-fit packing finishes the level.

use sgnn_graph::VertexId;

use crate::partition::{metis_kway_effort, MetisEffort};
use crate::PlanningError;

/// An undirected edge `(u, v)`.
pub type Edge = (VertexId, VertexId);

/// What a block may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockLimits {
    /// Destination vertices per block (aggregators / segments).
    pub vertices: u64,
    /// In-block neighbours per vertex (pass limit, and the 16-bit expected count).
    pub degree: u32,
}

/// One block's undirected edges, `(u, v)` with `u < v`, and its level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeBlock {
    /// Multi-level partitioning level.
    pub level: u32,
    /// Edges served by the block.
    pub edges: Vec<(VertexId, VertexId)>,
}

/// Fraction of the capacity METIS aims for, leaving room for its 3% imbalance.
const TARGET_FILL: f64 = 0.95;

/// A compact graph over the vertices an edge set touches.
struct Compact {
    /// Local id -> global id.
    global: Vec<VertexId>,
    xadj: Vec<metis::Idx>,
    adjncy: Vec<metis::Idx>,
    /// Local endpoints of every input edge, in input order.
    local_edges: Vec<(u32, u32)>,
}

impl Compact {
    fn new(edges: &[(VertexId, VertexId)], local_of: &mut [u32]) -> Compact {
        let mut global = Vec::new();
        let mut local_edges = Vec::with_capacity(edges.len());
        for &(u, v) in edges {
            for x in [u, v] {
                if local_of[x as usize] == u32::MAX {
                    local_of[x as usize] = global.len() as u32;
                    global.push(x);
                }
            }
            local_edges.push((local_of[u as usize], local_of[v as usize]));
        }
        for &g in &global {
            local_of[g as usize] = u32::MAX;
        }
        let n = global.len();
        let mut deg = vec![0 as metis::Idx; n + 1];
        for &(a, b) in &local_edges {
            deg[a as usize + 1] += 1;
            deg[b as usize + 1] += 1;
        }
        for i in 0..n {
            deg[i + 1] += deg[i];
        }
        let xadj = deg;
        let mut fill: Vec<metis::Idx> = xadj[..n].to_vec();
        let mut adjncy = vec![0 as metis::Idx; xadj[n] as usize];
        for &(a, b) in &local_edges {
            adjncy[fill[a as usize] as usize] = b as metis::Idx;
            fill[a as usize] += 1;
            adjncy[fill[b as usize] as usize] = a as metis::Idx;
            fill[b as usize] += 1;
        }
        Compact {
            global,
            xadj,
            adjncy,
            local_edges,
        }
    }
}

/// Does an edge set fit one block?
fn fits(edges: &[(VertexId, VertexId)], limits: BlockLimits, scratch: &mut [u32]) -> bool {
    let mut verts = 0u64;
    let mut ok = true;
    for &(u, v) in edges {
        for x in [u, v] {
            if scratch[x as usize] == 0 {
                verts += 1;
            }
            scratch[x as usize] += 1;
            if scratch[x as usize] > limits.degree {
                ok = false;
            }
        }
    }
    clear_marks(edges, scratch);
    ok && verts <= limits.vertices
}

/// Number of distinct vertices an edge set touches.
fn touched(edges: &[(VertexId, VertexId)], scratch: &mut [u32]) -> u64 {
    let mut n = 0u64;
    for &(u, v) in edges {
        for x in [u, v] {
            if scratch[x as usize] == 0 {
                scratch[x as usize] = 1;
                n += 1;
            }
        }
    }
    clear_marks(edges, scratch);
    n
}

/// Resets the per-vertex marks an edge set left in `scratch`.
fn clear_marks(edges: &[Edge], scratch: &mut [u32]) {
    for &(u, v) in edges {
        scratch[u as usize] = 0;
        scratch[v as usize] = 0;
    }
}

/// One peeling round: keeps, in order, every edge whose endpoints both have fewer than
/// `degree` kept edges and whose new endpoints keep the kept set within `vertices`; returns
/// (kept, rest). The first edge is always kept, so the kept set is never empty.
fn peel_once(
    edges: Vec<Edge>,
    degree: u32,
    vertices: u64,
    scratch: &mut [u32],
) -> (Vec<Edge>, Vec<Edge>) {
    let mut kept = Vec::with_capacity(edges.len());
    let mut rest = Vec::new();
    let mut verts = 0u64;
    for &(u, v) in &edges {
        let new = (scratch[u as usize] == 0) as u64 + (scratch[v as usize] == 0) as u64;
        if scratch[u as usize] < degree && scratch[v as usize] < degree && verts + new <= vertices {
            verts += new;
            scratch[u as usize] += 1;
            scratch[v as usize] += 1;
            kept.push((u, v));
        } else {
            rest.push((u, v));
        }
    }
    clear_marks(&kept, scratch);
    (kept, rest)
}

/// Below this share of its edges kept inside parts, a METIS split is replaced by peeling.
const MIN_METIS_YIELD: f64 = 0.05;

/// Repeated peeling: each round keeps, in order, every edge whose endpoints are both under the
/// pass limit and whose new endpoints still fit the block's vertex capacity, and emits that as
/// a block; the rest goes to the next round. Linear per round; used for hub remnants.
fn peel_pack(
    mut edges: Vec<Edge>,
    limits: BlockLimits,
    level: u32,
    scratch: &mut [u32],
    out: &mut Vec<EdgeBlock>,
) {
    while !edges.is_empty() {
        let (kept, rest) = peel_once(edges, limits.degree, limits.vertices, scratch);
        out.push(EdgeBlock { level, edges: kept });
        edges = rest;
    }
}

/// Greedy first-fit: fills one open block edge by edge, opening the next when an edge would
/// exceed a limit. Used when METIS makes no progress.
fn greedy_pack(
    edges: &[(VertexId, VertexId)],
    limits: BlockLimits,
    level: u32,
    scratch: &mut [u32],
    out: &mut Vec<EdgeBlock>,
) {
    let mut current: Vec<(VertexId, VertexId)> = Vec::new();
    let mut verts = 0u64;
    let flush =
        |current: &mut Vec<(VertexId, VertexId)>, scratch: &mut [u32], out: &mut Vec<EdgeBlock>| {
            for &(u, v) in current.iter() {
                scratch[u as usize] = 0;
                scratch[v as usize] = 0;
            }
            out.push(EdgeBlock {
                level,
                edges: std::mem::take(current),
            });
        };
    for &(u, v) in edges {
        let new = (scratch[u as usize] == 0) as u64 + (scratch[v as usize] == 0) as u64;
        let over = verts + new > limits.vertices
            || scratch[u as usize] + 1 > limits.degree
            || scratch[v as usize] + 1 > limits.degree;
        if over && !current.is_empty() {
            flush(&mut current, scratch, out);
            verts = 0;
        }
        verts += (scratch[u as usize] == 0) as u64 + (scratch[v as usize] == 0) as u64;
        scratch[u as usize] += 1;
        scratch[v as usize] += 1;
        current.push((u, v));
    }
    if !current.is_empty() {
        flush(&mut current, scratch, out);
    }
}

/// Progress of the multi-level split.
#[derive(Debug, Clone, Copy, Default)]
pub struct SplitProgress {
    /// Deepest level reached so far.
    pub level: u32,
    /// Edges placed in blocks so far.
    pub served: u64,
    /// Blocks so far.
    pub blocks: usize,
}

/// An edge set still to be split. `path` names it deterministically (the child indexes from
/// the root), so blocks can be ordered by (level, path) whatever thread produced them.
struct Task {
    edges: Vec<Edge>,
    level: u32,
    path: Vec<u32>,
}

/// A block with its ordering key.
struct Keyed {
    level: u32,
    path: Vec<u32>,
    edges: Vec<Edge>,
}

/// An edge set holding more than this share of all cross edges is bisected first (rather than
/// cut straight into capacity-sized parts), so that two independent halves and their cut can
/// be split in parallel.
const BISECT_SHARE: f64 = 0.2;

/// Per-thread scratch space.
struct Scratch {
    marks: Vec<u32>,
    local_of: Vec<u32>,
}

/// Splits one task: returns the blocks it produces and the tasks it leaves.
fn split_task(
    task: Task,
    limits: BlockLimits,
    seed: u64,
    total_edges: usize,
    sc: &mut Scratch,
) -> Result<(Vec<Keyed>, Vec<Task>), PlanningError> {
    if fits(&task.edges, limits, &mut sc.marks) {
        let block = Keyed {
            level: task.level,
            path: task.path,
            edges: task.edges,
        };
        return Ok((vec![block], Vec::new()));
    }
    let Task { edges, level, path } = task;
    let key = |i: u32| {
        let mut p = path.clone();
        p.push(i);
        p
    };
    let blocks_of = |out: Vec<EdgeBlock>| -> Vec<Keyed> {
        out.into_iter()
            .enumerate()
            .map(|(i, b)| Keyed {
                level,
                path: key(i as u32),
                edges: b.edges,
            })
            .collect()
    };
    if touched(&edges, &mut sc.marks) <= limits.vertices {
        // Fits by size; only some hubs exceed the pass limit. Keep every edge whose endpoints
        // are both still under the limit and move the rest (hub edges only) to the next level,
        // instead of shredding the whole set with METIS.
        let (kept, excess) = peel_once(edges, limits.degree, u64::MAX, &mut sc.marks);
        let block = Keyed {
            level,
            path: key(0),
            edges: kept,
        };
        let next = Task {
            edges: excess,
            level: level + 1,
            path: key(1),
        };
        return Ok((vec![block], vec![next]));
    }
    let c = Compact::new(&edges, &mut sc.local_of);
    let n = c.global.len() as u64;
    let bisect = edges.len() as f64 > BISECT_SHARE * total_edges as f64 && n > 2 * limits.vertices;
    let k = if bisect {
        2
    } else {
        ((n as f64 / (limits.vertices as f64 * TARGET_FILL)).ceil() as u64)
            .max(2)
            .min(n)
    };
    let seed = path.iter().fold(seed ^ level as u64, |h, &i| {
        h.wrapping_mul(0x100_0000_01b3) ^ i as u64
    });
    let part = metis_kway_effort(&c.xadj, &c.adjncy, k as u32, None, seed, MetisEffort::Fast)?;
    let mut parts: Vec<Vec<Edge>> = vec![Vec::new(); k as usize];
    let mut cut = Vec::new();
    for (i, &(a, b)) in c.local_edges.iter().enumerate() {
        let (pa, pb) = (part[a as usize], part[b as usize]);
        if pa == pb {
            parts[pa as usize].push(edges[i]);
        } else {
            cut.push(edges[i]);
        }
    }
    drop(c);
    if parts.iter().any(|p| p.len() == edges.len()) {
        // No progress (METIS kept everything together): pack greedily.
        let mut out = Vec::new();
        greedy_pack(&edges, limits, level, &mut sc.marks, &mut out);
        return Ok((blocks_of(out), Vec::new()));
    }
    if !bisect && (cut.len() as f64) > (1.0 - MIN_METIS_YIELD) * edges.len() as f64 {
        // METIS no longer pays: what is left is dominated by hubs over the pass limit
        // (stars), which no partition can keep together. Peel blocks directly.
        let mut out = Vec::new();
        peel_pack(edges, limits, level, &mut sc.marks, &mut out);
        return Ok((blocks_of(out), Vec::new()));
    }
    // Parts stay at this level (they usually fit now); the cut forms the next level.
    let mut tasks = vec![Task {
        edges: cut,
        level: level + 1,
        path: key(0),
    }];
    for (i, p) in parts.into_iter().enumerate() {
        if !p.is_empty() {
            tasks.push(Task {
                edges: p,
                level,
                path: key(i as u32 + 1),
            });
        }
    }
    Ok((Vec::new(), tasks))
}

/// Splits the cross edges into blocks that fit `limits`, level by level, on all cores: every
/// edge set a split leaves (a part, or a cut forming the next level) is an independent task.
/// The result is ordered by level and then by each block's place in the split tree, so it does
/// not depend on thread timing.
pub fn split_multilevel(
    num_vertices: usize,
    cross_edges: Vec<Edge>,
    limits: BlockLimits,
    seed: u64,
    mut progress: impl FnMut(SplitProgress),
) -> Result<Vec<EdgeBlock>, PlanningError> {
    use std::sync::{Condvar, Mutex};

    if limits.vertices < 2 || limits.degree < 1 {
        return Err(PlanningError::Input(format!(
            "a block must hold at least one edge (limits {limits:?})"
        )));
    }
    struct Shared {
        queue: Vec<Task>,
        active: usize,
        blocks: Vec<Keyed>,
        progress: SplitProgress,
        error: Option<PlanningError>,
    }
    let total = cross_edges.len();
    let shared = Mutex::new(Shared {
        queue: vec![Task {
            edges: cross_edges,
            level: 0,
            path: Vec::new(),
        }],
        active: 0,
        blocks: Vec::new(),
        progress: SplitProgress::default(),
        error: None,
    });
    let wake = Condvar::new();
    let threads = std::thread::available_parallelism()
        .map_or(1, |p| p.get())
        .clamp(1, 8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut sc = Scratch {
                    marks: vec![0; num_vertices],
                    local_of: vec![u32::MAX; num_vertices],
                };
                loop {
                    let task = {
                        let mut g = shared.lock().unwrap();
                        loop {
                            if g.error.is_some() {
                                return;
                            }
                            // Largest task first: it is on the critical path.
                            if let Some(i) =
                                (0..g.queue.len()).max_by_key(|&i| g.queue[i].edges.len())
                            {
                                g.active += 1;
                                break g.queue.swap_remove(i);
                            }
                            if g.active == 0 {
                                return;
                            }
                            g = wake.wait(g).unwrap();
                        }
                    };
                    let result = split_task(task, limits, seed, total, &mut sc);
                    let mut g = shared.lock().unwrap();
                    g.active -= 1;
                    match result {
                        Ok((blocks, tasks)) => {
                            for b in &blocks {
                                g.progress.served += b.edges.len() as u64;
                                g.progress.level = g.progress.level.max(b.level);
                            }
                            g.blocks.extend(blocks);
                            g.progress.blocks = g.blocks.len();
                            g.queue
                                .extend(tasks.into_iter().filter(|t| !t.edges.is_empty()));
                        }
                        Err(e) => g.error = Some(e),
                    }
                    wake.notify_all();
                }
            });
        }
        // The caller's thread reports progress until the workers are done.
        loop {
            let (p, done) = {
                let g = shared.lock().unwrap();
                (
                    g.progress,
                    g.error.is_some() || (g.queue.is_empty() && g.active == 0),
                )
            };
            progress(p);
            if done {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    let g = shared.into_inner().unwrap();
    if let Some(e) = g.error {
        return Err(e);
    }
    let mut blocks = g.blocks;
    blocks.sort_by(|a, b| (a.level, &a.path).cmp(&(b.level, &b.path)));
    Ok(blocks
        .into_iter()
        .map(|k| EdgeBlock {
            level: k.level,
            edges: k.edges,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(blocks: &[EdgeBlock], all: &[(u32, u32)], limits: BlockLimits, n: usize) {
        let mut seen = HashSet::new();
        let mut scratch = vec![0u32; n];
        for b in blocks {
            assert!(fits(&b.edges, limits, &mut scratch), "block over limits");
            for &e in &b.edges {
                assert!(seen.insert(e), "edge {e:?} in two blocks");
            }
        }
        let want: HashSet<_> = all.iter().copied().collect();
        assert_eq!(seen, want, "every edge in exactly one block");
    }

    #[test]
    fn one_block_when_it_fits() {
        let e = vec![(0, 1), (1, 2), (2, 3)];
        let limits = BlockLimits {
            vertices: 4,
            degree: 256,
        };
        let b = split_multilevel(4, e.clone(), limits, 1, |_| {}).unwrap();
        assert_eq!(b.len(), 1);
        check(&b, &e, limits, 4);
    }

    #[test]
    fn paper_figure_10_shape_needs_several_levels() {
        // A connected grid of 13x13 vertices with room for 16 vertices per block.
        let side = 13u32;
        let mut e = Vec::new();
        for r in 0..side {
            for c in 0..side {
                let v = r * side + c;
                if c + 1 < side {
                    e.push((v, v + 1));
                }
                if r + 1 < side {
                    e.push((v, v + side));
                }
            }
        }
        let limits = BlockLimits {
            vertices: 16,
            degree: 256,
        };
        let n = (side * side) as usize;
        let b = split_multilevel(n, e.clone(), limits, 1, |_| {}).unwrap();
        check(&b, &e, limits, n);
        assert!(
            b.iter().any(|x| x.level >= 1),
            "cut edges form a next level"
        );
    }

    #[test]
    fn high_degree_vertex_is_split_by_the_pass_limit() {
        // Star with 100 leaves, at most 10 passes per vertex.
        let e: Vec<_> = (1..=100).map(|i| (0, i)).collect();
        let limits = BlockLimits {
            vertices: 1000,
            degree: 10,
        };
        let b = split_multilevel(101, e.clone(), limits, 1, |_| {}).unwrap();
        check(&b, &e, limits, 101);
        assert!(b.len() >= 10);
    }

    #[test]
    fn peel_pack_serves_hub_stars_within_limits() {
        // Two hubs of 300 leaves each plus a hub-hub edge, at most 50 passes and 80 vertices.
        let mut e: Vec<(u32, u32)> = (2..302).map(|i| (0, i)).collect();
        e.extend((302..602).map(|i| (1, i)));
        e.push((0, 1));
        let limits = BlockLimits {
            vertices: 80,
            degree: 50,
        };
        let mut out = Vec::new();
        let mut scratch = vec![0u32; 602];
        peel_pack(e.clone(), limits, 3, &mut scratch, &mut out);
        check(&out, &e, limits, 602);
        assert!(out.iter().all(|b| b.level == 3 && !b.edges.is_empty()));
        // Each hub needs at least 301/50 blocks; both hubs share blocks.
        assert!(out.len() >= 7 && out.len() <= 14, "{} blocks", out.len());
        assert!(scratch.iter().all(|&x| x == 0), "scratch is left clean");
    }

    #[test]
    fn parallel_split_is_deterministic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut set = HashSet::new();
        while set.len() < 20_000 {
            // Skewed endpoints so hubs and several levels appear.
            let a: u32 = rng.gen_range(0..3000u32).pow(2) / 3000;
            let b: u32 = rng.gen_range(0..3000);
            if a != b {
                set.insert((a.min(b), a.max(b)));
            }
        }
        let mut e: Vec<_> = set.into_iter().collect();
        e.sort_unstable();
        let limits = BlockLimits {
            vertices: 300,
            degree: 64,
        };
        let first = split_multilevel(3000, e.clone(), limits, 5, |_| {}).unwrap();
        check(&first, &e, limits, 3000);
        assert!(first.iter().any(|b| b.level >= 2));
        for _ in 0..3 {
            assert_eq!(
                split_multilevel(3000, e.clone(), limits, 5, |_| {}).unwrap(),
                first
            );
        }
    }

    #[test]
    fn random_graphs_always_covered_exactly_once() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for round in 0..20 {
            let n = rng.gen_range(10..300);
            let mut set = HashSet::new();
            for _ in 0..rng.gen_range(5..2000) {
                let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
                if a != b {
                    set.insert((a.min(b), a.max(b)));
                }
            }
            let e: Vec<_> = set.into_iter().collect();
            let limits = BlockLimits {
                vertices: rng.gen_range(2..60),
                degree: rng.gen_range(1..20),
            };
            let b = split_multilevel(n as usize, e.clone(), limits, round, |_| {}).unwrap();
            check(&b, &e, limits, n as usize);
        }
    }
}
