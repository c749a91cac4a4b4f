//! Maximum bipartite matching (Hopcroft-Karp) and, by Konig's theorem, minimum vertex cover.
//!
//! SuperGCN's host-only optimum sends, for every pair of partitions, one message per vertex of
//! a minimum vertex cover of the bipartite graph of their cross edges: cover vertices on the
//! sending side go raw, cover vertices on the receiving side get a partial sum. The cover size
//! equals the maximum matching size.

/// A bipartite graph with `left` and `right` vertex counts and edges from left to right in CSR.
#[derive(Debug, Clone, Default)]
pub struct Bipartite {
    /// Left vertex count.
    pub left: usize,
    /// Right vertex count.
    pub right: usize,
    /// `ptr[l]..ptr[l+1]` indexes `adj` for left vertex `l`.
    pub ptr: Vec<usize>,
    /// Right endpoints.
    pub adj: Vec<u32>,
}

impl Bipartite {
    /// Builds from `(left, right)` edge pairs with ids below the given counts.
    pub fn from_edges(left: usize, right: usize, edges: &[(u32, u32)]) -> Bipartite {
        let mut ptr = vec![0usize; left + 1];
        for &(l, _) in edges {
            ptr[l as usize + 1] += 1;
        }
        for i in 0..left {
            ptr[i + 1] += ptr[i];
        }
        let mut fill = ptr.clone();
        let mut adj = vec![0u32; edges.len()];
        for &(l, r) in edges {
            adj[fill[l as usize]] = r;
            fill[l as usize] += 1;
        }
        Bipartite {
            left,
            right,
            ptr,
            adj,
        }
    }
}

const NONE: u32 = u32::MAX;

/// Size of a maximum matching, which by Konig's theorem is the minimum vertex cover size.
pub fn max_matching(g: &Bipartite) -> usize {
    matching(g).0
}

/// A minimum vertex cover: `(left in the cover, right in the cover)`. By Konig's theorem,
/// with Z the vertices reachable from unmatched left vertices along alternating paths
/// (left to right by any edge, right to left by the matching), the cover is the left
/// vertices outside Z and the right vertices in Z; its size is the matching's.
pub fn min_vertex_cover(g: &Bipartite) -> (Vec<bool>, Vec<bool>) {
    let (_, match_l, match_r) = matching(g);
    let mut z_l = vec![false; g.left];
    let mut z_r = vec![false; g.right];
    let mut stack: Vec<u32> = (0..g.left as u32)
        .filter(|&l| match_l[l as usize] == NONE)
        .collect();
    for &l in &stack {
        z_l[l as usize] = true;
    }
    while let Some(l) = stack.pop() {
        for &r in &g.adj[g.ptr[l as usize]..g.ptr[l as usize + 1]] {
            if z_r[r as usize] {
                continue;
            }
            z_r[r as usize] = true;
            let m = match_r[r as usize];
            if m != NONE && !z_l[m as usize] {
                z_l[m as usize] = true;
                stack.push(m);
            }
        }
    }
    (z_l.into_iter().map(|z| !z).collect(), z_r)
}

/// Hopcroft-Karp: the matching's size and both sides' partners ([`NONE`] for unmatched).
fn matching(g: &Bipartite) -> (usize, Vec<u32>, Vec<u32>) {
    let mut match_l = vec![NONE; g.left];
    let mut match_r = vec![NONE; g.right];
    let mut dist = vec![u32::MAX; g.left];
    let mut queue = Vec::with_capacity(g.left);
    let mut size = 0usize;
    // Greedy initial matching speeds up the phases considerably.
    for (l, ml) in match_l.iter_mut().enumerate() {
        for &r in &g.adj[g.ptr[l]..g.ptr[l + 1]] {
            if match_r[r as usize] == NONE {
                *ml = r;
                match_r[r as usize] = l as u32;
                size += 1;
                break;
            }
        }
    }
    let mut stack: Vec<(u32, usize)> = Vec::new();
    let mut next = vec![0usize; g.left];
    loop {
        // BFS from free left vertices builds layers.
        queue.clear();
        for l in 0..g.left {
            if match_l[l] == NONE {
                dist[l] = 0;
                queue.push(l as u32);
            } else {
                dist[l] = u32::MAX;
            }
        }
        let mut found = false;
        let mut head = 0;
        while head < queue.len() {
            let l = queue[head] as usize;
            head += 1;
            for &r in &g.adj[g.ptr[l]..g.ptr[l + 1]] {
                let m = match_r[r as usize];
                if m == NONE {
                    found = true;
                } else if dist[m as usize] == u32::MAX {
                    dist[m as usize] = dist[l] + 1;
                    queue.push(m);
                }
            }
        }
        if !found {
            return (size, match_l, match_r);
        }
        // Iterative DFS along the layers for vertex-disjoint augmenting paths.
        next[..g.left].copy_from_slice(&g.ptr[..g.left]);
        for start in 0..g.left {
            if match_l[start] != NONE {
                continue;
            }
            stack.clear();
            stack.push((start as u32, 0));
            let mut augmented = false;
            while let Some(&(l, _)) = stack.last() {
                let l = l as usize;
                let mut advanced = false;
                while next[l] < g.ptr[l + 1] {
                    let r = g.adj[next[l]];
                    next[l] += 1;
                    let m = match_r[r as usize];
                    if m == NONE {
                        // Augment along the stack.
                        let mut r_cur = r;
                        while let Some((lv, _)) = stack.pop() {
                            let prev = match_l[lv as usize];
                            match_l[lv as usize] = r_cur;
                            match_r[r_cur as usize] = lv;
                            r_cur = prev;
                        }
                        augmented = true;
                        advanced = true;
                        break;
                    } else if dist[m as usize] == dist[l] + 1 {
                        stack.push((m, 0));
                        advanced = true;
                        break;
                    }
                }
                if augmented {
                    break;
                }
                if !advanced {
                    dist[l] = u32::MAX;
                    stack.pop();
                }
            }
            if augmented {
                size += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_force_cover(left: usize, right: usize, edges: &[(u32, u32)]) -> usize {
        let n = left + right;
        (0u32..1 << n)
            .filter(|mask| {
                edges
                    .iter()
                    .all(|&(l, r)| mask & (1 << l) != 0 || mask & (1 << (left + r as usize)) != 0)
            })
            .map(|m| m.count_ones() as usize)
            .min()
            .unwrap()
    }

    #[test]
    fn star_and_complete() {
        // One left vertex to four right: cover 1.
        let g = Bipartite::from_edges(1, 4, &[(0, 0), (0, 1), (0, 2), (0, 3)]);
        assert_eq!(max_matching(&g), 1);
        // K(3,3): cover 3.
        let e: Vec<_> = (0..3).flat_map(|l| (0..3).map(move |r| (l, r))).collect();
        assert_eq!(max_matching(&Bipartite::from_edges(3, 3, &e)), 3);
    }

    #[test]
    fn matches_brute_force_on_random_graphs() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..300 {
            let left = rng.gen_range(1..7);
            let right = rng.gen_range(1..7);
            let mut edges = Vec::new();
            for l in 0..left as u32 {
                for r in 0..right as u32 {
                    if rng.gen_bool(0.35) {
                        edges.push((l, r));
                    }
                }
            }
            let g = Bipartite::from_edges(left, right, &edges);
            let got = max_matching(&g);
            assert_eq!(got, brute_force_cover(left, right, &edges), "{edges:?}");
            // The cover itself: as large as the matching, and it covers every edge.
            let (cl, cr) = min_vertex_cover(&g);
            let size = cl.iter().chain(&cr).filter(|&&c| c).count();
            assert_eq!(size, got, "{edges:?}");
            for &(l, r) in &edges {
                assert!(
                    cl[l as usize] || cr[r as usize],
                    "({l}, {r}) uncovered: {edges:?}"
                );
            }
        }
    }
}
