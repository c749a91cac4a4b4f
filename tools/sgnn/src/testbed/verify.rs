//! Verification: every worker's sums of every round, read back from the `.npy` files its
//! daemon wrote, compared bit for bit with a single-process reference computed here from the
//! same features.

use std::path::Path;

use anyhow::{bail, Context, Result};
use sgnn_graph::npy::read_npy;
use sgnn_graph::Features;
use sgnn_plan::Plan;
use sgnn_wire::codec::FixedPoint;

use super::TestbedArgs;

/// Checks every worker's sums of every round against a single-process reference computed
/// here from the same features. Returns the number of values checked.
pub(super) fn verify(plan: &Plan, a: &TestbedArgs, out: &Path) -> Result<u64> {
    use sgnn_transport::reference::{next_layer, reference_sums};
    let n = plan.graph.num_vertices();
    let dim = a.feature_dim as usize;
    let max_degree = (0..n as u32)
        .map(|v| plan.graph.degree(v) as u32)
        .max()
        .unwrap_or(1)
        .max(1);
    let fixed = FixedPoint::new(plan.manifest.frac_bits, max_degree);
    let degrees: Vec<u32> = (0..n as u32).map(|v| plan.graph.degree(v) as u32).collect();
    let mut checked = 0u64;
    let mut round = 0usize;
    for (seed, _) in [(a.seed, "forward"), (a.seed.wrapping_add(1), "backward")] {
        // A plan split over cores runs the unsplit job's features, its columns shared out
        // (`ColumnSplit::split_rows`, as the daemons do): the sums checked are the unsplit job's.
        let (rows, cols) = plan.job_shape(dim);
        let mut x = plan.job_rows(Features::random(rows, cols, seed).data);
        for _ in 0..a.layer_count() {
            let want = reference_sums(&plan.graph, fixed, dim, &x);
            for w in 0..a.workers {
                let vp = out.join(format!("sums/w{w:03}_vertices.npy"));
                let sp = out.join(format!("sums/w{w:03}_r{round:03}.npy"));
                let vertices: Vec<u32> = match read_npy(&vp)
                    .with_context(|| format!("reading {}", vp.display()))?
                    .data
                {
                    sgnn_graph::npy::NpyData::U32(v) => v,
                    d => bail!("{} holds {}, not uint32", vp.display(), d.dtype_name()),
                };
                let sums: Vec<f32> = match read_npy(&sp)
                    .with_context(|| format!("reading {}", sp.display()))?
                    .data
                {
                    sgnn_graph::npy::NpyData::F32(v) => v,
                    d => bail!("{} holds {}, not float32", sp.display(), d.dtype_name()),
                };
                if sums.len() != vertices.len() * dim {
                    bail!(
                        "{}: {} values for {} vertices",
                        sp.display(),
                        sums.len(),
                        vertices.len()
                    );
                }
                for (k, &v) in vertices.iter().enumerate() {
                    for j in 0..dim {
                        let got = sums[k * dim + j];
                        let exp = want[v as usize * dim + j];
                        if got.to_bits() != exp.to_bits() {
                            bail!("worker {w}, round {round}: vertex {v} value {j} is {got}, the single-process reference says {exp}");
                        }
                        checked += 1;
                    }
                }
            }
            x = next_layer(&want, &degrees, dim);
            round += 1;
        }
    }
    Ok(checked)
}
