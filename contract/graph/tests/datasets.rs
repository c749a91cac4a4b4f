//! Loads the real graphs in ../shared/datasets and checks them against their meta.json.

use std::path::PathBuf;

use sgnn_graph::{load_graph, Features};

fn dataset_dir(name: &str) -> Option<PathBuf> {
    sgnn_testkit::dataset(name, &format!("dataset test on {name}"))
}

fn meta_u64(dir: &std::path::Path, key: &str) -> u64 {
    let text = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    let at = text.find(&format!("\"{key}\"")).unwrap() + key.len() + 2;
    let rest = text[at..].trim_start_matches([':', ' ']);
    rest[..rest.find([',', '\n', '}']).unwrap()]
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn real_graphs_match_their_metadata() {
    for name in ["cora", "citeseer", "ego-Facebook", "email-Enron"] {
        let Some(dir) = dataset_dir(name) else {
            continue;
        };
        let g = load_graph(dir.join("edges.txt.gz").to_str().unwrap()).unwrap();
        // Isolated trailing vertices are not in an edge list; the count is at most num_nodes.
        assert!(
            g.csr.num_vertices() as u64 <= meta_u64(&dir, "num_nodes"),
            "{name}"
        );
        assert_eq!(
            g.csr.num_edges(),
            meta_u64(&dir, "num_undirected_edges"),
            "{name}"
        );
        assert_eq!(
            g.stats.duplicates, 0,
            "{name}: u<v lists have no duplicates"
        );
        assert!(
            g.original_ids.is_none() && g.stats.renumbered == 0,
            "{name}: the datasets' ids are dense and kept"
        );
    }
}

#[test]
fn cora_features_load() {
    let Some(dir) = dataset_dir("cora") else {
        return;
    };
    let f = Features::load(&dir.join("features.npy")).unwrap();
    assert_eq!((f.num_vertices, f.dim), (2708, 1433));
    assert!(f.data.iter().all(|&x| x == 0.0 || x == 1.0));
    assert!(f.data.contains(&1.0));
}
