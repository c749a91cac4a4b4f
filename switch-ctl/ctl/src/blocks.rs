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

/// Progress of the multi-level split, reported after every METIS call.
#[derive(Debug, Clone, Copy, Default)]
pub struct SplitProgress {
    /// Current level.
    pub level: u32,
    /// Edges placed in blocks so far.
    pub served: u64,
    /// Blocks so far.
    pub blocks: usize,
}

/// Splits the cross edges into blocks that fit `limits`, level by level.
pub fn split_multilevel(
    num_vertices: usize,
    cross_edges: Vec<(VertexId, VertexId)>,
    limits: BlockLimits,
    seed: u64,
    mut progress: impl FnMut(SplitProgress),
) -> Result<Vec<EdgeBlock>, PlanningError> {
    if limits.vertices < 2 || limits.degree < 1 {
        return Err(PlanningError::Input(format!(
            "a block must hold at least one edge (limits {limits:?})"
        )));
    }
    let mut scratch = vec![0u32; num_vertices];
    let mut local_of = vec![u32::MAX; num_vertices];
    let mut out: Vec<EdgeBlock> = Vec::new();
    let mut state = SplitProgress::default();
    let mut level_edges = cross_edges;
    let mut level = 0u32;
    while !level_edges.is_empty() {
        state.level = level;
        let mut cut: Vec<(VertexId, VertexId)> = Vec::new();
        // Work list of edge sets at this level that still have to be split.
        let mut work = vec![std::mem::take(&mut level_edges)];
        while let Some(edges) = work.pop() {
            if fits(&edges, limits, &mut scratch) {
                state.served += edges.len() as u64;
                out.push(EdgeBlock { level, edges });
                state.blocks = out.len();
                progress(state);
                continue;
            }
            if touched(&edges, &mut scratch) <= limits.vertices {
                // Fits by size; only some hubs exceed the pass limit. Keep every edge whose
                // endpoints are both still under the limit and move the rest (hub edges only)
                // to the next level, instead of shredding the whole set with METIS.
                let (kept, excess) = peel_once(edges, limits.degree, u64::MAX, &mut scratch);
                cut.extend(excess);
                state.served += kept.len() as u64;
                out.push(EdgeBlock { level, edges: kept });
                state.blocks = out.len();
                progress(state);
                continue;
            }
            let c = Compact::new(&edges, &mut local_of);
            let n = c.global.len() as u64;
            let k = ((n as f64 / (limits.vertices as f64 * TARGET_FILL)).ceil() as u64)
                .max(2)
                .min(n);
            let part = metis_kway_effort(
                &c.xadj,
                &c.adjncy,
                k as u32,
                None,
                seed ^ level as u64,
                MetisEffort::Fast,
            )?;
            let mut parts: Vec<Vec<(VertexId, VertexId)>> = vec![Vec::new(); k as usize];
            let mut level_cut = Vec::new();
            for (i, &(a, b)) in c.local_edges.iter().enumerate() {
                let (pa, pb) = (part[a as usize], part[b as usize]);
                if pa == pb {
                    parts[pa as usize].push(edges[i]);
                } else {
                    level_cut.push(edges[i]);
                }
            }
            if parts.iter().any(|p| p.len() == edges.len()) {
                // No progress (METIS kept everything together): pack greedily.
                greedy_pack(&edges, limits, level, &mut scratch, &mut out);
                state.served += edges.len() as u64;
                state.blocks = out.len();
                progress(state);
                continue;
            }
            if (level_cut.len() as f64) > (1.0 - MIN_METIS_YIELD) * edges.len() as f64 {
                // METIS no longer pays: what is left is dominated by hubs over the pass limit
                // (stars), which no partition can keep together. Peel blocks directly.
                let before = out.len();
                peel_pack(edges, limits, level, &mut scratch, &mut out);
                state.served = out
                    .iter()
                    .skip(before)
                    .fold(state.served, |s, b| s + b.edges.len() as u64);
                state.blocks = out.len();
                progress(state);
                continue;
            }
            cut.extend(level_cut);
            work.extend(parts.into_iter().filter(|p| !p.is_empty()));
        }
        level_edges = cut;
        level += 1;
    }
    Ok(out)
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
