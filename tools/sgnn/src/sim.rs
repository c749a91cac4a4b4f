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
use sgnn_sim::background::BackgroundConfig;
use sgnn_sim::cc::CcConfig;
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::{report, run_strategy_with, HostOptions, NetConfig, SimConfig, Strategy, Topology};
use switch_ctl::planner::{make_plan, PlanRequest};
use switch_ctl::units::parse_bytes;

const GBPS: f64 = 1e9;

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
    /// Comma-separated strategies: host_based, switchgnn, switchgnn_no_cc.
    #[arg(long, default_value = "host_based,switchgnn")]
    strategies: String,
    /// Output directory (summary.txt, runs.csv, links.csv).
    #[arg(long)]
    out: PathBuf,
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
    /// Loss-recovery timeout in microseconds (fetch after this long without progress,
    /// BlockDone again after this long without BlockAdvance; doubles on every expiry up to 16x;
    /// default: the daemon's 20 ms). 0 = no recovery (a lost frame leaves the layer incomplete).
    #[arg(long, default_value_t = 20_000.0)]
    timeout_us: f64,
    /// Background traffic per host, fraction of its link capacity (Hadoop flow sizes, Poisson
    /// arrivals, random destinations).
    #[arg(long, default_value_t = 0.0)]
    background_load: f64,
    /// Seed of the background traffic.
    #[arg(long, default_value_t = 1)]
    background_seed: u64,
    /// Rate control (switchgnn): starting rate in Gbit/s (default: the link rate).
    #[arg(long)]
    cc_initial_gbps: Option<f64>,
    /// Rate control: floor in Gbit/s (the daemon's default, 10 Mbit/s).
    #[arg(long, default_value_t = 0.01)]
    cc_min_gbps: f64,
    /// Rate control: ceiling in Gbit/s (default: the link rate).
    #[arg(long)]
    cc_max_gbps: Option<f64>,
    /// Rate control: additive increase per interval without ECN marks, Gbit/s (daemon: 50 Mbit/s).
    #[arg(long, default_value_t = 0.05)]
    cc_increase_gbps: f64,
    /// Rate control: additive-increase interval, microseconds (daemon: 1000).
    #[arg(long, default_value_t = 1000.0)]
    cc_increase_interval_us: f64,
    /// Rate control: at most one halving per this many microseconds (daemon: 200).
    #[arg(long, default_value_t = 200.0)]
    cc_decrease_interval_us: f64,
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
    let us = |v: f64, name: &str| -> Result<u64> {
        if !(v.is_finite() && v >= 0.0) {
            bail!("{name} must be a non-negative number of microseconds, got {v}");
        }
        Ok((v * PS_PER_US as f64).round() as u64)
    };
    let timeout = us(a.timeout_us, "--timeout-us")?;
    if !(a.background_load.is_finite() && (0.0..=1.0).contains(&a.background_load)) {
        bail!(
            "--background-load must be a fraction of the link in [0, 1], got {}",
            a.background_load
        );
    }
    let opts = HostOptions {
        cc: CcConfig {
            initial_bps: a
                .cc_initial_gbps
                .map(|g| bps(g, "--cc-initial-gbps"))
                .transpose()?,
            min_bps: bps(a.cc_min_gbps, "--cc-min-gbps")?,
            max_bps: a.cc_max_gbps.map(|g| bps(g, "--cc-max-gbps")).transpose()?,
            increase_bps: if a.cc_increase_gbps == 0.0 {
                0
            } else {
                bps(a.cc_increase_gbps, "--cc-increase-gbps")?
            },
            increase_interval: us(a.cc_increase_interval_us, "--cc-increase-interval-us")?,
            decrease_interval: us(a.cc_decrease_interval_us, "--cc-decrease-interval-us")?,
        },
        timeout: (timeout > 0).then_some(timeout),
        background: BackgroundConfig {
            load: a.background_load,
            seed: a.background_seed,
            until: None,
        },
    };
    opts.cc.validate().map_err(|e| anyhow!("--cc-*: {e}"))?;
    let cfg = SimConfig {
        net: NetConfig {
            buffer_bytes: parse_bytes(&a.buffer).map_err(|e| anyhow!("--buffer: {e}"))?,
            ecn_threshold_bytes: parse_bytes(&a.ecn_threshold)
                .map_err(|e| anyhow!("--ecn-threshold: {e}"))?,
            pace_bps: a.pace_gbps.map(|g| bps(g, "--pace-gbps")).transpose()?,
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
         hosts: recovery timeout {}, background load {}\n\
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
        if timeout > 0 {
            format!("{} us", a.timeout_us)
        } else {
            "none".into()
        },
        a.background_load,
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
        let r = run_strategy_with(&plan, s, topo, cfg, &opts, &mut |p| {
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
        let name = Strategy::ALL
            .into_iter()
            .find(|s| s.name() == r.strategy)
            .map_or(r.strategy.as_str(), |s| s.model_name());
        let m = model[name].total;
        check.push_str(&format!(
            "  {:<12} model {:>14}  simulated {:>14}  {}\n",
            r.strategy,
            m,
            r.total_bytes(),
            if m == r.total_bytes() {
                "equal"
            } else if r.hosts.recovery_frames() > 0 || r.background.is_some() {
                "different (recovery or background traffic)"
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
    write("rates.csv", &report::rates_csv(&runs))?;
    print!("{short}");
    println!(
        "wrote {}/summary.txt, runs.csv, links.csv, rates.csv",
        a.out.display()
    );
    if runs.iter().any(|r| r.time.is_none()) {
        eprintln!(
            "warning: a run did not complete (frames were dropped{}); raise --buffer{}",
            if timeout > 0 {
                ""
            } else {
                " and --timeout-us 0 turned recovery off"
            },
            if timeout > 0 {
                ""
            } else {
                " or set --timeout-us"
            }
        );
    }
    Ok(())
}
