//! A plan that passes its digests can still be wrong: a planner bug, or an array edited by hand
//! with the digests recomputed the way `Plan::save` computes them. Such a plan is refused by
//! `Plan::load` (every consumer's loader) with the file and the field, and by the binaries
//! (`switch-ctl plan --verify`, `switch-ctl load`, and `softswitch --plan --check` when its
//! binary is built) with that message and a failing exit, never a panic (issue 31, item 2).

use std::path::Path;
use std::process::Command;

use sgnn_graph::npy::{read_npy, write_npy, NpyData};
use sgnn_plan::model::{digest_bytes, PlanConfig};
use sgnn_plan::{Manifest, Plan, PlanError};
use sgnn_planner::planner::{make_plan, PlanRequest};

fn plan_dir() -> (tempfile::TempDir, Plan) {
    let g = sgnn_graph::load_graph("rmat:scale=7,edge_factor=6,seed=5").unwrap();
    let req = PlanRequest {
        config: PlanConfig {
            workers: 3,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 16 << 10,
            agg_bytes: 128,
            feature_dim: 32,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 16,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "rmat".into(),
        max_abs_value: 1.0,
    };
    let (plan, _) = make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    plan.save(dir.path()).unwrap();
    (dir, plan)
}

/// Recomputes the manifest's digest of `rel` (if given) and its own, as `Plan::save` does:
/// what a hand edit that wants to pass the digests does.
fn reseal(dir: &Path, rel: Option<&str>, edit: impl FnOnce(&mut Manifest)) {
    let path = dir.join("plan.json");
    let mut m: Manifest = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    if let Some(rel) = rel {
        let d = digest_bytes(&std::fs::read(dir.join(rel)).unwrap());
        m.files.insert(rel.to_string(), d);
    }
    edit(&mut m);
    m.digest.clear();
    m.digest = digest_bytes(serde_json::to_string_pretty(&m).unwrap().as_bytes());
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap() + "\n").unwrap();
}

/// Rewrites the uint32 (or uint64) array `rel` through `edit`, keeping its shape, and reseals.
fn edit_array(dir: &Path, rel: &str, edit: impl FnOnce(&mut Vec<u64>)) {
    let path = dir.join(rel);
    let a = read_npy(&path).unwrap();
    let (mut v, wide): (Vec<u64>, bool) = match a.data {
        NpyData::U32(v) => (v.into_iter().map(u64::from).collect(), false),
        NpyData::U64(v) => (v, true),
        other => panic!("{rel}: {}", other.dtype_name()),
    };
    edit(&mut v);
    if wide {
        write_npy(&path, &a.shape, &v).unwrap();
    } else {
        let v: Vec<u32> = v.into_iter().map(|x| x as u32).collect();
        write_npy(&path, &a.shape, &v).unwrap();
    }
    reseal(dir, Some(rel), |_| {});
}

/// One corruption: what it is, how to make it, and the file and field the error names.
struct Case {
    what: &'static str,
    corrupt: fn(&Path, &Plan),
    file: &'static str,
    field: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            what: "a non-monotone fanout_ptr",
            corrupt: |d, _| {
                edit_array(d, "blocks/00000/fanout_ptr.npy", |v| {
                    v[1] = v[v.len() - 1] + 5;
                })
            },
            file: "blocks/00000/fanout_ptr.npy",
            field: Some("[2]"),
        },
        Case {
            what: "an aggregator row beyond the block's",
            corrupt: |d, p| {
                let rows = p.blocks[0].aggregators.len() as u64;
                edit_array(d, "blocks/00000/fanout.npy", |v| v[0] = rows + 100)
            },
            file: "blocks/00000/fanout.npy",
            field: Some("[0]"),
        },
        Case {
            what: "a destination outside the graph",
            corrupt: |d, p| {
                let n = p.graph.num_vertices() as u64;
                edit_array(d, "blocks/00000/aggregators.npy", |v| v[0] = n + 5)
            },
            file: "blocks/00000/aggregators.npy",
            field: Some("row 0, column 0 (destination)"),
        },
        Case {
            what: "a vertex moved to another worker",
            corrupt: |d, p| {
                // The destination of block 0's first row, moved to the worker of its first
                // source: that contribution now stays inside one worker.
                let b = &p.blocks[0];
                let src = b.sources[0];
                let dst = b.aggregators[b.fanout[0] as usize].dst;
                let to = p.partition[src as usize] as u64;
                edit_array(d, "partition.npy", |v| v[dst as usize] = to)
            },
            file: "partition.npy",
            field: None,
        },
        Case {
            what: "a vertex moved to a worker it has no edge to",
            corrupt: |d, p| {
                // A vertex with no cross edge at all, moved: its local edges become cross
                // edges that no block serves.
                let v = (0..p.graph.num_vertices() as u32)
                    .find(|&v| {
                        let pv = p.partition[v as usize];
                        p.graph.degree(v) > 0
                            && p.graph
                                .neighbors(v)
                                .iter()
                                .all(|&u| p.partition[u as usize] == pv)
                    })
                    .expect("a vertex without cross edges");
                let to = (p.partition[v as usize] + 1) % p.workers();
                edit_array(d, "partition.npy", |a| a[v as usize] = to as u64)
            },
            file: "partition.npy",
            field: None,
        },
        Case {
            what: "frac_bits 31",
            corrupt: |d, _| reseal(d, None, |m| m.frac_bits = 31),
            file: "plan.json",
            field: Some("frac_bits"),
        },
        Case {
            what: "a non-monotone indptr",
            corrupt: |d, _| {
                let rel = "graph/indptr.npy";
                edit_array(d, rel, |v| v[1] = v[v.len() - 1] + 5);
                // The fingerprint recomputed too: only the structure is wrong.
                let a = read_npy(&d.join(rel)).unwrap();
                let NpyData::U64(indptr) = a.data else {
                    panic!()
                };
                let NpyData::U32(indices) = read_npy(&d.join("graph/indices.npy")).unwrap().data
                else {
                    panic!()
                };
                let fp = fingerprint(&indptr, &indices);
                reseal(d, None, |m| m.graph.fingerprint = format!("{fp:016x}"));
            },
            file: "graph/indptr.npy",
            field: None,
        },
    ]
}

/// `Csr::fingerprint` of raw arrays (which `Csr` will not hold when they are broken).
fn fingerprint(indptr: &[u64], indices: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(indptr.len() as u64 - 1);
    indptr.iter().for_each(|&p| eat(p));
    indices.iter().for_each(|&i| eat(i as u64));
    h
}

#[test]
fn plans_with_recomputed_digests_and_broken_structure_are_refused_by_the_loader() {
    for case in cases() {
        let (dir, plan) = plan_dir();
        Plan::load(dir.path()).expect("the intact plan loads");
        (case.corrupt)(dir.path(), &plan);
        let r = std::panic::catch_unwind(|| Plan::load(dir.path()));
        let err = match r {
            Err(_) => panic!("{}: Plan::load panicked", case.what),
            Ok(Ok(_)) => panic!("{}: the plan was accepted", case.what),
            Ok(Err(e)) => e,
        };
        let shown = err.to_string();
        let want = dir.path().join(case.file);
        match &err {
            PlanError::Structure { path, field, .. } => {
                assert_eq!(path, &want, "{}: {shown}", case.what);
                if let Some(f) = case.field {
                    assert_eq!(field, f, "{}: {shown}", case.what);
                }
            }
            PlanError::Format { path, .. } => {
                assert_eq!(path, &want, "{}: {shown}", case.what);
                assert!(shown.contains("indptr decreases"), "{}: {shown}", case.what);
            }
            other => panic!("{}: unexpected error {other:?}", case.what),
        }
        assert!(shown.contains(case.file), "{}: {shown}", case.what);
    }
}

#[test]
fn plans_with_recomputed_digests_and_broken_structure_are_refused_by_the_binaries() {
    let softswitch = Path::new(env!("CARGO_BIN_EXE_switch-ctl"))
        .parent()
        .unwrap()
        .join("softswitch");
    // softswitch's binary is there when the workspace (or `-p softswitch`) was built, as in
    // plan_integrity.rs; switch-ctl's two commands are always run.
    let with_softswitch = softswitch.is_file();
    for case in cases() {
        let (dir, plan) = plan_dir();
        (case.corrupt)(dir.path(), &plan);
        let d = dir.path().to_str().unwrap();
        let mut runs = vec![
            (
                "switch-ctl plan --verify",
                Command::new(env!("CARGO_BIN_EXE_switch-ctl"))
                    .args(["plan", "--verify", d])
                    .output()
                    .unwrap(),
            ),
            (
                "switch-ctl load",
                Command::new(env!("CARGO_BIN_EXE_switch-ctl"))
                    .args(["load", "--plan", d, "--target", "unix:/nonexistent.sock"])
                    .output()
                    .unwrap(),
            ),
        ];
        if with_softswitch {
            runs.push((
                "softswitch --plan --check",
                Command::new(&softswitch)
                    .args(["--plan", d, "--worker", "127.0.0.1:9", "--check"])
                    .output()
                    .unwrap(),
            ));
        }
        for (what, o) in runs {
            let err = String::from_utf8_lossy(&o.stderr).to_string()
                + &String::from_utf8_lossy(&o.stdout);
            assert!(!o.status.success(), "{what} accepted {}", case.what);
            assert!(
                err.contains(case.file) && !err.contains("panicked"),
                "{what}, {}: {err}",
                case.what
            );
            if let Some(f) = case.field {
                assert!(err.contains(f), "{what}, {}: {err}", case.what);
            }
        }
    }
}
