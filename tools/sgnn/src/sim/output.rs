//! `sgnn sim`'s outputs: the header of `summary.txt`, the planner's traffic model beside the
//! simulated bytes, `summary.txt`, `runs.csv`, `links.csv`, `rates.csv`, `series.csv` and the
//! plots.

use anyhow::{Context, Result};
use sgnn_delivery::traffic;
use sgnn_sim::net::PS_PER_US;
use sgnn_sim::plot::{plot_runs, PlotOptions};
use sgnn_sim::{report, RunReport, Strategy};

use super::{fmt_mem, BackgroundPrio, Planned, Settings, SimArgs, FIXED_MAX_SAMPLES, GBPS};

/// The run's header: graph, network, hosts, rate control, placement and every plan.
pub(super) fn header(a: &SimArgs, st: &Settings, planned: &Planned) -> String {
    let &Settings {
        ref profile,
        link_gbps,
        delay_us,
        ref topo_desc,
        timeout,
        ref opts,
        cfg,
        ref strategies,
        ..
    } = st;
    let Planned {
        plans,
        plan_of,
        plan_secs,
        load_secs,
        placement,
    } = planned;
    let plan = &plans[0];
    let mut header = format!(
        "sgnn sim: {} ({} vertices, {} edges), {} workers, {}, {} Gbit/s links, {} us delay, \
         buffer {} B/port, ECN at {} B, recirculation {} Gbit/s (graph loaded in {:.1} s)",
        a.graph,
        plan.graph.num_vertices(),
        plan.graph.num_edges(),
        plan.workers(),
        topo_desc,
        link_gbps,
        delay_us,
        cfg.net.buffer_bytes,
        cfg.net.ecn_threshold_bytes,
        cfg.recirc_bps as f64 / GBPS,
        load_secs
    );
    if let Some(p) = &profile {
        header.push_str(&format!(
            "\nswitch profile {}: {} of aggregator memory, {} lanes per pass, {} harvest pass{} \
             per completed aggregate",
            p.name,
            fmt_mem(p.agg_mem_bytes),
            p.lanes_per_pass,
            p.harvest_passes,
            if p.harvest_passes == 1 { "" } else { "es" }
        ));
    }
    if a.topology == "leaf-spine" {
        header.push_str(
            "\nfabric: every leaf and spine is a software switch (two-level aggregation, \
             sgnn_switch::fabric); the workers are the daemons' engines",
        );
        if a.loss > 0.0 || a.fabric_loss > 0.0 {
            header.push_str(&format!(
                "\nfabric loss: leaves drop {} of their workers' frames, every switch {} of \
                 the frames another switch sends it; a lost partial or spine Result is \
                 recovered by its receiver from the cell's raw sources, after the timeout",
                a.loss, a.fabric_loss
            ));
        }
    }
    header.push_str(&format!(
        "\nhosts: recovery timeout {}, background load {}{}",
        if timeout > 0 {
            format!("{} us", a.timeout_us)
        } else {
            "none".into()
        },
        a.background_load,
        match a.background_prio {
            BackgroundPrio::Low => "",
            BackgroundPrio::Data => " in the strategies' data queue",
            BackgroundPrio::Results => " in the Results' queue",
        }
    ));
    header.push_str(&format!(
        "\nrate control (switchgnn, host_based{}): +{} Gbit/s per {} us, fast recovery {} steps, at \
         most one halving per {} us, floor {} Gbit/s; receivers echo ECN marks to the senders; \
         SwitchGNN pacing {}",
        if opts.background.cc.is_some() {
            " and background flows"
        } else {
            "; background flows open loop"
        },
        a.cc_increase_gbps,
        a.cc_increase_interval_us,
        a.cc_fast_recovery,
        a.cc_decrease_interval_us,
        a.cc_min_gbps,
        a.pace
    ));
    header.push('\n');
    header.push_str(placement);
    for (i, p) in plans.iter().enumerate() {
        let users: Vec<&str> = strategies
            .iter()
            .zip(plan_of)
            .filter(|(_, &k)| k == i)
            .map(|(s, _)| s.name())
            .collect();
        header.push_str(&format!(
            "\nplan {} (partitioner {}, order {}; for {}): switch memory {} B, {} segments per \
             vertex, {} blocks in {} levels (planned in {:.1} s)",
            i,
            p.manifest.config.partitioner,
            p.manifest.config.order,
            users.join(", "),
            p.manifest.config.switch_mem_bytes,
            p.manifest.segments,
            p.blocks.len(),
            p.levels(),
            plan_secs[i]
        ));
    }
    header
}

/// The planner's traffic model (on each strategy's own plan) beside the simulated bytes. The
/// model counts host links (a star's every link); a fabric adds leaf-spine bytes.
pub(super) fn model_check(
    runs: &[RunReport],
    strategies: &[Strategy],
    planned: &Planned,
) -> String {
    let (plans, plan_of) = (&planned.plans, &planned.plan_of);
    let models: Vec<_> = plans.iter().map(traffic::model).collect();
    let mut check =
        String::from("\ntraffic model (sgnn-plan) vs simulated wire bytes on the host links:\n");
    for ((r, s), &pi) in runs.iter().zip(strategies).zip(plan_of) {
        let Some(name) = s.traffic_model() else {
            check.push_str(&format!(
                "  {:<18} APPROXIMATE: no planner model (its own formula is in its module doc); \
                 simulated {:>14}\n",
                r.strategy,
                r.total_bytes()
            ));
            continue;
        };
        let m = match &r.model_traffic {
            Some(t) => t.total,
            None => models[pi][name].total,
        };
        let host = r.host_uplink.iter().sum::<u64>() + r.host_downlink.iter().sum::<u64>();
        // The daemons' acks are beyond the model: compare what is left.
        let acks = r.overhead.as_ref().map_or(0, |o| o.total());
        check.push_str(&format!(
            "  {:<18} model {:<13} (plan {}) {:>14}  simulated {:>14}  {}",
            r.strategy,
            name,
            pi,
            m,
            host,
            if m == host {
                "equal".to_string()
            } else if m + acks == host {
                format!("equal with the daemons' {acks} B of acks")
            } else if r.hosts.recovery_frames() > 0 || r.background.is_some() {
                "different (recovery or background traffic)".to_string()
            } else {
                "DIFFERENT".to_string()
            }
        ));
        if r.total_bytes() != host {
            check.push_str(&format!(
                "  (+ {} B on leaf-spine links)",
                r.total_bytes() - host
            ));
        }
        check.push('\n');
    }

    check
}

/// Writes the files and the plots and prints the short summary.
pub(super) fn write(
    a: &SimArgs,
    st: &Settings,
    planned: &Planned,
    header: &str,
    runs: &[RunReport],
    check: &str,
) -> Result<()> {
    let &Settings {
        ref epoch,
        sample_every,
        timeout,
        ..
    } = st;
    let plan = &planned.plans[0];
    let short = report::summary(header, runs, epoch, false) + check;
    let long = report::summary(header, runs, epoch, true) + check;
    let mut csv = String::from(report::CSV_HEADER);
    csv.push('\n');
    for r in runs {
        csv.push_str(&report::csv_row(r, epoch));
        csv.push('\n');
    }
    let write = |name: &str, text: &str| {
        let p = a.out.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write("summary.txt", &long)?;
    write("runs.csv", &csv)?;
    write("links.csv", &report::links_csv(runs))?;
    write("rates.csv", &report::rates_csv(runs))?;
    write("series.csv", &report::series_csv(runs))?;
    print!("{short}");
    for r in runs {
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
        runs,
        &a.out,
        &PlotOptions {
            formats: a.plots,
            aggregator_bytes: plan.manifest.config.agg_bytes as u64,
            aggregators: Some(plan.manifest.aggregators),
        },
    )?;
    if let Some(why) = &plotted.png_skipped {
        eprintln!("warning: PNG plots not written, SVG only: {why}");
    }
    let mut names = vec![
        "summary.txt",
        "runs.csv",
        "links.csv",
        "rates.csv",
        "series.csv",
    ];
    let plots: Vec<String> = plotted
        .files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    names.extend(plots.iter().map(String::as_str));
    println!("wrote {}/{}", a.out.display(), names.join(", "));
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
