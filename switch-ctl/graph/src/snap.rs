//! SNAP-style edge lists: `u v` per line (tabs or spaces), `#`/`%` comments, plain or gzip.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::GraphError;
use crate::VertexId;

/// Edges read from a file and the vertex count they imply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeList {
    /// Number of vertices: the given count, or the largest id + 1.
    pub num_vertices: usize,
    /// Edges as read (self-loops and duplicates still present).
    pub edges: Vec<(VertexId, VertexId)>,
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

/// Largest vertex id accepted (`u32::MAX` is reserved as "none" in the toolkit).
pub const MAX_ID: u64 = u32::MAX as u64 - 1;

fn parse_id(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || tok.len() > 20 {
        return None;
    }
    let mut x: u64 = 0;
    for &b in tok {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        x = x.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(x)
}

/// Reads an edge list. With `num_vertices`, ids must be below it; otherwise the count is the
/// largest id + 1.
pub fn read_edge_list(path: &Path, num_vertices: Option<usize>) -> Result<EdgeList, GraphError> {
    let mut r = open_maybe_gz(path)?;
    let limit = num_vertices.map_or(MAX_ID + 1, |n| n as u64);
    let mut edges = Vec::new();
    let mut line = Vec::with_capacity(128);
    let mut lineno = 0u64;
    let mut max_id: Option<u64> = None;
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
            if tok.first() == Some(&b'-') && parse_id(&tok[1..]).is_some() {
                return Err(GraphError::OutOfRange {
                    path: path.to_path_buf(),
                    location: lineno.to_string(),
                    id: -(parse_id(&tok[1..]).unwrap() as i128),
                    limit,
                });
            }
            ids[i] = parse_id(tok).ok_or_else(|| {
                err(format!(
                    "expected a non-negative integer vertex id, found {:?}",
                    show(tok)
                ))
            })?;
            if ids[i] >= limit {
                return Err(GraphError::OutOfRange {
                    path: path.to_path_buf(),
                    location: lineno.to_string(),
                    id: ids[i] as i128,
                    limit,
                });
            }
        }
        max_id = Some(max_id.unwrap_or(0).max(ids[0]).max(ids[1]));
        edges.push((ids[0] as VertexId, ids[1] as VertexId));
    }
    let num_vertices = num_vertices.unwrap_or(max_id.map_or(0, |m| m as usize + 1));
    Ok(EdgeList {
        num_vertices,
        edges,
    })
}

/// Reads a `.npy` edge array of shape `[E, 2]` (int32, int64, uint32 or uint64).
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
    let limit = num_vertices.map_or(MAX_ID + 1, |n| n as u64);
    let mut edges = Vec::with_capacity(a.shape[0]);
    let mut max_id = None;
    for row in 0..a.shape[0] {
        let mut ids = [0u32; 2];
        for (c, id) in ids.iter_mut().enumerate() {
            let x = a.data.get_int(row * 2 + c).unwrap();
            if x < 0 || x >= limit as i128 {
                return Err(GraphError::OutOfRange {
                    path: path.to_path_buf(),
                    location: format!("row {row}"),
                    id: x,
                    limit,
                });
            }
            *id = x as u32;
        }
        max_id = Some(max_id.unwrap_or(0).max(ids[0]).max(ids[1]));
        edges.push((ids[0], ids[1]));
    }
    let num_vertices = num_vertices.unwrap_or(max_id.map_or(0, |m| m as usize + 1));
    Ok(EdgeList {
        num_vertices,
        edges,
    })
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
