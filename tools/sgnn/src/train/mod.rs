//! `sgnn train`: full-graph GNN training (GCN, GraphSAGE-mean) with a report, a plot of loss
//! and accuracy against wall time, and a `trained:` / `FAILED:` last line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use sgnn_train::data::LabelledGraph;
use sgnn_train::exchange::{Exchange, LocalExchange};
use sgnn_train::gnn::ModelKind;
use sgnn_train::train::{train, Alone, EpochStat, Outcome, Recipe};
use sgnn_train::TrainError;

use crate::testbed::procs::{install_interrupt_handler, Supervisor};
use crate::testbed::tcp;
use crate::testbed::{plan_graph, Net, PlanOptions, SwitchKind};

mod launch;
mod worker;

use launch::train_distributed;
pub use worker::{worker_main, WorkerArgs};

/// The generated graph `sgnn train` uses without `--graph`: a stochastic block model with
/// class-dependent features (5 classes, 2,000 vertices), where chance is 20%.
pub const DEFAULT_GRAPH: &str =
    "sbm:n=2000,classes=5,p_in=0.01,p_out=0.001,dim=64,signal=0.5,seed=1";

#[derive(Args)]
pub struct TrainArgs {
    /// Labelled graph: a directory with edges.txt.gz, features.npy, labels.npy and optional
    /// {train,val,test}_mask.npy (docs/formats.md, "Labelled graphs"), the name of one in
    /// --datasets (cora, citeseer), or a generated stochastic block model
    /// `sbm:n=N,classes=K,p_in=P,p_out=Q,dim=D,signal=S,seed=X`.
    #[arg(long, value_name = "G", default_value = DEFAULT_GRAPH)]
    graph: String,
    /// Datasets directory for names.
    #[arg(long, value_name = "DIR", default_value = "../shared/datasets")]
    datasets: PathBuf,
    /// Workers (graph partitions) of the distributed modes.
    #[arg(long, value_name = "M", default_value_t = 4)]
    workers: u32,
    /// Model: gcn (Kipf and Welling, symmetric normalisation with self loops) or sage
    /// (GraphSAGE with the mean aggregator).
    #[arg(long, default_value = "gcn")]
    model: String,
    /// Layers (graph convolutions), at least 1.
    #[arg(long, value_name = "L", default_value_t = 2)]
    layers: usize,
    /// Hidden units of every hidden layer.
    #[arg(long, value_name = "H", default_value_t = 16)]
    hidden: usize,
    /// Epochs (each: forward, backward, Adam step, evaluation).
    #[arg(long, value_name = "N", default_value_t = 200)]
    epochs: usize,
    /// Adam's learning rate.
    #[arg(long, value_name = "X", default_value_t = 0.01)]
    lr: f32,
    /// Dropout probability on every layer's input (0 turns it off).
    #[arg(long, value_name = "P", default_value_t = 0.5)]
    dropout: f32,
    /// L2 weight decay on the first layer's weights.
    #[arg(long, value_name = "X", default_value_t = 5e-4)]
    weight_decay: f32,
    /// Where the exchange runs, comma-separated to compare side by side: switchgnn (one
    /// process per worker, every neighbour sum through its sgnn-hostd and the switch),
    /// host-based (the same, the daemons exchanging host to host), or single (one process,
    /// the reference).
    #[arg(long, value_name = "MODE[,MODE]", default_value = "switchgnn")]
    mode: String,
    /// Seed of the weights, dropout and (without masks) the split.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep the features as they are (by default each row is divided by its sum, as Kipf and
    /// Welling do; generated graphs are never normalised).
    #[arg(long)]
    no_normalise: bool,
    /// Don't run the references next to a distributed mode: the single-process run, and the
    /// `tcp-all-to-all` row (host-based's bytes of the same exchanges, every epoch's, as a
    /// plain loopback TCP all-to-all between the workers, no switch and no sums: what a user
    /// would do instead).
    #[arg(long)]
    no_reference: bool,
    /// Output directory: train.json, the per-epoch CSV, the plot, and per distributed mode
    /// the plan, every process's log, the workers' shards and the switch's counters.
    #[arg(long, value_name = "DIR", default_value = "train-out")]
    out: PathBuf,
    /// Network of the distributed modes, as `sgnn testbed --net`: udp (loopback, no
    /// privileges), veth (root), memif or veth-dpdk (built with `--features dpdk`).
    #[arg(long, value_enum, default_value = "udp")]
    net: Net,
    /// The switch of the distributed modes: the software switch or bmv2 (`simple_switch_grpc`;
    /// implies --net veth).
    #[arg(long, value_enum, default_value = "softswitch")]
    switch: SwitchKind,
    /// Graph partitioner of the plan: metis, random, chunk or g3.
    #[arg(long, default_value = "metis")]
    partitioner: sgnn_plan::Partitioner,
    /// Switch aggregator memory the plan may use, e.g. 256KB, 4MB.
    #[arg(long, default_value = "4MB")]
    switch_mem: String,
    /// How the plan delivers the sums of `--mode switchgnn`: paper (per-edge aggregation, the
    /// paper's design), partials (senders pre-aggregate; one pass per partial), multicast
    /// (raw vertices replicated by the switch) or auto (the planner's mix), as `switch-ctl
    /// plan --aggregate`.
    #[arg(long, value_name = "MODE", default_value = "paper", value_parser = crate::testbed::parse_aggregate)]
    aggregate: sgnn_plan::AggregateMode,
    /// Starting send rate of each daemon, Mbit/s.
    #[arg(long, default_value_t = 400.0)]
    rate_mbps: f64,
    /// Planned pacing of the daemons (`sgnn-hostd --pace`): planned (default) or off.
    /// docs/host.md, "Planned pacing".
    #[arg(long, default_value_t = sgnn_transport::Pacing::Planned, value_name = "planned|off")]
    pace: sgnn_transport::Pacing,
    /// Loss probability of every frame each way between a host and the switch (injected by
    /// the switch, or by netem on veths): training must stay exact.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// A daemon gives up after this long without progress in an exchange, seconds (its worker
    /// then stops, and every other with it); as a last resort, training fails if no epoch
    /// ends for 10 times as long plus a minute, or 5 times the longest epoch so far.
    #[arg(long, default_value_t = 20.0)]
    timeout: f64,
    /// Kill this worker's training process (SIGKILL) --kill-after-ms after the workers start:
    /// every other worker must report it and stop within seconds.
    #[arg(long, value_name = "W")]
    kill_worker: Option<u32>,
    /// Write the initial weights (`w{l}.npy` [in, out], `b{l}.npy`, and `wn{l}.npy` for sage;
    /// float32) to this directory: another trainer (python/examples/gcn.py --init) can then
    /// start from the same model and its loss curve be compared epoch by epoch.
    #[arg(long, value_name = "DIR")]
    save_init: Option<PathBuf>,
    /// When --kill-worker strikes, milliseconds after the workers start.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    kill_after_ms: u64,
}

/// One mode's result.
struct ModeResult {
    mode: String,
    outcome: Outcome,
    bytes_on_links: u64,
    scale_range: Option<(i32, i32)>,
}

pub fn main(a: TrainArgs) -> ExitCode {
    install_interrupt_handler();
    let sup = Supervisor::default();
    let r = run(&a, &sup);
    sup.kill_all();
    match r {
        Ok(summary) => {
            println!("trained: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAILED: {}", format!("{e:#}").replace('\n', " | "));
            ExitCode::FAILURE
        }
    }
}

fn run(a: &TrainArgs, sup: &Supervisor) -> Result<String> {
    let modes: Vec<&str> = a.mode.split(',').map(str::trim).collect();
    for m in &modes {
        match *m {
            "single" | "switchgnn" | "host-based" => {}
            other => bail!("--mode {other}: use single, switchgnn or host-based"),
        }
    }
    let distributed = modes.iter().any(|m| *m != "single");
    if distributed && a.workers < 2 {
        bail!("--workers must be at least 2 for --mode switchgnn or host-based");
    }
    if !(0.0..1.0).contains(&a.loss) {
        bail!("--loss is a probability in [0, 1), got {}", a.loss);
    }
    if let Some(k) = a.kill_worker {
        if k >= a.workers {
            bail!("--kill-worker {k}: there are only {} workers", a.workers);
        }
    }
    let recipe = Recipe {
        model: ModelKind::parse(&a.model)?,
        layers: a.layers,
        hidden: a.hidden,
        epochs: a.epochs,
        lr: a.lr,
        dropout: a.dropout,
        weight_decay: a.weight_decay,
        seed: a.seed,
    };
    let mut g = LabelledGraph::load(&a.graph, &a.datasets, a.seed)?;
    if !a.no_normalise && !a.graph.starts_with("sbm:") {
        g.normalise_rows();
    }
    let n = g.num_vertices();
    eprintln!(
        "graph {}: {} vertices, {} edges, {} features, {} classes; {} train, {} val, {} test",
        g.description,
        n,
        g.csr.num_edges(),
        g.dim,
        g.classes,
        g.train.iter().filter(|&&b| b).count(),
        g.val.iter().filter(|&&b| b).count(),
        g.test.iter().filter(|&&b| b).count()
    );
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    if let Some(dir) = &a.save_init {
        save_init(dir, &recipe, g.dim, g.classes)?;
    }
    let plan = if distributed {
        let dir = a.out.join("plan");
        // Every exchange carries one layer's output: `hidden` values, or `classes` for the last.
        let dim = a.hidden.max(g.classes) as u32;
        let p = plan_graph(
            g.csr.clone(),
            Default::default(),
            &a.graph,
            &PlanOptions {
                workers: a.workers,
                partitioner: a.partitioner,
                switch_mem: &a.switch_mem,
                feature_dim: dim,
                seed: a.seed,
                aggregate: a.aggregate,
                recycle_slack: None,
                cores: 1,
            },
            &dir,
        )?;
        Some((p, dir))
    } else {
        None
    };
    let mut results: Vec<ModeResult> = Vec::new();
    let mut runs: Vec<&str> = modes.clone();
    if !a.no_reference && !runs.contains(&"single") {
        runs.push("single");
    }
    // The neighbour sums of the single-process run, in order: what every mode exchanges.
    let mut exchanges: Vec<(usize, bool)> = Vec::new();
    for m in &runs {
        eprintln!("== {m}");
        let r = match (*m, &plan) {
            ("single", _) => ModeResult {
                mode: "single".into(),
                outcome: train_single(&g, &recipe, &mut exchanges)?,
                bytes_on_links: 0,
                scale_range: None,
            },
            (m, Some((p, dir))) => train_distributed(a, &g, &recipe, m, p, dir, sup)
                .with_context(|| format!("--mode {m}"))?,
            (m, None) => unreachable!("{m} is distributed, so there is a plan"),
        };
        results.push(r);
    }
    // What a user would do instead, beside the distributed modes: host-based's bytes of the
    // same exchanges over a plain TCP all-to-all between the workers, no switch.
    let tcp_row = match &plan {
        Some((p, _)) if !a.no_reference => {
            eprintln!("== {}", tcp::MODE);
            Some(tcp_reference(p, &exchanges, recipe.epochs).context("the TCP all-to-all")?)
        }
        _ => None,
    };
    let reference = results
        .iter()
        .find(|r| r.mode == "single")
        .map(|r| r.outcome.test_accuracy);
    if results.len() > 1 {
        eprintln!("\n{}", table(&results, tcp_row.as_ref()));
    }
    write_report(a, &g, &recipe, &results, reference, tcp_row.as_ref())?;
    let main = &results[0];
    let o = &main.outcome;
    let mean =
        |f: fn(&EpochStat) -> f64| o.epochs.iter().map(f).sum::<f64>() / o.epochs.len() as f64;
    let mut s = format!(
        "{} {} on {}: test accuracy {:.2}% (epoch {}, validation {:.2}%), reference {}, {:.2} ms/epoch",
        main.mode,
        a.model,
        g.description,
        o.test_accuracy * 100.0,
        o.best_epoch,
        o.val_accuracy * 100.0,
        reference.map_or("-".to_string(), |r| format!("{:.2}%", r * 100.0)),
        mean(|e| e.epoch_ms)
    );
    for r in &results[1..] {
        if r.mode != "single" {
            s += &format!(
                "; {} {:.2}%, {:.2} ms/epoch",
                r.mode,
                r.outcome.test_accuracy * 100.0,
                r.outcome.epochs.iter().map(|e| e.epoch_ms).sum::<f64>()
                    / r.outcome.epochs.len() as f64
            );
        }
    }
    Ok(s)
}

/// The model `train` starts from (same dims, same seed), as .npy files.
fn save_init(dir: &Path, recipe: &Recipe, features: usize, classes: usize) -> Result<()> {
    use sgnn_graph::npy::write_npy;
    let mut dims = vec![features];
    dims.extend(std::iter::repeat_n(recipe.hidden, recipe.layers - 1));
    dims.push(classes);
    let m = sgnn_train::gnn::Model::new(recipe.model, &dims, recipe.seed);
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (l, layer) in m.layers.iter().enumerate() {
        let w = |name: &str, shape: &[usize], v: Vec<f32>| {
            let p = dir.join(format!("{name}{l}.npy"));
            write_npy(&p, shape, &v).with_context(|| format!("writing {}", p.display()))
        };
        w(
            "w",
            &[layer.w.nrows(), layer.w.ncols()],
            layer.w.iter().copied().collect(),
        )?;
        w("b", &[layer.b.len()], layer.b.to_vec())?;
        if recipe.model == ModelKind::Sage {
            let wn = &layer.w_neigh;
            w(
                "wn",
                &[wn.nrows(), wn.ncols()],
                wn.iter().copied().collect(),
            )?;
        }
    }
    eprintln!("initial weights: {}", dir.display());
    Ok(())
}

/// The TCP all-to-all of an epoch's exchanges (host-based's bytes, no switch).
struct TcpEpoch {
    /// Neighbour sums per epoch.
    exchanges: usize,
    /// Mean time per epoch of the forward and the backward exchanges, milliseconds.
    forward_ms: f64,
    backward_ms: f64,
    /// Bytes every worker sent per epoch, summed.
    bytes_per_epoch: u64,
    /// Bytes on the links of a star over the run, both ways, as the switch counts
    /// host-based's: every byte once up and once down.
    bytes_on_links: u64,
}

/// Runs `exchanges` (the single-process run's neighbour sums over `epochs` epochs: columns,
/// backward) as rounds of a plain TCP all-to-all of host-based's bytes for `plan`
/// (`testbed::tcp`), one run of rounds per width and direction.
fn tcp_reference(
    plan: &sgnn_plan::Plan,
    exchanges: &[(usize, bool)],
    epochs: usize,
) -> Result<TcpEpoch> {
    let mut groups: Vec<((usize, bool), usize)> = Vec::new();
    for &e in exchanges {
        match groups.iter_mut().find(|(k, _)| *k == e) {
            Some((_, n)) => *n += 1,
            None => groups.push((e, 1)),
        }
    }
    let epochs = epochs.max(1);
    let (mut forward, mut backward, mut bytes) = (0.0, 0.0, 0u64);
    for ((dim, back), rounds) in groups {
        let pairs = tcp::pair_bytes(plan, dim as u32)?;
        let run = tcp::run(pairs, rounds)?;
        let secs: f64 = run.round_seconds.iter().sum();
        *(if back { &mut backward } else { &mut forward }) += secs;
        bytes += run.payload_bytes();
    }
    Ok(TcpEpoch {
        exchanges: exchanges.len() / epochs,
        forward_ms: forward * 1e3 / epochs as f64,
        backward_ms: backward * 1e3 / epochs as f64,
        bytes_per_epoch: bytes / epochs as u64,
        bytes_on_links: 2 * bytes,
    })
}

/// Records every neighbour sum (its width and direction) of the exchange it wraps.
struct Recording<'a, E> {
    inner: E,
    calls: &'a mut Vec<(usize, bool)>,
}

impl<E: Exchange> Exchange for Recording<'_, E> {
    fn neighbour_sum(
        &mut self,
        layer: u32,
        backward: bool,
        x: ndarray::ArrayView2<f32>,
    ) -> Result<ndarray::Array2<f32>, TrainError> {
        self.calls.push((x.ncols(), backward));
        self.inner.neighbour_sum(layer, backward, x)
    }
    fn bytes_on_links(&self) -> u64 {
        self.inner.bytes_on_links()
    }
}

fn table(results: &[ModeResult], tcp: Option<&TcpEpoch>) -> String {
    let mut t = format!(
        "{:<14} {:>9} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12}\n",
        "mode",
        "test acc",
        "ms/epoch",
        "compute",
        "exchange fw",
        "exchange bw",
        "weight sync",
        "link bytes"
    );
    for r in results {
        let o = &r.outcome;
        let k = o.epochs.len() as f64;
        let m = |f: fn(&EpochStat) -> f64| o.epochs.iter().map(f).sum::<f64>() / k;
        t += &format!(
            "{:<14} {:>8.2}% {:>10.2} {:>10.2} {:>12.2} {:>12.2} {:>12.2} {:>9.2} MB\n",
            r.mode,
            o.test_accuracy * 100.0,
            m(|e| e.epoch_ms),
            m(|e| e.compute_ms),
            m(|e| e.exchange_fwd_ms),
            m(|e| e.exchange_bwd_ms),
            m(|e| e.weight_sync_ms),
            r.bytes_on_links as f64 / 1e6
        );
    }
    if let Some(c) = tcp {
        // Only exchanges: no model, no compute, no weights.
        t += &format!(
            "{:<14} {:>9} {:>10.2} {:>10} {:>12.2} {:>12.2} {:>12} {:>9.2} MB\n",
            tcp::MODE,
            "-",
            c.forward_ms + c.backward_ms,
            "-",
            c.forward_ms,
            c.backward_ms,
            "-",
            c.bytes_on_links as f64 / 1e6
        );
    }
    t
}

fn print_epoch(mode: &str, e: &EpochStat, epochs: usize) {
    let every = (epochs / 20).max(1);
    if e.epoch.is_multiple_of(every) || e.epoch == 1 || e.epoch == epochs {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{mode} epoch {:>4}/{epochs}: loss {:.4}, train {:.1}%, val {:.1}%, test {:.1}%, {:.1} ms",
            e.epoch,
            e.loss,
            e.train_acc * 100.0,
            e.val_acc * 100.0,
            e.test_acc * 100.0,
            e.epoch_ms
        );
    }
}

fn train_single(
    g: &LabelledGraph,
    recipe: &Recipe,
    exchanges: &mut Vec<(usize, bool)>,
) -> Result<Outcome> {
    let shard = g.whole();
    let input = shard.input();
    let local = shard.local(&input);
    let mut ex = Recording {
        inner: LocalExchange::new(&g.csr),
        calls: exchanges,
    };
    let out = train(&local, recipe, &mut ex, &mut Alone, &mut |e| {
        print_epoch("single", e, recipe.epochs)
    })?;
    Ok(out)
}

fn write_report(
    a: &TrainArgs,
    g: &LabelledGraph,
    recipe: &Recipe,
    results: &[ModeResult],
    reference: Option<f64>,
    tcp_row: Option<&TcpEpoch>,
) -> Result<()> {
    let n = g.num_vertices() as f64;
    let mut runs = Vec::new();
    let mut csv = String::from(
        "mode,epoch,loss,train_acc,val_acc,test_acc,wall_s,epoch_ms,compute_ms,exchange_fwd_ms,exchange_bwd_ms,weight_sync_ms\n",
    );
    for r in results {
        let (mode, o) = (&r.mode, &r.outcome);
        let k = o.epochs.len() as f64;
        let mean = |f: &dyn Fn(&sgnn_train::train::EpochStat) -> f64| {
            o.epochs.iter().map(f).sum::<f64>() / k
        };
        let epoch_ms = mean(&|e| e.epoch_ms);
        runs.push(json!({
            "mode": mode,
            "test_accuracy": o.test_accuracy,
            "val_accuracy": o.val_accuracy,
            "best_epoch": o.best_epoch,
            "final_test_accuracy": o.final_test_accuracy,
            "epochs": o.epochs.len(),
            "loss": o.epochs.iter().map(|e| e.loss).collect::<Vec<_>>(),
            "epoch_ms": epoch_ms,
            "compute_ms": mean(&|e| e.compute_ms),
            "exchange_ms": {
                "forward": mean(&|e| e.exchange_fwd_ms),
                "backward": mean(&|e| e.exchange_bwd_ms),
            },
            "weight_sync_ms": mean(&|e| e.weight_sync_ms),
            "bytes_on_links": r.bytes_on_links,
            "exchange_scale_range": r.scale_range,
            "throughput_vertices_per_s": n / (epoch_ms / 1e3),
            "parameters": o.parameters,
        }));
        for e in &o.epochs {
            csv += &format!(
                "{mode},{},{},{},{},{},{:.6},{:.3},{:.3},{:.3},{:.3},{:.3}\n",
                e.epoch,
                e.loss,
                e.train_acc,
                e.val_acc,
                e.test_acc,
                e.wall_s,
                e.epoch_ms,
                e.compute_ms,
                e.exchange_fwd_ms,
                e.exchange_bwd_ms,
                e.weight_sync_ms
            );
        }
    }
    let first = &runs[0];
    let report = json!({
        "format": "sgnn-train-report",
        "version": 1,
        "graph": g.description,
        "vertices": g.num_vertices(),
        "edges": g.csr.num_edges(),
        "features": g.dim,
        "classes": g.classes,
        "workers": a.workers,
        "recipe": recipe,
        "test_accuracy": first["test_accuracy"],
        "val_accuracy": first["val_accuracy"],
        "reference_test_accuracy": reference,
        "epochs": first["epochs"],
        "loss": first["loss"],
        "epoch_ms": first["epoch_ms"],
        "compute_ms": first["compute_ms"],
        "exchange_ms": first["exchange_ms"],
        "weight_sync_ms": first["weight_sync_ms"],
        "bytes_on_links": first["bytes_on_links"],
        "throughput_vertices_per_s": first["throughput_vertices_per_s"],
        "runs": runs,
        "tcp_all_to_all": tcp_row.map(|c| json!({
            "mode": tcp::MODE,
            "exchanges_per_epoch": c.exchanges,
            "exchange_ms": {"forward": c.forward_ms, "backward": c.backward_ms},
            "bytes_per_epoch": c.bytes_per_epoch,
            "bytes_on_links": c.bytes_on_links,
        })),
    });
    let path = a.out.join("train.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    let path = a.out.join("epochs.csv");
    std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
    plot(&a.out, results)?;
    eprintln!("report: {}", a.out.join("train.json").display());
    Ok(())
}

/// Loss and test accuracy against wall time, one line per mode (the paper's figure 13, time
/// to accuracy): PNG where a font is installed, else SVG.
fn plot(out: &Path, results: &[ModeResult]) -> Result<()> {
    let mut series = Vec::new();
    for r in results {
        let (mode, o) = (&r.mode, &r.outcome);
        series.push((
            format!("{mode} loss"),
            o.epochs
                .iter()
                .map(|e| (e.wall_s, e.loss))
                .collect::<Vec<_>>(),
        ));
        series.push((
            format!("{mode} test accuracy"),
            o.epochs.iter().map(|e| (e.wall_s, e.test_acc)).collect(),
        ));
    }
    let ext = if sgnn_sim::plot::png_font().is_ok() {
        "png"
    } else {
        "svg"
    };
    let path = out.join(format!("train.{ext}"));
    sgnn_sim::plot::plot_lines(
        "Training loss and test accuracy against wall time",
        "wall time (s)",
        "loss / accuracy",
        &series,
        &path,
    )
    .map_err(|e| anyhow::anyhow!("plotting {}: {e}", path.display()))?;
    eprintln!("plot: {}", path.display());
    Ok(())
}
