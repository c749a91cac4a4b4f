//! Fuzzes the SNAP edge-list reader (`read_edge_list`, through `read_edge_list_from` on the
//! input's bytes) and the CSR build every loader runs after it: neither may panic or allocate
//! more than the input can justify (alloc_limit.rs). The first byte chooses whether a vertex
//! count is given (as `sgnn dataset` and training do) or taken from the ids.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sgnn_graph::snap::read_edge_list_from;
use sgnn_graph::Csr;

#[path = "alloc_limit.rs"]
mod alloc_limit;

#[global_allocator]
static ALLOC: alloc_limit::Limited = alloc_limit::Limited;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, text)) = data.split_first() else {
        return;
    };
    let given = (mode & 1 == 1).then_some(mode as usize >> 1);
    if let Ok(e) = read_edge_list_from(text, Path::new("fuzz.txt"), given) {
        if let Some(n) = given {
            assert_eq!(e.num_vertices, n);
        }
        for &(u, v) in &e.edges {
            assert!((u as usize) < e.num_vertices && (v as usize) < e.num_vertices);
        }
        if let Some(ids) = &e.original_ids {
            assert_eq!(ids.len(), e.num_vertices);
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
        }
        let (g, _) = Csr::from_edges(e.num_vertices, &e.edges);
        Csr::from_raw(g.indptr().to_vec(), g.indices().to_vec()).expect("a built CSR is valid");
    }
});
