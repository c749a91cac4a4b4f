//! Fuzzes the `.npy` reader (`read_npy`, through its in-memory twin `read_npy_bytes`): it must
//! never panic, never allocate more than the input can justify (the allocator aborts above
//! 64 MiB, see alloc_limit.rs), and an array it accepts must hold exactly the elements its
//! shape says, no more bytes than the input had.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sgnn_graph::npy::read_npy_bytes;

#[path = "alloc_limit.rs"]
mod alloc_limit;

#[global_allocator]
static ALLOC: alloc_limit::Limited = alloc_limit::Limited;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = read_npy_bytes(data, Path::new("fuzz.npy")) {
        let count: usize = a.shape.iter().product();
        assert_eq!(count, a.data.len(), "shape {:?}", a.shape);
        assert!(count <= data.len(), "{count} elements from {} bytes", data.len());
        // What the feature and edge loaders do next.
        let _ = a.data.to_f32();
        if !a.data.is_empty() {
            let _ = a.data.get_int(a.data.len() - 1);
        }
    }
});
