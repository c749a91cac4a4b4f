//! SNAP-style edge lists: `u v` per line (tabs or spaces), `#`/`%` comments, plain or gzip.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::GraphError;
use crate::ids::RawEdges;
use crate::VertexId;

/// Edges read from a file over dense ids `0..num_vertices`, and the original ids when the
/// file's ids were sparse and got renumbered (see [`crate::ids::is_sparse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeList {
    /// Number of vertices: the given count, the largest id + 1, or (ids renumbered) the number
    /// of distinct ids.
    pub num_vertices: usize,
    /// Edges as read (self-loops and duplicates still present), over `0..num_vertices`.
    pub edges: Vec<(VertexId, VertexId)>,
    /// `original_ids[v]` is the id vertex `v` has in the file, ascending; `None` when the ids
    /// were kept as they are.
    pub original_ids: Option<Vec<u64>>,
}

/// Opens a file, transparently decompressing gzip (detected by its magic bytes).
pub fn open_maybe_gz(path: &Path) -> Result<Box<dyn BufRead>, GraphError> {
    let mut f = File::open(path).map_err(|e| GraphError::io(path, e))?;
    let mut magic = [0u8; 2];
    let n = f.read(&mut magic).map_err(|e| GraphError::io(path, e))?;
    drop(f);
    let f = File::open(path).map_err(|e| GraphError::io(path, e))?;
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(f),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, f))
    })
}

/// Largest vertex id of a loaded graph (`u32::MAX` is reserved as "none" in the toolkit), so
/// a graph has at most `MAX_ID + 1` vertices. Files may use any id up to `u64::MAX`: sparse
/// ids are renumbered to `0..n` first.
pub const MAX_ID: u64 = u32::MAX as u64 - 1;

/// Why a token is not a vertex id.
enum BadId {
    /// Not a decimal integer.
    NotNumber,
    /// A decimal integer that is negative or above `u64::MAX`.
    OutOfRange,
}

fn parse_id(tok: &[u8]) -> Result<u64, BadId> {
    let digits = tok.strip_prefix(b"-").unwrap_or(tok);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(BadId::NotNumber);
    }
    if digits.len() < tok.len() {
        return Err(BadId::OutOfRange);
    }
    let mut x: u64 = 0;
    for &b in digits {
        x = x
            .checked_mul(10)
            .and_then(|x| x.checked_add((b - b'0') as u64))
            .ok_or(BadId::OutOfRange)?;
    }
    Ok(x)
}

/// Reads an edge list. With `num_vertices`, ids must be below it and are kept; otherwise ids
/// may be anything from 0 to `u64::MAX`, and the count is the largest id + 1, or the number of
/// distinct ids when they are sparse and get renumbered.
pub fn read_edge_list(path: &Path, num_vertices: Option<usize>) -> Result<EdgeList, GraphError> {
    read_edge_list_from(open_maybe_gz(path)?, path, num_vertices)
}

/// Reads an edge list from `r` (already decompressed), as [`read_edge_list`] reads a file;
/// `path` names it in errors.
pub fn read_edge_list_from(
    mut r: impl BufRead,
    path: &Path,
    num_vertices: Option<usize>,
) -> Result<EdgeList, GraphError> {
    let limit = num_vertices.map(|n| n as u64);
    let mut edges = RawEdges::default();
    let mut line = Vec::with_capacity(128);
    let mut lineno = 0u64;
    loop {
        line.clear();
        let n = r
            .read_until(b'\n', &mut line)
            .map_err(|e| GraphError::io(path, e))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        let mut toks = line
            .split(|&b| b == b' ' || b == b'\t' || b == b'\n' || b == b'\r' || b == b',')
            .filter(|t| !t.is_empty());
        let Some(first) = toks.next() else { continue };
        if first[0] == b'#' || first[0] == b'%' {
            continue;
        }
        let err = |message: String| GraphError::Parse {
            path: path.to_path_buf(),
            line: lineno,
            message,
        };
        let show = |t: &[u8]| String::from_utf8_lossy(t).into_owned();
        let Some(second) = toks.next() else {
            return Err(err(format!(
                "expected two vertex ids separated by tab or space, found only {:?}",
                show(first)
            )));
        };
        let mut ids = [0u64; 2];
        for (i, tok) in [first, second].into_iter().enumerate() {
            ids[i] = match parse_id(tok) {
                Ok(x) => x,
                Err(BadId::NotNumber) => {
                    return Err(err(format!(
                        "expected a non-negative integer vertex id, found {:?}",
                        show(tok)
                    )))
                }
                Err(BadId::OutOfRange) => {
                    return Err(GraphError::IdOutOfRange {
                        path: path.to_path_buf(),
                        location: lineno.to_string(),
                        id: show(tok),
                    })
                }
            };
            if let Some(limit) = limit.filter(|&l| ids[i] >= l) {
                return Err(GraphError::OutOfRange {
                    path: path.to_path_buf(),
                    location: lineno.to_string(),
                    id: ids[i] as i128,
                    limit,
                });
            }
        }
        edges.push(ids[0], ids[1]);
    }
    finish(edges, path, num_vertices)
}

/// Dense edges from raw ones: renumbered when sparse, unless the vertex count was given.
fn finish(
    edges: RawEdges,
    path: &Path,
    num_vertices: Option<usize>,
) -> Result<EdgeList, GraphError> {
    let dense = edges.finish(path, num_vertices.is_none())?;
    Ok(EdgeList {
        num_vertices: num_vertices.unwrap_or(dense.num_vertices),
        edges: dense.edges,
        original_ids: dense.original_ids,
    })
}

/// Reads a `.npy` edge array of shape `[E, 2]` (int32, int64, uint32 or uint64). Ids are as in
/// [`read_edge_list`]; a negative id is an error naming the row.
pub fn read_npy_edges(path: &Path, num_vertices: Option<usize>) -> Result<EdgeList, GraphError> {
    use crate::npy::{read_npy, NpyData};
    let a = read_npy(path)?;
    if a.shape.len() != 2 || a.shape[1] != 2 {
        return Err(GraphError::npy(
            path,
            format!("an edge array must have shape [E, 2], found {:?}", a.shape),
        ));
    }
    if !matches!(
        a.data,
        NpyData::I32(_) | NpyData::I64(_) | NpyData::U32(_) | NpyData::U64(_)
    ) {
        return Err(GraphError::npy(
            path,
            format!(
                "an edge array must be int32, int64, uint32 or uint64, found {}",
                a.data.dtype_name()
            ),
        ));
    }
    let limit = num_vertices.map(|n| n as u64);
    let mut edges = RawEdges::with_capacity(a.shape[0]);
    for row in 0..a.shape[0] {
        let mut ids = [0u64; 2];
        for (c, id) in ids.iter_mut().enumerate() {
            let x = a.data.get_int(row * 2 + c).unwrap();
            let Ok(x) = u64::try_from(x) else {
                return Err(GraphError::IdOutOfRange {
                    path: path.to_path_buf(),
                    location: format!("row {row}"),
                    id: x.to_string(),
                });
            };
            if let Some(limit) = limit.filter(|&l| x >= l) {
                return Err(GraphError::OutOfRange {
                    path: path.to_path_buf(),
                    location: format!("row {row}"),
                    id: x as i128,
                    limit,
                });
            }
            *id = x;
        }
        edges.push(ids[0], ids[1]);
    }
    drop(a);
    finish(edges, path, num_vertices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_comments_tabs_spaces_and_weights() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "g.txt", "# c\n% c\n\n0\t1\n1  2 0.5\r\n 3 0\n");
        let e = read_edge_list(&p, None).unwrap();
        assert_eq!(e.num_vertices, 4);
        assert_eq!(e.edges, vec![(0, 1), (1, 2), (3, 0)]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let cases = [
            ("tok.txt", "0 1\n# x\n2 x\n", ":3:", "found \"x\""),
            ("one.txt", "0 1\n5\n", ":2:", "found only"),
            ("neg.txt", "0 1\n1 2\n-4 2\n", ":3:", "vertex id -4"),
        ];
        for (name, text, line, what) in cases {
            let p = write(d.path(), name, text);
            let e = read_edge_list(&p, None).unwrap_err().to_string();
            assert!(
                e.contains(name) && e.contains(line) && e.contains(what),
                "{e}"
            );
        }
        let p = write(d.path(), "range.txt", "0 1\n1 9\n");
        let e = read_edge_list(&p, Some(5)).unwrap_err().to_string();
        assert!(
            e.contains("range.txt:2") && e.contains("9") && e.contains("below 5"),
            "{e}"
        );
    }

    #[test]
    fn reads_gzip_by_magic_and_npy_edges() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("g.dat");
        let mut z = flate2::write::GzEncoder::new(
            std::fs::File::create(&p).unwrap(),
            flate2::Compression::fast(),
        );
        z.write_all(b"0 1\n1 2\n").unwrap();
        z.finish().unwrap();
        assert_eq!(
            read_edge_list(&p, None).unwrap().edges,
            vec![(0, 1), (1, 2)]
        );
        let n = d.path().join("e.npy");
        crate::npy::write_npy(&n, &[2, 2], &[0i64, 3, 3, 1]).unwrap();
        let e = read_npy_edges(&n, None).unwrap();
        assert_eq!((e.num_vertices, e.edges), (4, vec![(0, 3), (3, 1)]));
        crate::npy::write_npy(&n, &[2, 2], &[0i32, 3, -1, 1]).unwrap();
        let err = read_npy_edges(&n, None).unwrap_err().to_string();
        assert!(err.contains("e.npy:row 1") && err.contains("-1"), "{err}");
        crate::npy::write_npy(&n, &[3], &[0i32, 3, 1]).unwrap();
        assert!(read_npy_edges(&n, None)
            .unwrap_err()
            .to_string()
            .contains("[E, 2]"));
    }
}
