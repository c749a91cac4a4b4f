//! The single-process reference: what every worker's sums must equal.

use sgnn_graph::Csr;
use sgnn_wire::codec::{accumulate, FixedPoint};
use sgnn_wire::LANES;

/// Fixed-point neighbour sums of every vertex: for each `v`, `decode(sum over neighbours u of
/// encode(x_u))`, computed in int32 lanes exactly as the switch and the hosts add. `features`
/// is `[N, dim]` row-major; so is the result.
///
/// Integer addition is exact and associative, so a correct distributed run reproduces these
/// values bit for bit, whatever order contributions were added in and whichever path (switch
/// aggregate or raw) they took; each is within [`FixedPoint::error_bound`] of the real sum.
pub fn reference_sums(graph: &Csr, fixed: FixedPoint, dim: usize, features: &[f32]) -> Vec<f32> {
    let n = graph.num_vertices();
    assert_eq!(features.len(), n * dim, "features must be [N, dim]");
    let segs = dim.div_ceil(LANES);
    let mut enc = vec![[0i32; LANES]; n * segs];
    for v in 0..n {
        for g in 0..segs {
            let lo = g * LANES;
            let hi = (lo + LANES).min(dim);
            fixed.encode(
                &features[v * dim + lo..v * dim + hi],
                &mut enc[v * segs + g][..hi - lo],
            );
        }
    }
    let mut out = vec![0f32; n * dim];
    for v in 0..n {
        for g in 0..segs {
            let mut acc = [0i32; LANES];
            for &u in graph.neighbors(v as u32) {
                accumulate(&mut acc, &enc[u as usize * segs + g]);
            }
            let lo = g * LANES;
            let hi = (lo + LANES).min(dim);
            fixed.decode(&acc[..hi - lo], &mut out[v * dim + lo..v * dim + hi]);
        }
    }
    out
}

/// The next layer's input in the daemon's stand-alone runs: the neighbour mean
/// `sum / max(degree, 1)` (a GCN layer without weights), so multi-layer runs chain exactly
/// and a reference can replay them.
pub fn next_layer(sums: &[f32], degrees: &[u32], dim: usize) -> Vec<f32> {
    sums.chunks_exact(dim)
        .zip(degrees)
        .flat_map(|(row, &d)| {
            let k = d.max(1) as f32;
            row.iter().map(move |&x| x / k)
        })
        .collect()
}
