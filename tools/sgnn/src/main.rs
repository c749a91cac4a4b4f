//! `sgnn`: the toolkit's umbrella CLI: the testbed, the simulator, plots, datasets (inspect,
//! generate, convert) and plan reports.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use sgnn_graph::{Csr, GraphSource};
use sgnn_planner::report::Report;

const ABOUT: &str = "SwitchGNN toolkit: testbed, simulator, plots, datasets and reports.

  sgnn testbed                            a whole cluster on this machine, every sum verified
  sgnn train --graph cora                 full-graph GCN training (default: a generated graph)
  sgnn serve --workers 2                  daemons for your own (PyTorch) training processes
  sgnn dataset list                       real graphs shipped in ../shared/datasets
  sgnn dataset info --graph cora          vertices, edges, degrees of any graph source
  sgnn dataset generate --graph rmat:scale=16,edge_factor=16 --out g.txt.gz
  sgnn report plan/                       the traffic table of a plan's report.json
  sgnn sim --graph rmat:scale=12 --workers 16 --out sim/   packet-level simulation
  sgnn plot --csv sweep.csv --x workers --y time_per_epoch_us --series strategy --out f.png

A graph source is a file (SNAP edge list, plain or .gz; .npy [E,2] edge array), a generator
spec rmat:scale=S,edge_factor=F[,a=..,b=..,c=..,d=..,seed=..], or the name of a dataset in
the datasets directory (--datasets, default ../shared/datasets).";

#[derive(Parser)]
#[command(name = "sgnn", version, about = ABOUT, long_about = ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a whole SwitchGNN cluster on this machine (software switch + N sgnn-hostd over
    /// loopback UDP), verify every sum, and compare with the host-based baseline.
    Testbed(Box<testbed::TestbedArgs>),
    /// Train a GNN (GCN or GraphSAGE-mean) full-graph: accuracy, per-epoch time split into
    /// compute, exchange and weight sync, train.json and a plot of loss and accuracy over time.
    Train(Box<train::TrainArgs>),
    /// Start a cluster whose daemons serve your own training processes (PyTorch through
    /// python/switchgnn, or any client of the Unix-socket interface): prints one socket per
    /// worker, then waits until every client has closed.
    Serve(Box<serve::ServeArgs>),
    /// One worker process of `sgnn train` (started by it; not for direct use).
    #[command(hide = true)]
    TrainWorker(train::WorkerArgs),
    /// Simulate one layer of each strategy on a packet-level network model (star or leaf-spine):
    /// communication time, bytes per link, drops, against the planner's traffic model.
    Sim(Box<sim::SimArgs>),
    /// Draw a line chart (PNG or SVG) from a CSV: one line per value of --series, e.g. a
    /// figure script's sweep or an `sgnn sim` runs.csv.
    Plot(Box<plot::PlotArgs>),
    /// Inspect, generate and convert graphs.
    #[command(subcommand)]
    Dataset(DatasetCmd),
    /// Print the summary and traffic table of a plan directory's report.json.
    Report {
        /// Plan directory (written by `switch-ctl plan --out DIR`).
        dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum DatasetCmd {
    /// List the datasets in the datasets directory with their sizes.
    List {
        /// Datasets directory.
        #[arg(long, default_value = "../shared/datasets")]
        datasets: PathBuf,
    },
    /// Load a graph and print vertices, edges, cleaning counts and degree statistics.
    Info {
        /// Graph source or dataset name.
        #[arg(long)]
        graph: String,
        /// Datasets directory for names.
        #[arg(long, default_value = "../shared/datasets")]
        datasets: PathBuf,
    },
    /// Write a graph (e.g. a generated R-MAT graph) as a SNAP edge list (.txt or .txt.gz) or
    /// a .npy int64 [E,2] edge array, chosen by the output's extension.
    Generate {
        /// Graph source or dataset name.
        #[arg(long)]
        graph: String,
        /// Output file: *.txt, *.txt.gz or *.npy.
        #[arg(long)]
        out: PathBuf,
        /// Datasets directory for names.
        #[arg(long, default_value = "../shared/datasets")]
        datasets: PathBuf,
    },
}

mod plot;
mod serve;
mod sim;
mod testbed;
mod train;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Cmd::Testbed(a) = cli.command {
        return testbed::main(*a);
    }
    if let Cmd::Sim(a) = cli.command {
        return sim::main(*a);
    }
    if let Cmd::Train(a) = cli.command {
        return train::main(*a);
    }
    if let Cmd::Serve(a) = cli.command {
        return serve::main(*a);
    }
    if let Cmd::TrainWorker(a) = cli.command {
        return train::worker_main(a);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A dataset name resolves to `<datasets>/<name>/edges.txt.gz`; anything else is a source.
fn resolve(graph: &str, datasets: &Path) -> Result<GraphSource> {
    let named = datasets.join(graph).join("edges.txt.gz");
    if !graph.contains(':') && !Path::new(graph).exists() && named.exists() {
        return named
            .to_str()
            .context("dataset path is not UTF-8")?
            .parse()
            .map_err(|e| anyhow::anyhow!("{e}"));
    }
    graph.parse().map_err(|e| anyhow::anyhow!("--graph: {e}"))
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Testbed(_) | Cmd::Sim(_) | Cmd::Train(_) | Cmd::Serve(_) | Cmd::TrainWorker(_) => {
            unreachable!("handled in main")
        }
        Cmd::Plot(a) => plot::run(*a),
        Cmd::Dataset(DatasetCmd::List { datasets }) => {
            let mut names: Vec<_> = std::fs::read_dir(&datasets)
                .with_context(|| format!("reading datasets directory {}", datasets.display()))?
                .filter_map(|e| e.ok())
                .filter(|e| e.path().join("meta.json").exists())
                .collect();
            names.sort_by_key(|e| e.file_name());
            println!(
                "{:<20} {:>10} {:>12} {:>8}  files",
                "name", "vertices", "edges", "features"
            );
            for e in names {
                let meta: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(e.path().join("meta.json"))?)?;
                let files: Vec<String> = std::fs::read_dir(e.path())?
                    .filter_map(|f| f.ok())
                    .map(|f| f.file_name().to_string_lossy().into_owned())
                    .filter(|f| f != "meta.json")
                    .collect();
                println!(
                    "{:<20} {:>10} {:>12} {:>8}  {}",
                    e.file_name().to_string_lossy(),
                    meta["num_nodes"],
                    meta["num_undirected_edges"],
                    meta.get("feature_dim")
                        .map_or("-".to_string(), |d| d.to_string()),
                    files.join(" ")
                );
            }
            Ok(())
        }
        Cmd::Dataset(DatasetCmd::Info { graph, datasets }) => {
            let g = resolve(&graph, &datasets)?.load()?;
            print_info(&g.description, &g.csr, &g.stats);
            if let Some(ids) = &g.original_ids {
                println!(
                    "ids        sparse in the file: {} of {} vertices renumbered to 0..{} (largest id {}); plans and reports use the new ids",
                    g.stats.renumbered,
                    ids.len(),
                    ids.len(),
                    ids.last().copied().unwrap_or(0)
                );
            }
            Ok(())
        }
        Cmd::Dataset(DatasetCmd::Generate {
            graph,
            out,
            datasets,
        }) => {
            let g = resolve(&graph, &datasets)?.load()?;
            write_graph(&g.csr, &out)?;
            eprintln!(
                "wrote {}: {} vertices, {} edges",
                out.display(),
                g.csr.num_vertices(),
                g.csr.num_edges()
            );
            Ok(())
        }
        Cmd::Report { dir } => {
            let path = dir.join("report.json");
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "reading {} (is {} a plan directory?)",
                    path.display(),
                    dir.display()
                )
            })?;
            let r: Report = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            println!(
                "{}: {} vertices, {} edges; {} workers ({}), {} blocks in {} levels",
                r.graph.source,
                r.graph.num_vertices,
                r.graph.num_edges,
                r.workers,
                r.partitioner,
                r.blocks.count,
                r.blocks.levels
            );
            print!("{}", r.traffic_table());
            Ok(())
        }
    }
}

fn print_info(desc: &str, g: &Csr, stats: &sgnn_graph::BuildStats) {
    let n = g.num_vertices();
    let mut degrees: Vec<usize> = (0..n as u32).map(|v| g.degree(v)).collect();
    degrees.sort_unstable();
    let isolated = degrees.iter().take_while(|&&d| d == 0).count();
    let mean = 2.0 * g.num_edges() as f64 / n as f64;
    let pct = |p: f64| degrees[((n - 1) as f64 * p) as usize];
    println!("graph      {desc}");
    println!("vertices   {n} ({isolated} isolated)");
    println!(
        "edges      {} undirected ({} read, {} self-loops and {} duplicates removed)",
        g.num_edges(),
        stats.input_edges,
        stats.self_loops,
        stats.duplicates
    );
    println!(
        "degree     mean {mean:.2}, median {}, p99 {}, max {}",
        pct(0.5),
        pct(0.99),
        degrees[n - 1]
    );
}

fn write_graph(g: &Csr, out: &Path) -> Result<()> {
    let name = out.to_string_lossy();
    if name.ends_with(".npy") {
        let flat: Vec<i64> = g.edges().flat_map(|(u, v)| [u as i64, v as i64]).collect();
        sgnn_graph::npy::write_npy(out, &[flat.len() / 2, 2], &flat)
            .with_context(|| format!("writing {}", out.display()))?;
        return Ok(());
    }
    let file = std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut w: Box<dyn Write> = if name.ends_with(".gz") {
        Box::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::fast(),
        ))
    } else {
        Box::new(std::io::BufWriter::new(file))
    };
    writeln!(
        w,
        "# undirected graph: {} vertices, {} edges (u < v), written by sgnn",
        g.num_vertices(),
        g.num_edges()
    )?;
    for (u, v) in g.edges() {
        writeln!(w, "{u}\t{v}")?;
    }
    w.flush()?;
    if name.ends_with(".gz") {
        drop(w);
    }
    if g.num_edges() == 0 {
        bail!("graph has no edges");
    }
    Ok(())
}
