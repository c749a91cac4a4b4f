//! Training end to end in one process: the generated labelled graph is learned far above
//! chance, cora and citeseer reach the published accuracy of Kipf and Welling (81.5%, 70.3%)
//! within 1.5 points with the standard recipe, and bad inputs give errors that name the file.

use std::path::Path;

use sgnn_graph::npy::write_npy;
use sgnn_train::data::LabelledGraph;
use sgnn_train::exchange::LocalExchange;
use sgnn_train::train::{train, Alone, Outcome, Recipe};

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
            model: sgnn_train::model::ModelKind::parse(model).unwrap(),
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
