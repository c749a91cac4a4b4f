//! The compressed sparse row graph every other stage of the toolkit reads.

/// Vertex identifiers are dense, `0..num_vertices`, and fit in 32 bits (the wire format's
/// `Src_id` / `Dst_id` width).
pub type VertexId = u32;

/// An undirected simple graph in CSR form: both directions of every edge are stored, neighbour
/// lists are sorted, there are no self-loops and no duplicate edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csr {
    indptr: Vec<u64>,
    indices: Vec<VertexId>,
}

/// What was dropped while building a [`Csr`] from raw edges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Edges read from the input (before any cleaning).
    pub input_edges: u64,
    /// Edges `(v, v)` that were dropped.
    pub self_loops: u64,
    /// Edges dropped because the same undirected edge appeared before (in either direction).
    pub duplicates: u64,
    /// Vertex ids that loading changed because the file's ids were sparse and got renumbered
    /// to `0..n` (`crate::ids`); 0 when the ids were kept. Only loaders set it.
    pub renumbered: u64,
}

impl Csr {
    /// Builds an undirected CSR from raw edges over `num_vertices` vertices, removing self-loops
    /// and duplicates (`(u, v)` and `(v, u)` are the same edge) and counting both.
    ///
    /// # Panics
    /// If an endpoint is `>= num_vertices`; readers check ranges first and report the line.
    pub fn from_edges(num_vertices: usize, edges: &[(VertexId, VertexId)]) -> (Csr, BuildStats) {
        let mut stats = BuildStats {
            input_edges: edges.len() as u64,
            ..BuildStats::default()
        };
        // Count both directions of every non-loop edge.
        let mut degree = vec![0u64; num_vertices + 1];
        for &(u, v) in edges {
            assert!(
                (u as usize) < num_vertices && (v as usize) < num_vertices,
                "edge ({u}, {v}) out of range for {num_vertices} vertices"
            );
            if u == v {
                stats.self_loops += 1;
            } else {
                degree[u as usize] += 1;
                degree[v as usize] += 1;
            }
        }
        let mut indptr = Vec::with_capacity(num_vertices + 1);
        let mut acc = 0u64;
        indptr.push(0);
        for d in degree.iter().take(num_vertices) {
            acc += d;
            indptr.push(acc);
        }
        let mut fill: Vec<u64> = indptr[..num_vertices].to_vec();
        let mut indices = vec![0 as VertexId; acc as usize];
        for &(u, v) in edges {
            if u != v {
                indices[fill[u as usize] as usize] = v;
                fill[u as usize] += 1;
                indices[fill[v as usize] as usize] = u;
                fill[v as usize] += 1;
            }
        }
        drop(fill);
        // Sort and deduplicate every neighbour list, compacting in place.
        let mut write = 0usize;
        let mut removed_directed = 0u64;
        let mut start = 0usize;
        for v in 0..num_vertices {
            let end = indptr[v + 1] as usize;
            let list = &mut indices[start..end];
            list.sort_unstable();
            let mut last: Option<VertexId> = None;
            let mut kept = 0usize;
            for i in 0..list.len() {
                let x = list[i];
                if last == Some(x) {
                    removed_directed += 1;
                    continue;
                }
                last = Some(x);
                list[kept] = x;
                kept += 1;
            }
            indices.copy_within(start..start + kept, write);
            start = end;
            write += kept;
            indptr[v + 1] = write as u64;
        }
        indices.truncate(write);
        indices.shrink_to_fit();
        // Each duplicate undirected edge removed two directed entries.
        stats.duplicates = removed_directed / 2;
        (Csr { indptr, indices }, stats)
    }

    /// Wraps CSR arrays that are already symmetric, sorted, loop-free and duplicate-free (for
    /// example ones this crate wrote). Returns the first violation otherwise.
    pub fn from_raw(indptr: Vec<u64>, indices: Vec<VertexId>) -> Result<Csr, CsrError> {
        if indptr.is_empty() || indptr[0] != 0 {
            return Err(CsrError::IndptrStart);
        }
        let end = *indptr.last().unwrap();
        if end != indices.len() as u64 {
            return Err(CsrError::IndptrEnd {
                end,
                indices: indices.len(),
            });
        }
        let n = indptr.len() - 1;
        // Monotone first: with the last entry equal to the indices' length, every row's range
        // is then inside `indices` (an entry past the end followed by a smaller one used to
        // panic on the slice below).
        if let Some(v) = indptr.windows(2).position(|w| w[0] > w[1]) {
            return Err(CsrError::IndptrDecreases {
                vertex: v,
                at: indptr[v],
                next: indptr[v + 1],
            });
        }
        for v in 0..n {
            let list = &indices[indptr[v] as usize..indptr[v + 1] as usize];
            for (i, &u) in list.iter().enumerate() {
                if u as usize >= n {
                    return Err(CsrError::NeighbourOutOfRange {
                        vertex: v,
                        neighbour: u,
                        vertices: n,
                    });
                }
                if u as usize == v {
                    return Err(CsrError::SelfLoop { vertex: v });
                }
                if i > 0 && list[i - 1] >= u {
                    return Err(CsrError::Unsorted { vertex: v });
                }
            }
        }
        let csr = Csr { indptr, indices };
        for v in 0..n as VertexId {
            for &u in csr.neighbors(v) {
                if csr.neighbors(u).binary_search(&v).is_err() {
                    return Err(CsrError::NoReverseEdge { from: v, to: u });
                }
            }
        }
        Ok(csr)
    }

    /// Number of vertices.
    pub fn num_vertices(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Number of undirected edges.
    pub fn num_edges(&self) -> u64 {
        self.indices.len() as u64 / 2
    }

    /// Number of stored directed entries (twice the undirected edges).
    pub fn num_directed(&self) -> u64 {
        self.indices.len() as u64
    }

    /// Sorted neighbours of `v`.
    #[inline]
    pub fn neighbors(&self, v: VertexId) -> &[VertexId] {
        let v = v as usize;
        &self.indices[self.indptr[v] as usize..self.indptr[v + 1] as usize]
    }

    /// Degree of `v`.
    #[inline]
    pub fn degree(&self, v: VertexId) -> usize {
        let v = v as usize;
        (self.indptr[v + 1] - self.indptr[v]) as usize
    }

    /// The row pointer array (`num_vertices + 1` entries).
    pub fn indptr(&self) -> &[u64] {
        &self.indptr
    }

    /// The concatenated neighbour lists.
    pub fn indices(&self) -> &[VertexId] {
        &self.indices
    }

    /// Iterates every undirected edge once, as `(u, v)` with `u < v`.
    pub fn edges(&self) -> impl Iterator<Item = (VertexId, VertexId)> + '_ {
        (0..self.num_vertices() as VertexId).flat_map(move |u| {
            self.neighbors(u)
                .iter()
                .copied()
                .filter(move |&v| v > u)
                .map(move |v| (u, v))
        })
    }

    /// A 64-bit FNV-1a fingerprint of the CSR arrays, used by plans to detect a graph mismatch.
    pub fn fingerprint(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |x: u64| {
            for b in x.to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(self.num_vertices() as u64);
        for &p in &self.indptr {
            eat(p);
        }
        for &i in &self.indices {
            eat(i as u64);
        }
        h
    }
}

/// Why CSR arrays were refused ([`Csr::from_raw`]): the first violation found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CsrError {
    /// `indptr` is empty or does not start with 0.
    #[error("indptr must start with 0")]
    IndptrStart,
    /// `indptr`'s last entry is not the number of indices.
    #[error("indptr ends at {end} but there are {indices} indices")]
    IndptrEnd {
        /// `indptr`'s last entry.
        end: u64,
        /// Length of `indices`.
        indices: usize,
    },
    /// `indptr` is not monotone.
    #[error("indptr decreases at vertex {vertex} ({at} then {next})")]
    IndptrDecreases {
        /// The first vertex whose row ends before it starts.
        vertex: usize,
        /// Its entry.
        at: u64,
        /// The next entry, smaller.
        next: u64,
    },
    /// A neighbour id that is not a vertex.
    #[error("vertex {vertex} has neighbour {neighbour} out of range (n = {vertices})")]
    NeighbourOutOfRange {
        /// The vertex.
        vertex: usize,
        /// The neighbour id.
        neighbour: VertexId,
        /// Vertices of the graph.
        vertices: usize,
    },
    /// A vertex listed among its own neighbours.
    #[error("vertex {vertex} has a self-loop")]
    SelfLoop {
        /// The vertex.
        vertex: usize,
    },
    /// A neighbour list that is not strictly increasing (unsorted or with a duplicate).
    #[error("neighbours of vertex {vertex} are not strictly sorted")]
    Unsorted {
        /// The vertex.
        vertex: usize,
    },
    /// An edge whose reverse is missing: the graph is not symmetric.
    #[error("edge {from} -> {to} has no reverse edge {to} -> {from}")]
    NoReverseEdge {
        /// The edge's source.
        from: VertexId,
        /// Its destination.
        to: VertexId,
    },
}

impl CsrError {
    /// Whether the violation is in `indptr` (the row pointers) rather than in `indices`
    /// (the neighbour lists they point into).
    pub fn in_indptr(&self) -> bool {
        matches!(
            self,
            CsrError::IndptrStart | CsrError::IndptrEnd { .. } | CsrError::IndptrDecreases { .. }
        )
    }

    /// Whether the message contains `pat`. `from_raw` used to return a `String`, and callers
    /// (tests among them) match its text this way; matching the variant is sturdier.
    pub fn contains(&self, pat: &str) -> bool {
        self.to_string().contains(pat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_symmetric_sorted_and_counts_cleaning() {
        let edges = [(0, 1), (1, 0), (2, 2), (1, 2), (0, 1), (3, 1)];
        let (g, s) = Csr::from_edges(4, &edges);
        assert_eq!(g.num_vertices(), 4);
        assert_eq!(g.num_edges(), 3);
        assert_eq!(g.neighbors(1), &[0, 2, 3]);
        assert_eq!(g.neighbors(2), &[1]);
        assert_eq!(s.self_loops, 1);
        assert_eq!(s.duplicates, 2);
        assert_eq!(s.input_edges, 6);
        let all: Vec<_> = g.edges().collect();
        assert_eq!(all, vec![(0, 1), (1, 2), (1, 3)]);
        assert!(Csr::from_raw(g.indptr().to_vec(), g.indices().to_vec()).is_ok());
    }

    /// The texts are those of the `String` errors these variants replaced, word for word.
    #[test]
    fn csr_errors_say_what_is_wrong() {
        let cases = [
            (CsrError::IndptrStart, "indptr must start with 0", true),
            (
                CsrError::IndptrEnd { end: 4, indices: 3 },
                "indptr ends at 4 but there are 3 indices",
                true,
            ),
            (
                CsrError::IndptrDecreases {
                    vertex: 1,
                    at: 9,
                    next: 3,
                },
                "indptr decreases at vertex 1 (9 then 3)",
                true,
            ),
            (
                CsrError::NeighbourOutOfRange {
                    vertex: 0,
                    neighbour: 7,
                    vertices: 3,
                },
                "vertex 0 has neighbour 7 out of range (n = 3)",
                false,
            ),
            (
                CsrError::SelfLoop { vertex: 2 },
                "vertex 2 has a self-loop",
                false,
            ),
            (
                CsrError::Unsorted { vertex: 1 },
                "neighbours of vertex 1 are not strictly sorted",
                false,
            ),
            (
                CsrError::NoReverseEdge { from: 0, to: 1 },
                "edge 0 -> 1 has no reverse edge 1 -> 0",
                false,
            ),
        ];
        for (e, text, indptr) in cases {
            assert_eq!(e.to_string(), text);
            assert_eq!(e.in_indptr(), indptr, "{e:?}");
        }
        assert_eq!(
            Csr::from_raw(vec![0, 1, 1], vec![1]).unwrap_err(),
            CsrError::NoReverseEdge { from: 0, to: 1 }
        );
        assert_eq!(
            Csr::from_raw(vec![0, 1], vec![0]).unwrap_err(),
            CsrError::SelfLoop { vertex: 0 }
        );
    }

    #[test]
    fn from_raw_rejects_asymmetry() {
        let err = Csr::from_raw(vec![0, 1, 1], vec![1]).unwrap_err();
        assert!(err.contains("no reverse edge"), "{err}");
    }

    /// An indptr that jumps past the end of `indices` and comes back (non-monotone, but
    /// starting at 0 and ending at the indices' length) is an error, not a slice panic.
    #[test]
    fn from_raw_rejects_a_non_monotone_indptr_without_panicking() {
        let (g, _) = Csr::from_edges(3, &[(0, 1), (1, 2)]);
        assert_eq!(g.indptr(), &[0, 1, 3, 4]);
        let err = Csr::from_raw(vec![0, 9, 3, 4], g.indices().to_vec()).unwrap_err();
        assert!(
            err.contains("indptr decreases at vertex 1 (9 then 3)"),
            "{err}"
        );
        let err = Csr::from_raw(vec![0, 3, 1, 4], g.indices().to_vec()).unwrap_err();
        assert!(err.contains("indptr decreases at vertex 1"), "{err}");
    }

    #[test]
    fn fingerprint_changes_with_edges() {
        let (a, _) = Csr::from_edges(3, &[(0, 1)]);
        let (b, _) = Csr::from_edges(3, &[(0, 2)]);
        assert_ne!(a.fingerprint(), b.fingerprint());
    }
}
