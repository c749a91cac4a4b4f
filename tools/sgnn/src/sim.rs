//! `sgnn sim`: plan a graph with `switch-ctl`'s planner and simulate one layer of each
//! strategy on a packet-level network model (`sgnn-sim`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_plan::model::PlanConfig;
use sgnn_plan::traffic;
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::plot::{plot_runs, Formats, PlotOptions};
use sgnn_sim::{
    report, run_strategy, NetConfig, SimConfig, Strategy, Topology, AUTO_MAX_SAMPLES,
    AUTO_SAMPLE_EVERY,
};
use switch_ctl::planner::{make_plan, PlanRequest};
use switch_ctl::units::parse_bytes;

const GBPS: f64 = 1e9;
/// Bound of a fixed-interval series (`--sample-us X`): past it, samples merge in pairs.
const FIXED_MAX_SAMPLES: usize = 1 << 20;

#[derive(Args)]
pub struct SimArgs {
    /// Graph source: edge list file, .npy edge array or rmat:scale=S,... spec.
    #[arg(long)]
    graph: String,
    /// Workers (hosts), one graph partition each.
    #[arg(long, default_value_t = 8)]
    workers: u32,
    /// Topology: star (N hosts on one switch). leaf-spine is not simulated yet.
    #[arg(long, default_value = "star")]
    topology: String,
    /// Switch memory for aggregators (B, KB, MB, GB = x1000; KiB, MiB, GiB = x1024).
    #[arg(long, default_value = "100MB")]
    switch_mem: String,
    /// Feature vector length (values) of the layer.
    #[arg(long, default_value_t = 128)]
    feature_dim: u32,
    /// Comma-separated strategies: host_based, switchgnn.
    #[arg(long, default_value = "host_based,switchgnn")]
    strategies: String,
    /// Output directory: summary.txt, runs.csv, links.csv, series.csv and the plots
    /// (queue, aggregators, throughput, traffic, time; .svg and/or .png, see --plots).
    #[arg(long)]
    out: PathBuf,
    /// Time series interval in simulated microseconds (series.csv and the plots over
    /// time), or `auto`: start at 0.1 us and double the interval whenever a run reaches
    /// 2000 samples, so every run longer than 100 us ends with 1000 to 2000 samples. A
    /// fixed interval is kept unless a run would exceed 1,048,576 samples.
    #[arg(long, default_value = "auto", value_name = "US|auto")]
    sample_us: String,
    /// Plots to write into --out: svg, png, both or none. PNG text needs a TrueType font:
    /// $SGNN_PLOT_FONT, else DejaVu Sans (Debian: fonts-dejavu-core) or Liberation Sans;
    /// without one only the SVG files are written, with a warning.
    #[arg(long, default_value = "both", value_name = "svg|png|both|none")]
    plots: Formats,
    /// Bandwidth of every link, each direction, in Gbit/s.
    #[arg(long, default_value_t = 100.0)]
    link_gbps: f64,
    /// Propagation delay of every link, in microseconds.
    #[arg(long, default_value_t = 2.0)]
    delay_us: f64,
    /// Buffer of each switch egress port (all priority queues together), bytes with unit.
    #[arg(long, default_value = "32MB")]
    buffer: String,
    /// Queue length at or above which the switch ECN-marks a packet, bytes with unit.
    #[arg(long, default_value = "100KB")]
    ecn_threshold: String,
    /// Bandwidth of the switch's recirculation path in Gbit/s (default: the link rate).
    #[arg(long)]
    recirc_gbps: Option<f64>,
    /// Host pacing rate in Gbit/s (default: the link rate).
    #[arg(long)]
    pace_gbps: Option<f64>,
    /// Partitioner: metis, random, chunk or g3.
    #[arg(long, default_value = "metis")]
    partitioner: String,
    /// Send order inside a block: gamr, random or id.
    #[arg(long, default_value = "gamr")]
    order: String,
    /// Seed of the planner.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn main(a: SimArgs) -> ExitCode {
    match run(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bps(gbps: f64, name: &str) -> Result<u64> {
    if !(gbps.is_finite() && gbps > 0.0) {
        bail!("{name} must be a positive number of Gbit/s, got {gbps}");
    }
    Ok((gbps * GBPS).round() as u64)
}

fn run(a: SimArgs) -> Result<()> {
    let strategies: Vec<Strategy> = a
        .strategies
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|e: String| anyhow!("--strategies: {e}"))
        })
        .collect::<Result<_>>()?;
    if a.topology != "star" {
        bail!(
            "--topology {}: only star is simulated so far (leaf-spine is issue 5's next step)",
            a.topology
        );
    }
    let link_bps = bps(a.link_gbps, "--link-gbps")?;
    if !(a.delay_us.is_finite() && a.delay_us >= 0.0) {
        bail!(
            "--delay-us must be a non-negative number, got {}",
            a.delay_us
        );
    }
    let delay = (a.delay_us * PS_PER_US as f64).round() as u64;
    let (sample_every, max_samples) = if a.sample_us == "auto" {
        (AUTO_SAMPLE_EVERY, AUTO_MAX_SAMPLES)
    } else {
        let us: f64 = a.sample_us.parse().map_err(|_| {
            anyhow!(
                "--sample-us: expected a number of microseconds or auto, got {:?}",
                a.sample_us
            )
        })?;
        let ps = (us * PS_PER_US as f64).round();
        if !(ps.is_finite() && ps >= 1.0) {
            bail!(
                "--sample-us must be positive (at least 1 ps), got {}",
                a.sample_us
            );
        }
        (ps as u64, FIXED_MAX_SAMPLES)
    };
    let cfg = SimConfig {
        net: NetConfig {
            buffer_bytes: parse_bytes(&a.buffer).map_err(|e| anyhow!("--buffer: {e}"))?,
            ecn_threshold_bytes: parse_bytes(&a.ecn_threshold)
                .map_err(|e| anyhow!("--ecn-threshold: {e}"))?,
            pace_bps: a.pace_gbps.map(|g| bps(g, "--pace-gbps")).transpose()?,
            sample_every: Some(sample_every),
            max_samples: Some(max_samples),
        },
        recirc_bps: a
            .recirc_gbps
            .map(|g| bps(g, "--recirc-gbps"))
            .transpose()?
            .unwrap_or(link_bps),
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;

    let spinner = ProgressBar::new_spinner();
    spinner.set_style(ProgressStyle::with_template("{spinner} plan: {msg}").unwrap());
    spinner.enable_steady_tick(Duration::from_millis(100));
    spinner.set_message(format!("loading {}", a.graph));
    let t0 = Instant::now();
    let g = sgnn_graph::load_graph(&a.graph).with_context(|| format!("loading {}", a.graph))?;
    let req = PlanRequest {
        config: PlanConfig {
            workers: a.workers,
            partitioner: a.partitioner.clone(),
            switch_mem_bytes: parse_bytes(&a.switch_mem)
                .map_err(|e| anyhow!("--switch-mem: {e}"))?,
            agg_bytes: 128,
            feature_dim: a.feature_dim,
            order: a.order.clone(),
            seed: a.seed,
            max_passes: 256,
        },
        graph_source: a.graph.clone(),
        max_abs_value: 1.0,
    };
    let (plan, _report) = make_plan(g.csr, g.stats, &req, &mut |e| {
        if let switch_ctl::planner::Event::Start { stage, .. } = e {
            spinner.set_message(stage.to_string());
        }
    })?;
    spinner.finish_and_clear();
    let plan_secs = t0.elapsed().as_secs_f64();
    let header = format!(
        "sgnn sim: {} ({} vertices, {} edges), {} workers, star, {} Gbit/s links, {} us delay, \
         buffer {} B/port, ECN at {} B, recirculation {} Gbit/s\n\
         plan: switch memory {} B, {} segments per vertex, {} blocks in {} levels (planned in {:.1} s)",
        a.graph,
        plan.graph.num_vertices(),
        plan.graph.num_edges(),
        plan.workers(),
        a.link_gbps,
        a.delay_us,
        cfg.net.buffer_bytes,
        cfg.net.ecn_threshold_bytes,
        cfg.recirc_bps as f64 / GBPS,
        plan.manifest.config.switch_mem_bytes,
        plan.manifest.segments,
        plan.blocks.len(),
        plan.levels(),
        plan_secs
    );
    eprintln!(
        "planned {} blocks in {:.1} s; simulating",
        plan.blocks.len(),
        plan_secs
    );

    let mut runs = Vec::new();
    for s in strategies {
        let bar = ProgressBar::new(1);
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>11} [{bar:30}] {percent:>3}% frames {msg} {elapsed}",
            )
            .unwrap()
            .progress_chars("=> "),
        );
        bar.set_prefix(s.name());
        let topo = Topology::star(plan.workers(), link_bps, delay);
        let r = run_strategy(&plan, s, topo, cfg, &mut |p| {
            bar.set_length(p.total.max(1));
            bar.set_position(p.done);
            bar.set_message(format!(
                "t={:.1} us, {} events",
                p.now as f64 / PS_PER_US as f64,
                p.events
            ));
        })
        .map_err(|e| anyhow!(e))?;
        bar.finish_and_clear();
        runs.push(r);
    }

    // The planner's traffic model beside the simulated bytes.
    let model = traffic::model(&plan);
    let mut check = String::from("\ntraffic model (sgnn-plan) vs simulated wire bytes:\n");
    for r in &runs {
        let m = model[&r.strategy].total;
        check.push_str(&format!(
            "  {:<12} model {:>14}  simulated {:>14}  {}\n",
            r.strategy,
            m,
            r.total_bytes(),
            if m == r.total_bytes() {
                "equal"
            } else {
                "DIFFERENT"
            }
        ));
    }

    let short = report::summary(&header, &runs, false) + &check;
    let long = report::summary(&header, &runs, true) + &check;
    let mut csv = String::from(report::CSV_HEADER);
    csv.push('\n');
    for r in &runs {
        csv.push_str(&report::csv_row(r));
        csv.push('\n');
    }
    let write = |name: &str, text: &str| {
        let p = a.out.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write("summary.txt", &long)?;
    write("runs.csv", &csv)?;
    write("links.csv", &report::links_csv(&runs))?;
    write("series.csv", &report::series_csv(&runs))?;
    print!("{short}");
    for r in &runs {
        if a.sample_us != "auto" && r.sample_interval != Some(sample_every) {
            eprintln!(
                "note: {} ran long enough for more than {FIXED_MAX_SAMPLES} samples: its series \
                 is sampled every {:.3} us instead of {} us",
                r.strategy,
                r.sample_interval.unwrap_or(0) as f64 / PS_PER_US as f64,
                a.sample_us
            );
        }
    }
    let plotted = plot_runs(
        &runs,
        &a.out,
        &PlotOptions {
            formats: a.plots,
            aggregator_bytes: plan.manifest.config.agg_bytes as u64,
            aggregators: Some(plan.manifest.aggregators),
        },
    )
    .map_err(|e| anyhow!(e))?;
    if let Some(why) = &plotted.png_skipped {
        eprintln!("warning: PNG plots not written, SVG only: {why}");
    }
    let mut names = vec!["summary.txt", "runs.csv", "links.csv", "series.csv"];
    let plots: Vec<String> = plotted
        .files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    names.extend(plots.iter().map(String::as_str));
    println!("wrote {}/{}", a.out.display(), names.join(", "));
    if runs.iter().any(|r| r.time.is_none()) {
        eprintln!(
            "warning: a run did not complete (frames were dropped and this simulator does not \
             retransmit yet); raise --buffer"
        );
    }
    Ok(())
}
