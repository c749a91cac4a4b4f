//! Vertex ids as read from a file, and their compaction to `0..n` when they are sparse.
//!
//! Real edge lists (SNAP dumps, ids taken from a database) often use a few thousand ids spread
//! over a range of billions. Everything downstream allocates per vertex, so such a file is
//! renumbered before anything proportional to the largest id is allocated: when
//! `largest id + 1 > 2 * (distinct ids) + 1024` ([`is_sparse`]), the distinct ids are numbered
//! `0..n` in ascending order and the original ids are kept. Dense files keep their ids exactly.
//! Every step here needs memory proportional to the number of edges, never to the largest id.

use std::path::Path;

use crate::error::GraphError;
use crate::snap::MAX_ID;
use crate::VertexId;

/// The slack of the compaction rule: files whose largest id is below this are never
/// renumbered, however few ids they use.
pub const COMPACT_SLACK: u64 = 1024;

/// The compaction rule: ids whose largest value is `max_id`, of which `distinct` occur, are
/// sparse (and get renumbered) when `max_id + 1 > 2 * distinct + COMPACT_SLACK`, that is when
/// more than half of the vertices `0..=max_id` would be isolated ones that appear in no edge,
/// beyond a slack of 1024.
pub fn is_sparse(max_id: u64, distinct: u64) -> bool {
    max_id as u128 + 1 > 2 * distinct as u128 + COMPACT_SLACK as u128
}

/// Edges as read, with 64-bit ids. They are stored as `u32` pairs while every id fits (the
/// common case, half the memory) and widened to `u64` pairs at the first id that does not.
#[derive(Debug, Default)]
pub(crate) struct RawEdges {
    narrow: Vec<(u32, u32)>,
    wide: Option<Vec<(u64, u64)>>,
    max_id: Option<u64>,
}

/// Edges over dense ids `0..num_vertices`, and the original id of every vertex when the ids
/// were renumbered.
#[derive(Debug)]
pub(crate) struct DenseEdges {
    pub num_vertices: usize,
    pub edges: Vec<(VertexId, VertexId)>,
    pub original_ids: Option<Vec<u64>>,
}

impl RawEdges {
    pub fn with_capacity(n: usize) -> Self {
        RawEdges {
            narrow: Vec::with_capacity(n),
            ..RawEdges::default()
        }
    }

    pub fn push(&mut self, u: u64, v: u64) {
        self.max_id = Some(self.max_id.unwrap_or(0).max(u).max(v));
        if let Some(w) = &mut self.wide {
            w.push((u, v));
            return;
        }
        match (u32::try_from(u), u32::try_from(v)) {
            (Ok(a), Ok(b)) => self.narrow.push((a, b)),
            _ => {
                let mut w = Vec::with_capacity(self.narrow.len() + 1);
                w.extend(
                    std::mem::take(&mut self.narrow)
                        .into_iter()
                        .map(|(a, b)| (a as u64, b as u64)),
                );
                w.push((u, v));
                self.wide = Some(w);
            }
        }
    }

    /// Edges over `0..num_vertices` with the ids kept (`compact` false, or the ids are dense by
    /// [`is_sparse`]) or renumbered (`compact` true and the ids are sparse). `path` names the
    /// file in the error for a graph with more vertices than 32-bit ids can number.
    pub fn finish(self, path: &Path, compact: bool) -> Result<DenseEdges, GraphError> {
        let Some(max_id) = self.max_id else {
            return Ok(DenseEdges {
                num_vertices: 0,
                edges: Vec::new(),
                original_ids: None,
            });
        };
        match self.wide {
            Some(w) => finish_edges(w, max_id, path, compact),
            None => finish_edges(self.narrow, max_id, path, compact),
        }
    }
}

/// The integer types edges are stored in while reading.
trait RawId: Copy + Ord + Into<u64> {}
impl RawId for u32 {}
impl RawId for u64 {}

fn too_many(path: &Path, vertices: u128, max_id: u64) -> GraphError {
    GraphError::TooManyVertices {
        path: path.to_path_buf(),
        vertices,
        max_id,
    }
}

fn finish_edges<T: RawId>(
    edges: Vec<(T, T)>,
    max_id: u64,
    path: &Path,
    compact: bool,
) -> Result<DenseEdges, GraphError> {
    let range = max_id as u128 + 1;
    let e = edges.len() as u128;
    // At most 2E ids occur, so beyond 4E + slack the ids are sparse whatever they are, and
    // below it a bitmap of the range takes O(E) memory.
    let sure_sparse = range > 4 * e + COMPACT_SLACK as u128;
    if compact && sure_sparse {
        return compact_by_sorting(edges, path, max_id);
    }
    if compact {
        let seen = Bitmap::of(&edges, range as usize);
        if is_sparse(max_id, seen.count()) {
            return compact_by_rank(edges, &seen, path, max_id);
        }
    }
    if range > MAX_ID as u128 + 1 {
        return Err(too_many(path, range, max_id));
    }
    Ok(DenseEdges {
        num_vertices: range as usize,
        edges: edges
            .into_iter()
            .map(|(u, v)| (u.into() as VertexId, v.into() as VertexId))
            .collect(),
        original_ids: None,
    })
}

/// Renumbers by sorting the distinct ids and a binary search per endpoint: O(E) memory.
fn compact_by_sorting<T: RawId>(
    edges: Vec<(T, T)>,
    path: &Path,
    max_id: u64,
) -> Result<DenseEdges, GraphError> {
    let mut ids: Vec<T> = Vec::with_capacity(edges.len() * 2);
    for &(u, v) in &edges {
        ids.push(u);
        ids.push(v);
    }
    ids.sort_unstable();
    ids.dedup();
    ids.shrink_to_fit();
    if ids.len() as u128 > MAX_ID as u128 + 1 {
        return Err(too_many(path, ids.len() as u128, max_id));
    }
    let new = |x: T| ids.binary_search(&x).expect("every endpoint is in ids") as VertexId;
    let edges = edges.into_iter().map(|(u, v)| (new(u), new(v))).collect();
    Ok(DenseEdges {
        num_vertices: ids.len(),
        edges,
        original_ids: Some(ids.into_iter().map(Into::into).collect()),
    })
}

/// Renumbers through the rank of each id in the bitmap of ids that occur (used when the id
/// range is at most 4E + slack, so the bitmap and its prefix counts are O(E)).
fn compact_by_rank<T: RawId>(
    edges: Vec<(T, T)>,
    seen: &Bitmap,
    path: &Path,
    max_id: u64,
) -> Result<DenseEdges, GraphError> {
    let n = seen.count();
    if n as u128 > MAX_ID as u128 + 1 {
        return Err(too_many(path, n as u128, max_id));
    }
    let rank = seen.prefix_counts();
    let new = |x: T| {
        let x: u64 = x.into();
        let w = (x / 64) as usize;
        let below = seen.words[w] & ((1u64 << (x % 64)) - 1);
        (rank[w] + below.count_ones() as u64) as VertexId
    };
    let edges = edges.into_iter().map(|(u, v)| (new(u), new(v))).collect();
    Ok(DenseEdges {
        num_vertices: n as usize,
        edges,
        original_ids: Some(seen.ones()),
    })
}

/// One bit per id of `0..len`.
struct Bitmap {
    words: Vec<u64>,
}

impl Bitmap {
    fn of<T: RawId>(edges: &[(T, T)], len: usize) -> Bitmap {
        let mut words = vec![0u64; len.div_ceil(64)];
        for &(u, v) in edges {
            for x in [u.into(), v.into()] {
                words[(x / 64) as usize] |= 1 << (x % 64);
            }
        }
        Bitmap { words }
    }

    fn count(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// Number of set bits before each word.
    fn prefix_counts(&self) -> Vec<u64> {
        let mut acc = 0;
        self.words
            .iter()
            .map(|w| {
                let before = acc;
                acc += w.count_ones() as u64;
                before
            })
            .collect()
    }

    /// The set bits, ascending.
    fn ones(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.count() as usize);
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push(i as u64 * 64 + w.trailing_zeros() as u64);
                w &= w - 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(edges: &[(u64, u64)]) -> RawEdges {
        let mut r = RawEdges::default();
        for &(u, v) in edges {
            r.push(u, v);
        }
        r
    }

    #[test]
    fn the_rule_keeps_dense_and_small_ranges() {
        // 1024 of slack: a range up to 2d + 1024 is kept.
        assert!(!is_sparse(1023, 1));
        assert!(!is_sparse(2 * 3 + 1023, 3));
        assert!(is_sparse(2 * 3 + 1024, 3));
        assert!(!is_sparse(1_999_999, 1_000_000));
        assert!(is_sparse(u64::MAX, u64::MAX / 4));
        assert!(is_sparse(4_294_967_294, 3));
    }

    #[test]
    fn sorting_and_rank_agree() {
        // Many edges over few ids: the range is within 4E + slack, so the bitmap path runs.
        let mut edges: Vec<(u64, u64)> = (0..3000).map(|i| (5000, 7 * (i % 5))).collect();
        edges.push((4999, 6000));
        let p = Path::new("t");
        let by_rank = raw(&edges).finish(p, true).unwrap();
        let narrow: Vec<(u32, u32)> = edges.iter().map(|&(u, v)| (u as u32, v as u32)).collect();
        let by_sort = compact_by_sorting(narrow, p, 6000).unwrap();
        assert_eq!(by_rank.original_ids, by_sort.original_ids);
        assert_eq!(by_rank.edges, by_sort.edges);
        assert_eq!(
            by_rank.original_ids.as_deref(),
            Some(&[0, 7, 14, 21, 28, 4999, 5000, 6000][..])
        );
        assert_eq!(by_rank.num_vertices, 8);
        assert_eq!(by_rank.edges[0], (6, 0));
        assert_eq!(*by_rank.edges.last().unwrap(), (5, 7));
    }

    #[test]
    fn widens_past_32_bits_and_keeps_dense_ids() {
        let e = raw(&[(0, 1), (1, u64::MAX), (2, 1 << 40)])
            .finish(Path::new("t"), true)
            .unwrap();
        assert_eq!(e.original_ids, Some(vec![0, 1, 2, 1 << 40, u64::MAX]));
        assert_eq!(e.edges, vec![(0, 1), (1, 4), (2, 3)]);
        let d = raw(&[(0, 1), (3, 1)]).finish(Path::new("t"), true).unwrap();
        assert_eq!((d.num_vertices, d.original_ids), (4, None));
        assert_eq!(d.edges, vec![(0, 1), (3, 1)]);
        // Without compaction, an id range beyond 32 bits is an error naming the file.
        let err = raw(&[(0, 1 << 33)])
            .finish(Path::new("big.txt"), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("big.txt") && err.contains("8589934593"),
            "{err}"
        );
    }
}
