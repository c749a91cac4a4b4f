//! A plan directory whose files were corrupted is refused with an error naming the file, never
//! read into wrong tables or wrong sums: every one-byte flip at every position class (format
//! header, array header, first, middle and last data bytes; the manifest's beginning, middle
//! and end) of every file makes the readers fail, and the binaries (`switch-ctl plan
//! --verify`, `switch-ctl load`, `softswitch --plan`) exit with a message, not a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

use sgnn_plan::model::PlanConfig;
use sgnn_plan::Plan;
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

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Positions worth flipping: the classes of bytes a reader interprets differently.
fn positions(path: &Path, len: usize) -> Vec<usize> {
    let mut v = vec![0, len / 2, len - 1];
    if path.extension().is_some_and(|e| e == "npy") {
        let bytes = std::fs::read(path).unwrap();
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let data = 10 + hlen;
        v.extend([6, 8, 12, data - 1]); // version, header length, header text, its end
        if data < len {
            v.extend([data, data + (len - data) / 2]); // first and middle data bytes
        }
    } else {
        v.extend([len / 3, 2 * len / 3]);
    }
    v.sort();
    v.dedup();
    v.retain(|&p| p < len);
    v
}

/// Everything a daemon, the switch and the loader read from a plan.
fn read_all(dir: &Path, workers: u32) -> Result<(), String> {
    Plan::load(dir).map_err(|e| e.to_string())?;
    for w in 0..workers {
        Plan::load_worker_schedule(dir, w).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[test]
fn every_one_byte_flip_of_every_file_is_an_error_naming_the_file() {
    let (dir, plan) = plan_dir();
    let workers = plan.workers();
    read_all(dir.path(), workers).expect("the intact plan reads");
    let mut flips = 0;
    for path in files(dir.path()) {
        let original = std::fs::read(&path).unwrap();
        let name = path.strip_prefix(dir.path()).unwrap().display().to_string();
        for pos in positions(&path, original.len()) {
            let mut bad = original.clone();
            bad[pos] ^= 0xff;
            std::fs::write(&path, &bad).unwrap();
            let r = std::panic::catch_unwind(|| read_all(dir.path(), workers));
            std::fs::write(&path, &original).unwrap();
            let err = match r {
                Err(_) => panic!("{name} byte {pos}: a reader panicked"),
                Ok(Ok(())) => panic!("{name} byte {pos}: the corrupted plan was accepted"),
                Ok(Err(e)) => e,
            };
            let file = path.file_name().unwrap().to_str().unwrap();
            assert!(err.contains(file), "{name} byte {pos}: {err}");
            flips += 1;
        }
    }
    assert!(flips > 50, "{flips} flips");
    read_all(dir.path(), workers).expect("restored");
}

#[test]
fn a_corrupted_partition_is_refused_by_the_binaries_with_a_message() {
    let (dir, _) = plan_dir();
    let p = dir.path().join("partition.npy");
    let mut bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x01; // one worker id changes: a plausible, wrong partition
    std::fs::write(&p, &bytes).unwrap();
    let d = dir.path().to_str().unwrap();
    let softswitch = Path::new(env!("CARGO_BIN_EXE_switch-ctl"))
        .parent()
        .unwrap()
        .join("softswitch");
    let mut runs = vec![
        (
            "switch-ctl load",
            Command::new(env!("CARGO_BIN_EXE_switch-ctl"))
                .args(["load", "--plan", d, "--target", "unix:/nonexistent.sock"])
                .output()
                .unwrap(),
        ),
        (
            "switch-ctl plan --verify",
            Command::new(env!("CARGO_BIN_EXE_switch-ctl"))
                .args(["plan", "--verify", d])
                .output()
                .unwrap(),
        ),
    ];
    if softswitch.is_file() {
        runs.push((
            "softswitch --plan",
            Command::new(&softswitch)
                .args(["--plan", d, "--worker", "127.0.0.1:9"])
                .output()
                .unwrap(),
        ));
    }
    for (what, o) in runs {
        let err =
            String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
        assert!(!o.status.success(), "{what} accepted a corrupted partition");
        assert!(
            err.contains("partition.npy") && err.contains("corrupted") && !err.contains("panicked"),
            "{what}: {err}"
        );
    }
}
