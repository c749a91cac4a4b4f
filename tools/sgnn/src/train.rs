//! `sgnn train`: full-graph GNN training (GCN, GraphSAGE-mean) with a report, a plot of loss
//! and accuracy against wall time, and a `trained:` / `FAILED:` last line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use sgnn_train::data::LabelledGraph;
use sgnn_train::exchange::LocalExchange;
use sgnn_train::model::{ModelKind, RowScales};
use sgnn_train::train::{train, Alone, Local, Outcome, Recipe};

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
    /// Where the exchange runs, comma-separated to compare: single (one process, the
    /// reference), switchgnn (through the switch) or host-based (the baseline). Only `single`
    /// is built so far (issue 13).
    #[arg(long, value_name = "MODE[,MODE]", default_value = "single")]
    mode: String,
    /// Seed of the weights, dropout and (without masks) the split.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep the features as they are (by default each row is divided by its sum, as Kipf and
    /// Welling do; generated graphs are never normalised).
    #[arg(long)]
    no_normalise: bool,
    /// Don't run the single-process reference next to a distributed mode.
    #[arg(long)]
    no_reference: bool,
    /// Output directory: train.json, the per-epoch CSV and the plot.
    #[arg(long, value_name = "DIR", default_value = "train-out")]
    out: PathBuf,
}

pub fn main(a: TrainArgs) -> ExitCode {
    match run(&a) {
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

fn run(a: &TrainArgs) -> Result<String> {
    let modes: Vec<&str> = a.mode.split(',').map(str::trim).collect();
    for m in &modes {
        match *m {
            "single" => {}
            "switchgnn" | "host-based" => bail!(
                "--mode {m} is not built yet: distributed training through the daemons is the \
                 next step of issue 13; use --mode single"
            ),
            other => bail!("--mode {other}: use single, switchgnn or host-based"),
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
    let mut results: Vec<(String, Outcome)> = Vec::new();
    for m in &modes {
        let out = train_single(&g, &recipe)?;
        results.push((m.to_string(), out));
    }
    let (mode, main) = &results[0];
    let reference = results
        .iter()
        .find(|r| r.0 == "single")
        .map(|r| r.1.test_accuracy);
    write_report(a, &g, &recipe, &results, reference)?;
    let mean = |f: fn(&sgnn_train::train::EpochStat) -> f64| {
        main.epochs.iter().map(f).sum::<f64>() / main.epochs.len() as f64
    };
    Ok(format!(
        "{mode} {} on {}: test accuracy {:.2}% (epoch {}, validation {:.2}%), reference {}, {:.2} ms/epoch",
        a.model,
        g.description,
        main.test_accuracy * 100.0,
        main.best_epoch,
        main.val_accuracy * 100.0,
        reference.map_or("-".to_string(), |r| format!("{:.2}%", r * 100.0)),
        mean(|e| e.epoch_ms)
    ))
}

fn train_single(g: &LabelledGraph, recipe: &Recipe) -> Result<Outcome> {
    let n = g.num_vertices();
    let deg: Vec<u32> = (0..n as u32).map(|v| g.csr.degree(v) as u32).collect();
    let input = g.input();
    let local = Local {
        features: input.view(),
        labels: &g.labels,
        train: &g.train,
        val: &g.val,
        test: &g.test,
        scales: RowScales::from_degrees(&deg),
        classes: g.classes,
    };
    let mut ex = LocalExchange::new(&g.csr);
    let stderr = std::io::stderr();
    let every = (recipe.epochs / 20).max(1);
    let out = train(&local, recipe, &mut ex, &mut Alone, &mut |e| {
        if e.epoch % every == 0 || e.epoch == 1 || e.epoch == recipe.epochs {
            let _ = writeln!(
                stderr.lock(),
                "epoch {:>4}/{}: loss {:.4}, train {:.1}%, val {:.1}%, test {:.1}%, {:.1} ms",
                e.epoch,
                recipe.epochs,
                e.loss,
                e.train_acc * 100.0,
                e.val_acc * 100.0,
                e.test_acc * 100.0,
                e.epoch_ms
            );
        }
    })?;
    Ok(out)
}

fn write_report(
    a: &TrainArgs,
    g: &LabelledGraph,
    recipe: &Recipe,
    results: &[(String, Outcome)],
    reference: Option<f64>,
) -> Result<()> {
    let n = g.num_vertices() as f64;
    let mut runs = Vec::new();
    let mut csv = String::from(
        "mode,epoch,loss,train_acc,val_acc,test_acc,wall_s,epoch_ms,compute_ms,exchange_fwd_ms,exchange_bwd_ms,weight_sync_ms\n",
    );
    for (mode, o) in results {
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
            "bytes_on_links": 0,
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
fn plot(out: &Path, results: &[(String, Outcome)]) -> Result<()> {
    let mut series = Vec::new();
    for (mode, o) in results {
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
