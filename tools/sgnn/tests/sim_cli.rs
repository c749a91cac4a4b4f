//! `sgnn sim` through the real binary: files written, rows per strategy, bytes equal to the
//! planner's traffic model, bad options rejected with a message.

use std::process::Command;

fn sgnn() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sgnn"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    c
}

/// `sgnn sim` on a small R-MAT graph (2^scale vertices, edge factor 8) with 4 workers, 64 KB of
/// switch memory and 64 features, plus `extra`, writing into `out`.
fn small_sim(scale: u32, extra: &[&str], out: &std::path::Path) -> std::process::Output {
    sgnn()
        .args([
            "sim",
            "--graph",
            &format!("rmat:scale={scale},edge_factor=8"),
        ])
        .args([
            "--workers",
            "4",
            "--switch-mem",
            "64KB",
            "--feature-dim",
            "64",
        ])
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn sim_writes_summary_and_one_csv_row_per_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let o = small_sim(
        9,
        &[
            "--strategies",
            "host_based,switchgnn",
            "--link-gbps",
            "25",
            "--delay-us",
            "1",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("25 Gbit/s links, 1 us delay"), "{stdout}");
    assert!(stdout.contains("placement: none (one switch)"), "{stdout}");
    assert_eq!(stdout.matches(" equal").count(), 2, "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("runs.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(rows[1].starts_with("host_based,true,"));
    assert!(rows[2].starts_with("switchgnn,true,"));
    let summary = std::fs::read_to_string(dir.path().join("summary.txt")).unwrap();
    assert!(summary.contains("h0->s0"), "per-link detail: {summary}");
    let links = std::fs::read_to_string(dir.path().join("links.csv")).unwrap();
    assert_eq!(links.lines().count(), 1 + 2 * 8, "{links}");
    // The time series: a header, then rows of both strategies at increasing times; the
    // default (auto) sampling gives at most 2000 rows per strategy.
    let series = std::fs::read_to_string(dir.path().join("series.csv")).unwrap();
    let mut lines = series.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &header[..3],
        ["strategy", "t_us", "interval_us"],
        "{header:?}"
    );
    let t_col = 1;
    for strategy in ["host_based", "switchgnn"] {
        let rows: Vec<Vec<&str>> = series
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|r| r[0] == strategy)
            .collect();
        assert!(
            (10..=2000).contains(&rows.len()),
            "{strategy}: {} rows",
            rows.len()
        );
        assert!(rows.iter().all(|r| r.len() == header.len()));
        let t: Vec<f64> = rows.iter().map(|r| r[t_col].parse().unwrap()).collect();
        assert!(
            t.windows(2).all(|w| w[0] < w[1]),
            "{strategy}: times increase"
        );
    }
    // Plots: SVG always, PNG when a font is installed (the CLI says so otherwise).
    let err = String::from_utf8_lossy(&o.stderr);
    let png = !err.contains("PNG plots not written");
    for stem in ["queue", "aggregators", "throughput", "traffic", "time"] {
        let svg = std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{stem}.svg");
        let p = dir.path().join(format!("{stem}.png"));
        assert_eq!(p.exists(), png, "{stem}.png: {err}");
        if png {
            let bytes = std::fs::read(&p).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        }
        assert!(stdout.contains(&format!("{stem}.svg")), "{stdout}");
    }
    if !png {
        sgnn_testkit::skipped(
            "sgnn sim PNG plots",
            format_args!("no font: {}", err.trim()),
            sgnn_testkit::HOW_FONT,
        );
    }
}

#[test]
fn sim_sample_us_and_plots_choose_the_interval_and_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let o = small_sim(
        8,
        &[
            "--strategies",
            "host_based",
            "--sample-us",
            "0.5",
            "--plots",
            "svg",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let series = std::fs::read_to_string(dir.path().join("series.csv")).unwrap();
    let rows: Vec<&str> = series.lines().skip(1).collect();
    assert!(rows.len() > 2, "{series}");
    // Every interval but the last is the 0.5 us asked for.
    for r in &rows[..rows.len() - 1] {
        assert_eq!(r.split(',').nth(2), Some("0.500000"), "{r}");
    }
    assert!(dir.path().join("traffic.svg").exists());
    assert!(!dir.path().join("traffic.png").exists(), "--plots svg");
}

/// `runs.csv` as header-keyed rows.
fn runs(dir: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn sim_epoch_time_is_the_layer_exchanges_plus_computation_and_sgnn_plot_draws_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = small_sim(
        8,
        &[
            "--strategies",
            "host_based,switchgnn",
            "--layers",
            "3",
            "--compute-ms",
            "0.25",
            "--plots",
            "none",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("epoch: 3 layers, 5 exchanges (forward and backward), plus 250.000 us"),
        "{stdout}"
    );
    let rows = runs(dir.path());
    assert_eq!(rows.len(), 2);
    for r in &rows {
        let layer: f64 = r["time_per_layer_us"].parse().unwrap();
        let epoch: f64 = r["time_per_epoch_us"].parse().unwrap();
        assert_eq!(r["exchanges_per_epoch"], "5");
        assert_eq!(r["compute_us"], "250.000");
        assert!(layer > 0.0);
        // Both columns are rounded to 1 ns.
        assert!(
            (epoch - (5.0 * layer + 250.0)).abs() < 0.01,
            "{}: layer {layer} epoch {epoch}",
            r["strategy"]
        );
    }
    let o = sgnn()
        .args(["sim", "--graph", "rmat:scale=8", "--layers", "0", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--layers must be at least 1"));

    // `sgnn plot` draws the runs.csv: one line per strategy.
    let svg = dir.path().join("epoch.svg");
    let o = sgnn()
        .args(["plot", "--csv"])
        .arg(dir.path().join("runs.csv"))
        .args([
            "--x",
            "layers",
            "--y",
            "time_per_epoch_us",
            "--series",
            "strategy",
            "--out",
        ])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 line(s): host_based [1], switchgnn [1]"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg") && text.contains("switchgnn"),
        "{text}"
    );
    let o = sgnn()
        .args(["plot", "--csv"])
        .arg(dir.path().join("runs.csv"))
        .args(["--x", "workers", "--y", "time_per_epoch_us", "--out"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("has no column \"workers\""),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn sim_rejects_unknown_strategies_and_topologies() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value, msg) in [
        ("--strategies", "host_based,g9", "unknown strategy \"g9\""),
        ("--topology", "ring", "use star or leaf-spine"),
        // The default 8 leaves cannot share 2 workers.
        ("--topology", "leaf-spine", "a leaf needs a host"),
        ("--link-gbps", "0", "--link-gbps must be a positive"),
        ("--plots", "gif", "expected svg, png, both or none"),
        ("--sample-us", "0", "--sample-us must be positive"),
        ("--sample-us", "often", "--sample-us: expected a number"),
        // Loss between switches on a star, which has one.
        ("--fabric-loss", "0.01", "it needs --topology leaf-spine"),
        (
            "--fabric-loss",
            "1.5",
            "--fabric-loss is a probability in [0, 1)",
        ),
    ] {
        let o = sgnn()
            .args([
                "sim",
                "--graph",
                "rmat:scale=6",
                "--workers",
                "2",
                flag,
                value,
                "--out",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(msg), "{flag} {value}: {err}");
    }
}

/// An edge list of 3 planted clusters of 80 vertices (ids interleaved; each pair inside a
/// cluster an edge with probability 1/8) and 20 edges between them, written to `path`.
fn write_planted(path: &std::path::Path) {
    let mut x = 7u64;
    let mut next = move || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let (k, size) = (3u64, 80u64);
    let mut text = String::new();
    for c in 0..k {
        for i in 0..size {
            for j in i + 1..size {
                if next() % 8 == 0 {
                    text += &format!("{} {}\n", i * k + c, j * k + c);
                }
            }
        }
    }
    let mut between = 0;
    while between < 20 {
        let (a, b) = (next() % (k * size), next() % (k * size));
        if a % k != b % k {
            text += &format!("{a} {b}\n");
            between += 1;
        }
    }
    std::fs::write(path, text).unwrap();
}

/// Runs `sgnn sim` on a planted graph over a 3 x 2 leaf-spine of 6 workers with `extra`
/// options; returns stdout. (Three leaves: METIS's flat numbering, nested in halves, matches
/// a power-of-two number of leaves by chance, so only an odd count shows placement's effect.)
fn leaf_spine_sim(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("planted.txt");
    write_planted(&graph);
    let o = sgnn()
        .args(["sim", "--graph"])
        .arg(&graph)
        .args([
            "--workers",
            "6",
            "--topology",
            "leaf-spine",
            "--leaves",
            "3",
            "--spines",
            "2",
            "--switch-mem",
            "32KB",
            "--feature-dim",
            "64",
            "--plots",
            "none",
        ])
        .args(extra)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout
}
/// The `(+ N B on leaf-spine links)` of `strategy`'s line in the traffic check.
fn fabric_bytes(stdout: &str, strategy: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(strategy) && l.contains(" model "))
        .unwrap_or_else(|| panic!("no traffic line for {strategy}: {stdout}"));
    let tail = line.split("(+ ").nth(1).unwrap_or_else(|| panic!("{line}"));
    tail.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn sim_places_partitions_on_leaves_unless_told_not_to() {
    let placed = leaf_spine_sim(&["--strategies", "host_based,switchgnn"]);
    assert!(
        placed.contains("placement: partitions on 3 leaves"),
        "{placed}"
    );
    assert_eq!(placed.matches(" equal").count(), 2, "{placed}");
    let flat = leaf_spine_sim(&[
        "--strategies",
        "host_based,switchgnn",
        "--no-leaf-placement",
    ]);
    assert!(
        flat.contains("placement: none (--no-leaf-placement"),
        "{flat}"
    );
    assert_eq!(flat.matches(" equal").count(), 2, "{flat}");
    for s in ["host_based", "switchgnn"] {
        let (p, f) = (fabric_bytes(&placed, s), fabric_bytes(&flat, s));
        assert!(p < f, "{s}: placed {p} B on the fabric, flat {f} B");
    }
    // The random partitioner is the locality-blind baseline: never placed, and said so.
    let random = leaf_spine_sim(&["--strategies", "host_based", "--partitioner", "random"]);
    assert!(
        random.contains("placement: none (the random partitioner is locality-blind"),
        "{random}"
    );
}

/// Loss on a leaf-spine runs the real switches and engines (no models since 2026-11-27): the
/// header says how a fabric loses and recovers, every strategy completes, sums verified.
#[test]
fn sim_recovers_loss_on_a_leaf_spine_with_the_real_code() {
    let out = leaf_spine_sim(&[
        "--strategies",
        "host_based,switchgnn,switchgnn_auto",
        "--loss",
        "0.02",
        "--fabric-loss",
        "0.02",
        "--timeout-us",
        "200",
        "--verify",
    ]);
    assert!(
        out.contains("fabric loss: leaves drop 0.02 of their workers' frames, every switch 0.02"),
        "{out}"
    );
    assert!(!out.contains("simulator's models"), "{out}");
    assert!(
        !out.contains("incomplete") && !out.contains("did not complete"),
        "{out}"
    );
}

#[test]
fn sim_takes_its_switch_from_a_profile_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let prof = dir.path().join("lab.json");
    std::fs::write(
        &prof,
        r#"{"name": "lab", "link_gbps": 25.0, "ports": 32, "recirc_gbps": 50.0,
            "lanes_per_pass": 32, "agg_mem_bytes": 2000000, "multicast_groups": 65536,
            "delay_us": 1.0}"#,
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let o = sgnn()
            .args([
                "sim",
                "--graph",
                "rmat:scale=9,edge_factor=8",
                "--workers",
                "4",
            ])
            .args([
                "--feature-dim",
                "64",
                "--strategies",
                "switchgnn",
                "--plots",
                "none",
            ])
            .arg("--switch")
            .arg(&prof)
            .args(extra)
            .arg("--out")
            .arg(dir.path().join("out"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let s = run(&[]);
    assert!(s.contains("25 Gbit/s links, 1 us delay"), "{s}");
    assert!(s.contains("recirculation 50 Gbit/s"), "{s}");
    assert!(
        s.contains("switch profile lab: 2 MB of aggregator memory"),
        "{s}"
    );
    let s = run(&["--link-gbps", "10", "--recirc-gbps", "20"]);
    assert!(s.contains("10 Gbit/s links, 1 us delay"), "{s}");
    assert!(s.contains("recirculation 20 Gbit/s"), "{s}");

    let o = sgnn()
        .args([
            "sim",
            "--graph",
            "rmat:scale=8,edge_factor=8",
            "--switch",
            "tofino9",
        ])
        .arg("--out")
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("default, tofino1, tofino2"),
        "{e}"
    );
}
