//! End-to-end tests of `switch-ctl plan` and `switch-ctl plan --verify` through the real binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use sgnn_plan::Plan;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_switch-ctl"))
}

fn dataset(name: &str) -> Option<PathBuf> {
    sgnn_testkit::dataset(name, &format!("switch-ctl plan on {name}"))
        .map(|d| d.join("edges.txt.gz"))
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run switch-ctl");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "failed:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

fn plan(graph: &str, workers: u32, mem: &str, extra: &[&str], out: &Path) -> String {
    run_ok(
        bin()
            .args(["plan", "--quiet", "--graph", graph, "--workers"])
            .arg(workers.to_string())
            .args(["--switch-mem", mem, "--out"])
            .arg(out)
            .args(extra),
    )
}

fn verify_ok(dir: &Path) -> String {
    run_ok(bin().arg("plan").arg("--verify").arg(dir))
}

fn verify_err(dir: &Path) -> String {
    let out = bin().arg("plan").arg("--verify").arg(dir).output().unwrap();
    assert!(!out.status.success(), "verify should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn plans_a_real_graph_with_every_partitioner_and_verifies() {
    let Some(cora) = dataset("cora") else { return };
    for p in ["metis", "random", "chunk", "g3"] {
        let dir = tempfile::tempdir().unwrap();
        // 64 KB of aggregators: 500 aggregators = 125 vertices of 128 values per block.
        let out = plan(
            cora.to_str().unwrap(),
            4,
            "64KB",
            &["--partitioner", p, "--aggregate", "paper"],
            dir.path(),
        );
        assert!(out.contains("switchgnn"), "{out}");
        let v = verify_ok(dir.path());
        assert!(v.starts_with("verified:"), "{v}");
        let plan = Plan::load(dir.path()).unwrap();
        assert_eq!(plan.graph.num_vertices(), 2708);
        assert_eq!(plan.graph.num_edges(), 5278);
        assert!(
            plan.blocks.len() > 1,
            "{p}: small memory needs several blocks"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
                .unwrap();
        for s in [
            "host_based",
            "strawman",
            "switchgnn",
            "unlimited",
            "supergcn_mvc",
        ] {
            assert!(
                report["traffic_bytes"][s]["total"].as_u64().unwrap() > 0,
                "{p}: traffic_bytes.{s}.total"
            );
        }
    }
}

#[test]
fn metis_cuts_fewer_edges_than_random_on_a_real_graph() {
    let Some(g) = dataset("ego-Facebook") else {
        return;
    };
    let cut = |p: &str| {
        let dir = tempfile::tempdir().unwrap();
        plan(
            g.to_str().unwrap(),
            8,
            "10MB",
            &["--partitioner", p],
            dir.path(),
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
                .unwrap();
        r["partition"]["cross_edges"].as_u64().unwrap()
    };
    let (m, r) = (cut("metis"), cut("random"));
    assert!(m * 3 < r, "metis cut {m} vs random cut {r}");
}

#[test]
fn rmat_plan_with_segments_and_recirculation() {
    let dir = tempfile::tempdir().unwrap();
    plan(
        "rmat:scale=11,edge_factor=8,seed=3",
        8,
        "256KB",
        &[
            "--feature-dim",
            "100",
            "--max-passes",
            "16",
            "--aggregate",
            "paper",
        ],
        dir.path(),
    );
    verify_ok(dir.path());
    let plan = Plan::load(dir.path()).unwrap();
    assert_eq!(plan.manifest.segments, 4);
    assert!(plan.blocks.iter().all(|b| b.max_passes() <= 16));
    assert!(
        plan.blocks.iter().any(|b| b.max_passes() > 1),
        "some source recirculates"
    );
    assert!(plan.levels() >= 2, "tight memory needs more than one level");
}

/// Loads, edits and re-saves a plan, then expects `--verify` to name the problem.
fn corrupt(edit: impl FnOnce(&mut Plan), expect: &str) {
    let Some(cora) = dataset("cora") else { return };
    let dir = tempfile::tempdir().unwrap();
    plan(
        cora.to_str().unwrap(),
        4,
        "64KB",
        &["--aggregate", "paper"],
        dir.path(),
    );
    let mut p = Plan::load(dir.path()).unwrap();
    edit(&mut p);
    p.save(dir.path()).unwrap();
    let err = verify_err(dir.path());
    assert!(err.contains(expect), "expected {expect:?} in:\n{err}");
}

#[test]
fn verify_catches_a_dropped_contribution() {
    corrupt(
        |p| {
            // Remove the last pass of a source with several passes and fix the counts so only
            // the coverage check can notice.
            let b = &mut p.blocks[0];
            let i = (0..b.sources.len())
                .find(|&i| {
                    let p = b.passes(i);
                    p.len() >= 2 && b.aggregators[p[p.len() - 1] as usize].expected >= 2
                })
                .unwrap();
            let last = b.fanout_ptr[i + 1] as usize - 1;
            let row = b.fanout.remove(last);
            for x in b.fanout_ptr.iter_mut().skip(i + 1) {
                *x -= 1;
            }
            b.aggregators[row as usize].expected -= 1;
            p.manifest.blocks[0] = b.summary(0, p.manifest.segments);
        },
        "served by no block",
    );
}

#[test]
fn verify_catches_a_wrong_expected_count() {
    corrupt(|p| p.blocks[0].aggregators[0].expected += 1, "expects");
}

#[test]
fn verify_catches_overlapping_aggregators() {
    corrupt(
        |p| {
            let base = p.blocks[0].aggregators[0].base;
            p.blocks[0].aggregators[1].base = base;
        },
        "overlap in aggregators",
    );
}

#[test]
fn verify_catches_a_worker_out_of_range() {
    corrupt(|p| p.partition[0] = 99, "assigned to worker 99");
}

#[test]
fn verify_catches_a_block_over_capacity() {
    corrupt(
        |p| {
            p.manifest.config.switch_mem_bytes = 256;
            p.manifest.aggregators = p.manifest.config.aggregators();
        },
        "aggregators",
    );
}

#[test]
fn verify_rejects_a_directory_without_plan() {
    let dir = tempfile::tempdir().unwrap();
    let err = verify_err(dir.path());
    assert!(err.contains("no plan manifest"), "{err}");
}

/// Runs `switch-ctl plan ARGS --out DIR/p`, expects failure, returns stderr.
fn plan_fails(args: &[&str], dir: &Path) -> String {
    let out = bin()
        .arg("plan")
        .args(args)
        .arg("--out")
        .arg(dir.join("p"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_inputs_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "# comment\n0 1\n1 x\n").unwrap();
    let err = plan_fails(
        &[
            "--quiet",
            "--graph",
            bad.to_str().unwrap(),
            "--workers",
            "2",
        ],
        dir.path(),
    );
    assert!(err.contains("bad.txt") && err.contains(":3"), "{err}");
    let err = plan_fails(
        &[
            "--quiet",
            "--graph",
            "rmat:scale=3,edge_factor=2",
            "--workers",
            "100",
        ],
        dir.path(),
    );
    assert!(
        err.contains("100 workers") && err.contains("vertices"),
        "{err}"
    );
    let err = plan_fails(
        &["--graph", "rmat:scale=8", "--switch-mem", "100B"],
        dir.path(),
    );
    assert!(err.contains("--switch-mem"), "{err}");
}

/// A size past 2^64 bytes is refused by name (issue 31), instead of silently becoming
/// 2^64 - 1 bytes and planning for a switch of unlimited memory.
#[test]
fn a_switch_memory_too_large_to_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = plan_fails(
        &[
            "--quiet",
            "--graph",
            "rmat:scale=8",
            "--switch-mem",
            "99999999999GB",
        ],
        dir.path(),
    );
    assert!(
        err.contains("--switch-mem") && err.contains("99999999999GB") && err.contains("too large"),
        "{err}"
    );
    assert!(!dir.path().join("p").exists(), "no plan was written");
}

#[test]
fn leaves_place_partitions_and_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("placed");
    let printed = plan(
        "rmat:scale=10,edge_factor=8",
        8,
        "1MB",
        &["--leaves", "4"],
        &out,
    );
    assert!(printed.contains("leaves     4 of 2 workers"), "{printed}");
    verify_ok(&out);
    let p = Plan::load(&out).unwrap();
    assert_eq!(p.manifest.config.leaves, 4);
    let shown = run_ok(bin().args(["show", "--plan"]).arg(&out));
    assert!(shown.contains("leaves     4 of 2 workers"), "{shown}");
    // Without --leaves nothing is said about leaves, and the manifest records 1.
    let flat = dir.path().join("flat");
    let printed = plan("rmat:scale=10,edge_factor=8", 8, "1MB", &[], &flat);
    assert!(!printed.contains("leaves "), "{printed}");
    assert_eq!(Plan::load(&flat).unwrap().manifest.config.leaves, 1);
    let shown = run_ok(bin().args(["show", "--plan"]).arg(&flat));
    assert!(!shown.contains("leaves "), "{shown}");

    let err = plan_fails(
        &["--graph", "rmat:scale=8", "--workers", "8", "--leaves", "3"],
        dir.path(),
    );
    assert!(
        err.contains("--leaves 3 does not divide --workers 8") && err.contains("--leaves 2"),
        "{err}"
    );
    let err = plan_fails(
        &["--graph", "rmat:scale=8", "--workers", "8", "--leaves", "0"],
        dir.path(),
    );
    assert!(err.contains("--leaves must be at least 1"), "{err}");
    let err = plan_fails(
        &[
            "--quiet",
            "--graph",
            "rmat:scale=8",
            "--workers",
            "8",
            "--leaves",
            "4",
            "--partitioner",
            "random",
        ],
        dir.path(),
    );
    assert!(
        err.contains("--leaves needs a locality-aware partitioner"),
        "{err}"
    );
}

#[test]
fn plans_a_graph_with_sparse_ids() {
    // Issue 14: this used to try to allocate 32 GiB for 4294967295 vertices and abort.
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("g.txt");
    std::fs::write(&g, "0 1\n1 4294967294\n").unwrap();
    let out = dir.path().join("p");
    let printed = plan(g.to_str().unwrap(), 2, "10MB", &[], &out);
    assert!(printed.contains("switchgnn"), "{printed}");
    verify_ok(&out);
    let p = Plan::load(&out).unwrap();
    assert_eq!(p.graph.num_vertices(), 3);
    assert_eq!(p.graph.num_edges(), 2);
    assert_eq!(p.manifest.graph.num_vertices, 3);
}

/// Every file of a plan directory (but `report.json`, which holds timings), by path.
fn plan_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != "report.json" {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn aggregate_paper_is_todays_plan_byte_for_byte_and_every_delivery_verifies() {
    let graph = "rmat:scale=10,edge_factor=8,seed=2";
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    // Today's plan: the planner's own output (make_plan), saved as it always was.
    let g = sgnn_graph::load_graph(graph).unwrap();
    let req = sgnn_planner::planner::PlanRequest {
        config: sgnn_plan::PlanConfig {
            workers: 4,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 32_000,
            agg_bytes: 128,
            feature_dim: 128,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 256,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: graph.into(),
        max_abs_value: 8.0,
    };
    let (today, _) = sgnn_planner::planner::make_plan(g.csr, g.stats, &req, &mut |_| {}).unwrap();
    today.save(&a).unwrap();
    plan(graph, 4, "32KB", &["--aggregate", "paper"], &b);
    let (fa, fb) = (plan_files(&a), plan_files(&b));
    assert!(fa.contains_key("plan.json") && fa.len() > 5);
    let differ: Vec<&String> = fa
        .keys()
        .chain(fb.keys())
        .filter(|k| fa.get(*k) != fb.get(*k))
        .collect();
    assert!(
        differ.is_empty(),
        "--aggregate paper must write today's plan, bit for bit; these differ: {differ:?}"
    );
    assert!(!String::from_utf8_lossy(&fa["plan.json"]).contains("aggregate"));
    // The default is auto.
    let d = dir.path().join("default");
    let out = plan(graph, 4, "32KB", &[], &d);
    assert!(out.contains("delivery: auto"), "{out}");
    assert_eq!(
        Plan::load(&d).unwrap().manifest.config.aggregate.name(),
        "auto"
    );

    plan(graph, 4, "32KB", &["--aggregate", "partials"], &c);
    let out = verify_ok(&c);
    assert!(out.contains("verified:"), "{out}");
    let p = Plan::load(&c).unwrap();
    assert_eq!(p.manifest.config.aggregate.name(), "partials");
    assert!(!p.partials.is_empty());
    let n = p.graph.num_vertices() as u32;
    assert!(p
        .blocks
        .iter()
        .all(|b| b.sources.iter().all(|&s| s >= n) && b.fanout.len() == b.sources.len()));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(c.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["aggregate"], "partials");
    assert_eq!(report["blocks"]["recirculations"], 0);
    // The paper plan's tag is not the partials plan's: a switch loaded with one refuses the
    // other's daemons.
    assert_ne!(Plan::load(&a).unwrap().tag(), p.tag());

    // A changed partials.npy is caught by every reader.
    let f = c.join("partials.npy");
    let mut bytes = std::fs::read(&f).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&f, bytes).unwrap();
    let err = verify_err(&c);
    assert!(
        err.contains("partials.npy") && err.contains("digest"),
        "{err}"
    );

    // Multicast and auto plans: raw vertices replicated by the switch, verified, and their
    // replication arrays under the manifest's digests too.
    for mode in ["multicast", "auto"] {
        let d = dir.path().join(mode);
        let out = plan(graph, 4, "32KB", &["--aggregate", mode], &d);
        assert!(out.contains("plan:"), "{out}");
        assert!(verify_ok(&d).contains("verified:"));
        let p = Plan::load(&d).unwrap();
        assert_eq!(p.manifest.config.aggregate.name(), mode);
        assert!(!p.replicate.is_empty(), "{mode} replicates raw vertices");
        assert!(!p.replica_groups().sets.is_empty());
    }
    let f = dir.path().join("multicast/replicate.npy");
    let mut bytes = std::fs::read(&f).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&f, bytes).unwrap();
    let err = verify_err(&dir.path().join("multicast"));
    assert!(
        err.contains("replicate.npy") && err.contains("digest"),
        "{err}"
    );
    let err = plan_fails(&["--graph", graph, "--aggregate", "bogus"], dir.path());
    assert!(
        err.contains("use auto, paper, multicast or partials"),
        "{err}"
    );
}

#[test]
fn the_switch_profile_sets_the_memory_unless_switch_mem_does() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("lab.json");
    std::fs::write(
        &prof,
        r#"{"name": "lab", "link_gbps": 100.0, "ports": 32, "recirc_gbps": 100.0,
            "lanes_per_pass": 32, "agg_mem_bytes": 64000, "multicast_groups": 65536,
            "delay_us": 2.0}"#,
    )
    .unwrap();
    let run = |args: &[&str], out: &Path| {
        let o = bin()
            .args(["plan", "--quiet", "--graph", "rmat:scale=9,edge_factor=8"])
            .args(["--workers", "4", "--feature-dim", "64"])
            .args(args)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{err}");
        (Plan::load(out).unwrap(), err)
    };
    let p = prof.to_str().unwrap();
    let (plan, err) = run(&["--switch", p], &tmp.path().join("a"));
    assert_eq!(plan.manifest.config.switch_mem_bytes, 64_000);
    assert!(err.contains("(switch lab)"), "{err}");
    let (plan, err) = run(
        &["--switch", p, "--switch-mem", "32KB"],
        &tmp.path().join("b"),
    );
    assert_eq!(plan.manifest.config.switch_mem_bytes, 32_000);
    assert!(err.contains("(--switch-mem)"), "{err}");
    // --profile is the older name of --switch.
    let (plan, _) = run(&["--profile", p], &tmp.path().join("c"));
    assert_eq!(plan.manifest.config.switch_mem_bytes, 64_000);
    let (plan, _) = run(&[], &tmp.path().join("d"));
    assert_eq!(plan.manifest.config.switch_mem_bytes, 10_000_000);
}

/// `--recycle` on a partials plan that needs several blocks: fewer blocks, rows sharing
/// aggregators with distinct generations (the fourth column of aggregators.npy), every
/// contribution still served once (`--verify`), and the paper's design refused.
#[test]
fn recycle_packs_more_destinations_per_block_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let graph = "rmat:scale=11,edge_factor=8,seed=3";
    let plain = dir.path().join("plain");
    let rec = dir.path().join("rec");
    plan(graph, 4, "16KB", &["--aggregate", "partials"], &plain);
    let out = plan(
        graph,
        4,
        "16KB",
        &[
            "--aggregate",
            "partials",
            "--recycle",
            "--recycle-slack",
            "4",
        ],
        &rec,
    );
    assert!(verify_ok(&rec).contains("verified:"), "{out}");
    assert!(
        out.contains("recycling by live range (slack 4 vectors)"),
        "{out}"
    );
    let (a, b) = (Plan::load(&plain).unwrap(), Plan::load(&rec).unwrap());
    assert!(
        a.blocks.len() > 1,
        "the test needs a plan of several blocks"
    );
    assert!(
        b.blocks.len() < a.blocks.len(),
        "recycling should cut blocks: {} -> {}",
        a.blocks.len(),
        b.blocks.len()
    );
    assert_eq!(b.manifest.config.recycle_slack, Some(4));
    assert!(a.manifest.config.recycle_slack.is_none());
    let cap = b.manifest.aggregators;
    let seg = b.manifest.segments as u64;
    let mut shared = 0;
    for block in &b.blocks {
        assert!(block.aggregators_used(seg as u32) <= cap);
        let mut by_base: std::collections::HashMap<u32, Vec<u32>> = Default::default();
        for s in &block.aggregators {
            by_base.entry(s.base).or_default().push(s.generation);
        }
        for gens in by_base.values_mut() {
            gens.sort_unstable();
            let n = gens.len() as u32;
            assert_eq!(
                *gens,
                (0..n).collect::<Vec<_>>(),
                "generations 0..n per aggregator"
            );
            shared += (n > 1) as u32;
        }
    }
    assert!(shared > 0, "some aggregators are recycled");
    // Recycled plans carry the generation column; plain plans keep three columns.
    let head = |p: &Path| std::fs::read(p.join("blocks/00000/aggregators.npy")).unwrap();
    assert!(String::from_utf8_lossy(&head(&rec)).contains(", 4)"));
    assert!(String::from_utf8_lossy(&head(&plain)).contains(", 3)"));
    // A recycled row sharing a generation with another on the same aggregators is refused.
    let mut bad = b.clone();
    let blk = bad
        .blocks
        .iter_mut()
        .find(|k| k.aggregators.iter().any(|s| s.generation > 0))
        .unwrap();
    let i = blk
        .aggregators
        .iter()
        .position(|s| s.generation > 0)
        .unwrap();
    blk.aggregators[i].generation = 0;
    let err = sgnn_plan::verify(&bad).unwrap_err().to_string();
    assert!(err.contains("same generation"), "{err}");
    let err = plan_fails(
        &["--graph", graph, "--aggregate", "paper", "--recycle"],
        dir.path(),
    );
    assert!(err.contains("--recycle works on delivery plans"), "{err}");
}

/// `switch-ctl plan --cores 2`: the plan split by columns is written, says so, records the
/// split in its manifest and passes `--verify` with its worker schedules; a split that would
/// cut an aggregator is refused with the fix.
#[test]
fn cores_split_the_plan_by_columns_and_it_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan(
        "rmat:scale=9,edge_factor=8,seed=2",
        4,
        "64KB",
        &["--feature-dim", "64", "--cores", "2"],
        dir.path(),
    );
    assert!(
        out.contains("split over 2 cores per worker by columns: 8 workers for the switch"),
        "{out}"
    );
    verify_ok(dir.path());
    let p = Plan::load(dir.path()).unwrap();
    assert_eq!(p.workers(), 8);
    assert_eq!(p.manifest.config.feature_dim, 32);
    let split = p.manifest.split.unwrap();
    assert_eq!((split.cores, split.workers, split.feature_dim), (2, 4, 64));
    let err = plan_fails(
        &[
            "--quiet",
            "--graph",
            "rmat:scale=9,edge_factor=8",
            "--workers",
            "4",
            "--feature-dim",
            "64",
            "--cores",
            "4",
        ],
        dir.path(),
    );
    assert!(err.contains("--cores 4 must divide"), "{err}");
}
