//! Sparse vertex ids (issue 14): files whose ids are spread over a large range load as dense
//! graphs over `0..n`, with the original ids kept; dense files keep their ids.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sgnn_graph::npy::write_npy;
use sgnn_graph::{load_graph, GraphError, LoadedGraph};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn load(p: &Path) -> Result<LoadedGraph, GraphError> {
    load_graph(p.to_str().unwrap())
}

fn edges(g: &LoadedGraph) -> Vec<(u32, u32)> {
    g.csr.edges().collect()
}

#[test]
fn the_issue_file_loads_as_three_vertices() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "g.txt", "0 1\n1 4294967294\n");
    let g = load(&p).unwrap();
    assert_eq!(g.csr.num_vertices(), 3);
    assert_eq!(g.original_ids.as_deref(), Some(&[0, 1, 4_294_967_294][..]));
    assert_eq!(edges(&g), vec![(0, 1), (1, 2)]);
    assert_eq!(g.stats.renumbered, 1);
    assert_eq!(g.original_id(2), 4_294_967_294);
    assert_eq!(g.vertex_of(4_294_967_294), Some(2));
    assert_eq!(g.vertex_of(2), None);
    let s = g.summary();
    assert!(
        s.contains("3 vertices, 2 edges")
            && s.contains("sparse ids: 1 of 3 renumbered (largest id 4294967294)"),
        "{s}"
    );
}

#[test]
fn an_id_of_1e8_loads_instantly() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "big.txt", "# sparse\n5 100000000\n100000000 7\n");
    let t = Instant::now();
    let g = load(&p).unwrap();
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert_eq!(g.csr.num_vertices(), 3);
    assert_eq!(g.original_ids.as_deref(), Some(&[5, 7, 100_000_000][..]));
    assert_eq!(edges(&g), vec![(0, 2), (1, 2)]);
    assert_eq!(g.stats.renumbered, 3);
    // Ids up to u64::MAX are fine too: nothing is allocated per id.
    let p = write(d.path(), "huge.txt", "0 18446744073709551615\n3 1\n");
    let g = load(&p).unwrap();
    assert_eq!(g.original_ids.as_deref(), Some(&[0, 1, 3, u64::MAX][..]));
    assert_eq!(edges(&g), vec![(0, 3), (1, 2)]);
}

#[test]
fn dense_files_keep_their_ids() {
    let d = tempfile::tempdir().unwrap();
    // Isolated vertices 2 and 4..=999: within the slack of 1024, so nothing is renumbered.
    let p = write(d.path(), "dense.txt", "0 1\n3 1\n1000 0\n");
    let g = load(&p).unwrap();
    assert_eq!(g.original_ids, None);
    assert_eq!(g.csr.num_vertices(), 1001);
    assert_eq!(edges(&g), vec![(0, 1), (0, 1000), (1, 3)]);
    assert_eq!(g.stats.renumbered, 0);
    assert_eq!(g.original_id(1000), 1000);
    assert_eq!(g.vertex_of(3), Some(3));
    assert!(!g.summary().contains("sparse"), "{}", g.summary());
    // A path over 0..2000 with every other vertex used: 1001 distinct ids over 2001 is dense.
    let text: String = (0..1000)
        .map(|i| format!("{} {}\n", 2 * i, 2 * i + 2))
        .collect();
    let g = load(&write(d.path(), "half.txt", &text)).unwrap();
    assert_eq!((g.csr.num_vertices(), g.original_ids), (2001, None));
    // The same path with every id times 3: 1001 over 6001 is sparse.
    let text: String = (0..1000)
        .map(|i| format!("{} {}\n", 6 * i, 6 * i + 6))
        .collect();
    let g = load(&write(d.path(), "third.txt", &text)).unwrap();
    assert_eq!(g.csr.num_vertices(), 1001);
    let ids = g.original_ids.as_deref().unwrap();
    assert!(ids.iter().enumerate().all(|(v, &id)| id == 6 * v as u64));
    assert_eq!(g.stats.renumbered, 1000);
}

#[test]
fn npy_edge_arrays_with_sparse_ids() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("e.npy");
    write_npy(&p, &[2, 2], &[0i64, 1, 1, 4_294_967_294]).unwrap();
    let g = load(&p).unwrap();
    assert_eq!(g.csr.num_vertices(), 3);
    assert_eq!(g.original_ids.as_deref(), Some(&[0, 1, 4_294_967_294][..]));
    assert_eq!(edges(&g), vec![(0, 1), (1, 2)]);
    write_npy(&p, &[2, 2], &[u64::MAX, 10, 10, 1 << 40]).unwrap();
    let g = load(&p).unwrap();
    assert_eq!(
        g.original_ids.as_deref(),
        Some(&[10, 1 << 40, u64::MAX][..])
    );
    assert_eq!(edges(&g), vec![(0, 1), (0, 2)]);
    // Dense arrays keep their ids.
    write_npy(&p, &[2, 2], &[0u32, 3, 3, 1]).unwrap();
    let g = load(&p).unwrap();
    assert_eq!((g.csr.num_vertices(), g.original_ids), (4, None));
    // A negative id names the row.
    write_npy(&p, &[3, 2], &[0i64, 1, 1, 5_000_000_000, 2, -7]).unwrap();
    let e = load(&p).unwrap_err().to_string();
    assert!(
        e.contains("e.npy:row 2") && e.contains("vertex id -7"),
        "{e}"
    );
}

#[test]
fn malformed_ids_name_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    for (name, text, at, what) in [
        ("word.txt", "0 1\n# c\n2 abc\n", ":3:", "found \"abc\""),
        (
            "neg.txt",
            "0 1\n-5 2\n",
            ":2:",
            "vertex id -5 is out of range",
        ),
        (
            "over.txt",
            "0 1\n1 2\n3 18446744073709551616\n",
            ":3:",
            "vertex id 18446744073709551616 is out of range",
        ),
        ("float.txt", "0 1.5\n", ":1:", "found \"1.5\""),
        ("hex.txt", "0 1\n0x10 2\n", ":2:", "found \"0x10\""),
    ] {
        let p = write(d.path(), name, text);
        let e = load(&p).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{name}{at}")) && e.contains(what),
            "{name}: {e}"
        );
    }
}
