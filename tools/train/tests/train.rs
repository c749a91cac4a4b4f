//! Training end to end in one process: the generated labelled graph is learned far above
//! chance, cora and citeseer reach the published accuracy of Kipf and Welling (81.5%, 70.3%)
//! within 1.5 points with the standard recipe, and bad inputs give errors that name the file.

use std::path::Path;

use sgnn_graph::npy::write_npy;
use sgnn_train::data::LabelledGraph;
use sgnn_train::exchange::LocalExchange;
use sgnn_train::train::{train, Alone, Outcome, Recipe};
use sgnn_train::TrainError;

fn run(g: &LabelledGraph, recipe: &Recipe) -> Outcome {
    let shard = g.whole();
    let input = shard.input();
    let local = shard.local(&input);
    train(
        &local,
        recipe,
        &mut LocalExchange::new(&g.csr),
        &mut Alone,
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn a_generated_block_model_is_learned_far_above_chance() {
    let g = LabelledGraph::load("sbm:n=1000,classes=4,seed=3", Path::new("."), 1).unwrap();
    for model in ["gcn", "sage"] {
        let recipe = Recipe {
            model: sgnn_train::gnn::ModelKind::parse(model).unwrap(),
            epochs: 100,
            ..Recipe::default()
        };
        let o = run(&g, &recipe);
        assert!(o.test_accuracy > 0.6, "{model}: {}", o.test_accuracy);
        assert!(
            o.epochs.last().unwrap().loss < o.epochs[0].loss,
            "{model}: loss fell"
        );
    }
}

#[test]
fn citation_graphs_reach_the_published_accuracy() {
    for (name, published) in [("cora", 0.815), ("citeseer", 0.703)] {
        let Some(dir) = sgnn_testkit::dataset(name, &format!("training on {name}")) else {
            continue;
        };
        let mut g = LabelledGraph::load(dir.to_str().unwrap(), Path::new("."), 1).unwrap();
        g.normalise_rows();
        let o = run(&g, &Recipe::default());
        assert!(
            (o.test_accuracy - published).abs() <= 0.015,
            "{name}: {:.3} against the published {published}",
            o.test_accuracy
        );
    }
}

#[test]
fn bad_inputs_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("edges.txt"), "0 1\n1 2\n").unwrap();
    // A gzip edge list is expected by name; write one.
    let gz = std::fs::File::create(d.join("edges.txt.gz")).unwrap();
    let mut w = flate2::write::GzEncoder::new(gz, flate2::Compression::fast());
    std::io::Write::write_all(&mut w, b"0 1\n1 2\n").unwrap();
    w.finish().unwrap();
    write_npy(&d.join("features.npy"), &[3, 2], &[0f32; 6]).unwrap();
    write_npy(&d.join("labels.npy"), &[4], &[0i64, 1, 0, 1]).unwrap();
    let e = LabelledGraph::load(d.to_str().unwrap(), Path::new("."), 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("features.npy") && e.contains("labels.npy"),
        "{e}"
    );
    write_npy(&d.join("labels.npy"), &[3], &[0i64, 1, 0]).unwrap();
    write_npy(&d.join("train_mask.npy"), &[3], &[0u8, 0, 0]).unwrap();
    write_npy(&d.join("val_mask.npy"), &[3], &[1u8, 0, 0]).unwrap();
    write_npy(&d.join("test_mask.npy"), &[3], &[0u8, 1, 0]).unwrap();
    let e = LabelledGraph::load(d.to_str().unwrap(), Path::new("."), 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("train_mask.npy") && e.contains("selects no vertex"),
        "{e}"
    );
    std::fs::remove_file(d.join("features.npy")).unwrap();
    let e = LabelledGraph::load(d.to_str().unwrap(), Path::new("."), 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing features.npy"), "{e}");
    let e = LabelledGraph::load("no-such-graph", Path::new("."), 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("sbm:"), "{e}");
    let e = LabelledGraph::load("sbm:n=10,nope=1", Path::new("."), 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown key"), "{e}");
}

/// A three-vertex labelled graph in `d` with `labels` (and zero features).
fn tiny_graph(d: &Path, labels: &[i64]) {
    let gz = std::fs::File::create(d.join("edges.txt.gz")).unwrap();
    let mut w = flate2::write::GzEncoder::new(gz, flate2::Compression::fast());
    std::io::Write::write_all(&mut w, b"0 1\n1 2\n").unwrap();
    w.finish().unwrap();
    write_npy(&d.join("features.npy"), &[3, 2], &[0f32; 6]).unwrap();
    write_npy(&d.join("labels.npy"), &[labels.len()], labels).unwrap();
}

/// Labels that would make training allocate classes for them (2^31 - 1 allocated 137 GB and
/// aborted, 2^62 overflowed a capacity) are refused, naming the file, the row and the limit;
/// so is a label of at least the vertex count. NaN features and a features header claiming
/// 10^10 rows are refused too, naming the file.
#[test]
fn labels_beyond_the_class_limit_and_bad_features_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let load = || LabelledGraph::load(d.to_str().unwrap(), Path::new("."), 1);
    tiny_graph(d, &[0, 1, 0]);
    assert_eq!(load().unwrap().classes, 2);
    for (bad, row) in [(i32::MAX as i64, 1), (1i64 << 62, 2), (3, 0), (-2, 0)] {
        let mut labels = vec![0i64, 1, 0];
        labels[row] = bad;
        tiny_graph(d, &labels);
        match load() {
            Err(TrainError::Label {
                path,
                row: r,
                label,
                limit,
            }) => {
                assert_eq!(path, d.join("labels.npy"));
                assert_eq!((r, label, limit), (row, bad as i128, 3));
            }
            other => panic!("label {bad}: expected a Label error, got {other:?}"),
        }
    }
    // uint64 labels above i64::MAX are not wrapped to negative numbers first.
    write_npy(&d.join("labels.npy"), &[3], &[0u64, u64::MAX, 1]).unwrap();
    let e = load().unwrap_err().to_string();
    assert!(
        e.contains("labels.npy")
            && e.contains("label 18446744073709551615 at row 1")
            && e.contains("0..3"),
        "{e}"
    );
    // The limit is 2^20 classes however many vertices there are.
    assert_eq!(sgnn_train::data::class_limit(3), 3);
    assert_eq!(sgnn_train::data::class_limit(1 << 30), 1 << 20);

    tiny_graph(d, &[0, 1, 0]);
    write_npy(
        &d.join("features.npy"),
        &[3, 2],
        &[0f32, 1.0, 2.0, f32::NAN, 0.0, 0.0],
    )
    .unwrap();
    let e = load().unwrap_err().to_string();
    assert!(
        e.contains("features.npy") && e.contains("[1, 1]") && e.contains("NaN"),
        "{e}"
    );
    // A header claiming 10^10 rows over 24 bytes of data: an error, not an 80 GB allocation.
    let mut bytes = std::fs::read(d.join("features.npy")).unwrap();
    let at = bytes.windows(6).position(|w| w == b"(3, 2)").unwrap();
    bytes.splice(at..at + 6, b"(10000000000, 2)".iter().copied());
    bytes.truncate(bytes.len() - 10);
    let len = bytes.len() as u16 - 10;
    bytes[8..10].copy_from_slice(&len.to_le_bytes());
    std::fs::write(d.join("features.npy"), &bytes).unwrap();
    let e = load().unwrap_err().to_string();
    assert!(
        e.contains("features.npy") && e.contains("'shape'") && e.contains("the limit"),
        "{e}"
    );
}

/// A worker's shard whose classes.txt claims 2^31 classes, or whose labels reach beyond its
/// classes, is refused before training allocates for them.
#[test]
fn a_shard_beyond_the_class_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shard = sgnn_train::data::Shard {
        vertices: vec![0, 1],
        features: vec![0.0; 4],
        dim: 2,
        labels: vec![0, 1],
        classes: 2,
        train: vec![true, false],
        val: vec![false, true],
        test: vec![true, true],
        degrees: vec![1, 1],
    };
    shard.write(dir.path()).unwrap();
    assert_eq!(sgnn_train::data::Shard::read(dir.path()).unwrap(), shard);
    std::fs::write(dir.path().join("classes.txt"), "2147483648\n").unwrap();
    let e = sgnn_train::data::Shard::read(dir.path())
        .unwrap_err()
        .to_string();
    assert!(e.contains("classes.txt") && e.contains("1048576"), "{e}");
    std::fs::write(dir.path().join("classes.txt"), "2\n").unwrap();
    write_npy(&dir.path().join("labels.npy"), &[2], &[0i64, 2]).unwrap();
    let e = sgnn_train::data::Shard::read(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("labels.npy") && e.contains("label 2 at row 1") && e.contains("0..2"),
        "{e}"
    );
}
