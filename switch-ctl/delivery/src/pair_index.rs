//! The pair index ([`PairIndex`]): for every ordered pair of partitions (q, p), the boundary
//! vertices of q with a neighbour in p, how many neighbours each has there, and the side of q
//! in a minimum vertex cover of the pair's cross edges ([`crate::mvc`]): the lists every
//! delivery, its cost and its tables are computed from.

use sgnn_graph::Csr;
use sgnn_plan::Plan;

/// For every ordered pair (q, p), the boundary vertices of q with a neighbour in p and how many
/// neighbours each has there. The destinations in p of q's contributions are the sources of
/// the pair (p, q), so one list per pair serves both directions.
#[derive(Debug, Clone)]
pub struct PairIndex {
    pub(crate) workers: usize,
    /// Pair `q * M + p` owns `src[off[i]..off[i + 1]]`.
    off: Vec<usize>,
    src: Vec<u32>,
    nbrs: Vec<u32>,
    pub(crate) vertices: usize,
    /// Pair `q * M + p` owns `cover[cover_off[i]..cover_off[i + 1]]`: the vertices of `q` in a
    /// minimum vertex cover of the cross edges between `q` and `p` (one cover per unordered
    /// pair, so pair `(p, q)` holds its other side).
    cover_off: Vec<usize>,
    cover: Vec<u32>,
}

impl PairIndex {
    /// Builds the index of a plan's graph and partition.
    pub fn new(plan: &Plan) -> PairIndex {
        PairIndex::of(&plan.graph, &plan.partition, plan.workers() as usize)
    }

    /// Builds the index from a graph's adjacency and its partition into `m` workers.
    pub fn of(g: &Csr, part: &[u32], m: usize) -> PairIndex {
        let mut count = vec![0usize; m * m + 1];
        let mut per: Vec<u32> = vec![0; m];
        let mut touched: Vec<usize> = Vec::new();
        // Pass 1: list sizes. Pass 2: fill. Vertices in id order, so lists are sorted.
        for pass in 0..2 {
            let mut fill = if pass == 1 {
                let mut off = vec![0usize; m * m + 1];
                for i in 0..m * m {
                    off[i + 1] = off[i] + count[i];
                }
                Some((off.clone(), off))
            } else {
                None
            };
            let total = fill.as_ref().map(|f| f.0[m * m]).unwrap_or(0);
            let mut src = vec![0u32; total];
            let mut nbrs = vec![0u32; total];
            for u in 0..g.num_vertices() as u32 {
                let q = part[u as usize] as usize;
                for &v in g.neighbors(u) {
                    let p = part[v as usize] as usize;
                    if p != q {
                        if per[p] == 0 {
                            touched.push(p);
                        }
                        per[p] += 1;
                    }
                }
                for &p in &touched {
                    let i = q * m + p;
                    match &mut fill {
                        None => count[i] += 1,
                        Some((_, cur)) => {
                            src[cur[i]] = u;
                            nbrs[cur[i]] = per[p];
                            cur[i] += 1;
                        }
                    }
                    per[p] = 0;
                }
                touched.clear();
            }
            if let Some((off, _)) = fill {
                let (cover_off, cover) = covers(g, part, m);
                return PairIndex {
                    workers: m,
                    off,
                    src,
                    nbrs,
                    vertices: g.num_vertices(),
                    cover_off,
                    cover,
                };
            }
        }
        unreachable!("the second pass returns")
    }

    /// The vertices of `q` in the minimum vertex cover of the cross edges between `q` and `p`.
    pub fn cover(&self, q: usize, p: usize) -> &[u32] {
        let i = q * self.workers + p;
        &self.cover[self.cover_off[i]..self.cover_off[i + 1]]
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Boundary vertices of `q` with a neighbour in `p`, and their neighbour counts in `p`.
    pub fn pair(&self, q: usize, p: usize) -> (&[u32], &[u32]) {
        let i = q * self.workers + p;
        let r = self.off[i]..self.off[i + 1];
        (&self.src[r.clone()], &self.nbrs[r])
    }
}

/// A minimum vertex cover of every unordered pair's cross edges, as per-ordered-pair lists of
/// the cover's vertices on each side (ascending ids).
fn covers(g: &Csr, part: &[u32], m: usize) -> (Vec<usize>, Vec<u32>) {
    use crate::mvc::{min_vertex_cover, Bipartite};
    let mut buckets: Vec<Vec<(u32, u32)>> = vec![Vec::new(); m * m];
    for (u, v) in g.edges() {
        let (pu, pv) = (part[u as usize] as usize, part[v as usize] as usize);
        if pu == pv {
            continue;
        }
        if pu < pv {
            buckets[pu * m + pv].push((u, v));
        } else {
            buckets[pv * m + pu].push((v, u));
        }
    }
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); m * m];
    let mut lmap = vec![u32::MAX; g.num_vertices()];
    let mut rmap = vec![u32::MAX; g.num_vertices()];
    for q in 0..m {
        for p in q + 1..m {
            let edges = &buckets[q * m + p];
            if edges.is_empty() {
                continue;
            }
            let (mut ls, mut rs) = (Vec::new(), Vec::new());
            let mut local = Vec::with_capacity(edges.len());
            for &(l, r) in edges {
                if lmap[l as usize] == u32::MAX {
                    lmap[l as usize] = ls.len() as u32;
                    ls.push(l);
                }
                if rmap[r as usize] == u32::MAX {
                    rmap[r as usize] = rs.len() as u32;
                    rs.push(r);
                }
                local.push((lmap[l as usize], rmap[r as usize]));
            }
            let (cl, cr) = min_vertex_cover(&Bipartite::from_edges(ls.len(), rs.len(), &local));
            let mut a: Vec<u32> = ls.iter().zip(&cl).filter(|c| *c.1).map(|c| *c.0).collect();
            let mut b: Vec<u32> = rs.iter().zip(&cr).filter(|c| *c.1).map(|c| *c.0).collect();
            a.sort_unstable();
            b.sort_unstable();
            lists[q * m + p] = a;
            lists[p * m + q] = b;
            for &l in &ls {
                lmap[l as usize] = u32::MAX;
            }
            for &r in &rs {
                rmap[r as usize] = u32::MAX;
            }
        }
    }
    let mut off = vec![0usize; m * m + 1];
    let mut flat = Vec::new();
    for (i, l) in lists.into_iter().enumerate() {
        flat.extend(l);
        off[i + 1] = flat.len();
    }
    (off, flat)
}
