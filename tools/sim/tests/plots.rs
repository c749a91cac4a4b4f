//! The plot functions write real SVG: each series a polyline in its colour going the way its
//! data goes, a bar per group and series, legend and axis texts. This test binary never loads
//! a font (`png_font` is not called; PNG is tested in `plots_png.rs`), so it also shows that
//! SVG needs none.

use sgnn_sim::plot::{plot_bars, plot_lines, plot_runs, Formats, PlotOptions};
use sgnn_sim::{run_strategy, NetConfig, SimConfig, Strategy, Topology};

/// Colours of the first two series (Tableau 10 blue and orange).
const C0: (u8, u8, u8) = (31, 119, 180);
const C1: (u8, u8, u8) = (255, 127, 14);

fn hex(c: (u8, u8, u8)) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

fn lines_data() -> Vec<(&'static str, Vec<(f64, f64)>)> {
    let up = (0..200).map(|i| (i as f64, i as f64 * 2.0)).collect();
    let down = (0..200).map(|i| (i as f64, 400.0 - i as f64)).collect();
    vec![("rising series", up), ("falling series", down)]
}

/// `(x, y)` pixel points of every `<polyline>` stroked in colour `c`.
fn polylines(svg: &str, c: (u8, u8, u8)) -> Vec<Vec<(i32, i32)>> {
    let stroke = format!("stroke=\"{}\"", hex(c));
    svg.split("<polyline")
        .skip(1)
        .map(|tag| &tag[..tag.find("/>").unwrap()])
        .filter(|tag| tag.contains(&stroke))
        .map(|tag| {
            let p = &tag[tag.find("points=\"").unwrap() + 8..];
            p[..p.find('"').unwrap()]
                .split_whitespace()
                .map(|xy| {
                    let (x, y) = xy.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

/// The contents of every `<text>` element.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
            body.trim().to_string()
        })
        .collect()
}

fn has_text(svg: &str, text: &str) -> bool {
    texts(svg).iter().any(|t| t == text)
}

#[test]
fn svg_lines_have_a_polyline_per_series_in_its_colour_and_direction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines.svg");
    plot_lines(
        "Test lines",
        "time (us)",
        "queue (KB)",
        &lines_data(),
        &path,
    )
    .unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.trim_start().starts_with("<svg"), "{}", &svg[..100]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    for text in [
        "Test lines",
        "time (us)",
        "queue (KB)",
        "rising series",
        "falling series",
    ] {
        assert!(
            has_text(&svg, text),
            "text {text:?} missing: {:?}",
            texts(&svg)
        );
    }
    // Each series: its line (200 points) and its legend sample (2 points).
    for (c, rising) in [(C0, true), (C1, false)] {
        let ls = polylines(&svg, c);
        assert_eq!(ls.len(), 2, "{}: {ls:?}", hex(c));
        let line = ls.iter().find(|l| l.len() > 2).unwrap();
        assert!(line.windows(2).all(|w| w[0].0 <= w[1].0), "x goes right");
        // Pixel y grows downwards.
        let (first, last) = (line[0].1, line[line.len() - 1].1);
        assert_eq!(first > last, rising, "{}: {first} -> {last}", hex(c));
    }
}

#[test]
fn svg_bars_have_a_bar_per_group_and_series() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bars.svg");
    let groups = ["host_based", "switchgnn", "third"];
    let series = [
        ("upload", vec![3.0, 1.0, 2.0]),
        ("download", vec![4.0, 1.5, 0.5]),
    ];
    plot_bars("Test bars", "traffic (MB)", &groups, &series, &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    for text in ["Test bars", "traffic (MB)", "upload", "download"]
        .iter()
        .chain(&groups)
    {
        assert!(
            has_text(&svg, text),
            "text {text:?} missing: {:?}",
            texts(&svg)
        );
    }
    for c in [C0, C1] {
        let fill = format!("fill=\"{}\"", hex(c));
        // A filled rectangle per group plus the legend's.
        let rects = svg
            .split("<rect")
            .skip(1)
            .filter(|t| t[..t.find("/>").unwrap()].contains(&fill))
            .count();
        assert_eq!(rects, groups.len() + 1, "{}", hex(c));
    }
    // Value labels.
    assert!(has_text(&svg, "1.5") && has_text(&svg, "0.5"));
    let err = plot_bars("x", "y", &groups, &[("short", vec![1.0])], &path).unwrap_err();
    assert!(err.contains("1 values for 3 groups"), "{err}");
    let err = plot_lines("x", "y", "z", &lines_data(), &dir.path().join("a.gif")).unwrap_err();
    assert!(err.contains("unknown image type"), "{err}");
}

#[test]
fn plot_runs_writes_every_plot_of_a_real_run() {
    let g = sgnn_graph::load_graph("rmat:scale=8,edge_factor=8").unwrap();
    let req = sgnn_planner::planner::PlanRequest {
        config: sgnn_plan::model::PlanConfig {
            workers: 4,
            partitioner: sgnn_plan::Partitioner::Metis,
            switch_mem_bytes: 32 * 1024,
            agg_bytes: 128,
            feature_dim: 64,
            order: sgnn_plan::SendOrder::Gamr,
            seed: 1,
            max_passes: 256,
            leaves: 1,
            aggregate: sgnn_plan::AggregateMode::Paper,
            recycle_slack: None,
        },
        graph_source: "test".into(),
        max_abs_value: 1.0,
    };
    let plan = sgnn_planner::planner::make_plan(g.csr, g.stats, &req, &mut |_| {})
        .unwrap()
        .0;
    let cfg = SimConfig {
        net: NetConfig {
            sample_every: Some(sgnn_sim::AUTO_SAMPLE_EVERY),
            max_samples: Some(sgnn_sim::AUTO_MAX_SAMPLES),
            ..NetConfig::default()
        },
        recirc_bps: 100_000_000_000,
        harvest_passes: 0,
    };
    let runs: Vec<_> = [Strategy::HostBased, Strategy::SwitchGnn]
        .iter()
        .map(|&s| {
            let topo = Topology::star(4, 100_000_000_000, 2_000_000);
            run_strategy(&plan, s, topo, cfg, &mut |_| {}).unwrap()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let opts = PlotOptions {
        formats: Formats::Svg,
        aggregator_bytes: 128,
        aggregators: Some(plan.manifest.aggregators),
    };
    let out = plot_runs(&runs, dir.path(), &opts).unwrap();
    let names: Vec<String> = out
        .files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "queue.svg",
            "aggregators.svg",
            "throughput.svg",
            "traffic.svg",
            "time.svg"
        ]
    );
    assert!(out.png_skipped.is_none());
    for p in &out.files {
        let svg = std::fs::read_to_string(p).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // Every strategy is named in every plot (legend or axis).
        for r in &runs {
            assert!(
                svg.contains(&r.strategy),
                "{} in {}",
                r.strategy,
                p.display()
            );
        }
    }
    // Over-time plots: one line per strategy (plus its legend sample); throughput has the
    // switch's aggregation line too.
    let thr = std::fs::read_to_string(dir.path().join("throughput.svg")).unwrap();
    for t in [
        "switchgnn aggregation",
        "host_based delivered",
        "switchgnn delivered",
    ] {
        assert!(has_text(&thr, t), "{t}");
    }
    assert_eq!(polylines(&thr, C0).len(), 2);
    let none = plot_runs(
        &runs,
        dir.path(),
        &PlotOptions {
            formats: Formats::None,
            ..opts
        },
    )
    .unwrap();
    assert!(none.files.is_empty());
}
