//! `sgnn train-worker --spec FILE`: one worker process of a distributed run, started by
//! `sgnn train` with a spec naming its shard, its daemon's socket and the coordinator.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use sgnn_train::daemon::DaemonClient;
use sgnn_train::data::Shard;
use sgnn_train::distributed::{CoordLink, ScaledExchange, SharedLink};
use sgnn_train::train::{train, Outcome, Recipe};

/// `sgnn train-worker`: one worker of a distributed run (started by `sgnn train`).
#[derive(Args)]
pub struct WorkerArgs {
    /// The worker's spec (JSON, written by `sgnn train`).
    #[arg(long)]
    spec: PathBuf,
}

/// What `sgnn train` tells one worker process.
#[derive(Serialize, Deserialize)]
pub(super) struct WorkerSpec {
    pub(super) worker: u32,
    pub(super) coordinator: String,
    pub(super) daemon_socket: PathBuf,
    pub(super) shard: PathBuf,
    pub(super) recipe: Recipe,
    /// Largest degree of the graph (the most terms one neighbour sum has).
    pub(super) max_degree: u32,
    /// Where the worker writes its outcome.
    pub(super) outcome: PathBuf,
    /// How long to wait for the daemon's socket, seconds.
    pub(super) connect_timeout_s: f64,
}

/// What a worker writes when training ended.
#[derive(Serialize, Deserialize)]
pub(super) struct WorkerOutcome {
    pub(super) outcome: Outcome,
    /// Smallest and largest power-of-two scale of the exchanges.
    pub(super) scale_range: (i32, i32),
    pub(super) exchanges: usize,
}

/// `sgnn train-worker --spec FILE`: one worker process of a distributed run.
pub fn worker_main(a: WorkerArgs) -> ExitCode {
    match worker_run(&a.spec) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn worker_run(spec: &Path) -> Result<()> {
    let s: WorkerSpec = serde_json::from_str(
        &std::fs::read_to_string(spec).with_context(|| format!("reading {}", spec.display()))?,
    )
    .with_context(|| format!("parsing {}", spec.display()))?;
    let w = s.worker;
    let shard = Shard::read(&s.shard)?;
    let daemon = DaemonClient::connect(
        &s.daemon_socket,
        Duration::from_secs_f64(s.connect_timeout_s),
    )?;
    if daemon.worker != w || daemon.vertices != shard.vertices {
        bail!(
            "worker {w}: the daemon on {} serves worker {} with {} vertices, but the shard {} holds {} other rows: the plan and the shards disagree",
            s.daemon_socket.display(),
            daemon.worker,
            daemon.vertices.len(),
            s.shard.display(),
            shard.rows()
        );
    }
    let widest = s.recipe.hidden.max(shard.classes);
    if widest > daemon.max_dim as usize {
        bail!(
            "--hidden {} needs {widest} values per vertex but the plan's aggregators carry {}; re-plan with a larger feature dimension",
            s.recipe.hidden,
            daemon.max_dim
        );
    }
    eprintln!(
        "worker {w}: {} vertices, daemon on {}, coordinator {}",
        shard.rows(),
        s.daemon_socket.display(),
        s.coordinator
    );
    let frac_bits = daemon.frac_bits as u8;
    let link = SharedLink::new(CoordLink::connect(
        &s.coordinator,
        w,
        Box::new(move |why| {
            eprintln!("error: worker {w}: stopping: {why}");
            std::process::exit(1);
        }),
    )?);
    let mut ex = ScaledExchange::new(daemon, link.clone(), frac_bits, s.max_degree);
    let input = shard.input();
    let local = shard.local(&input);
    let progress = link.clone();
    let mut coll = link.clone();
    let outcome = train(&local, &s.recipe, &mut ex, &mut coll, &mut |e| {
        eprintln!(
            "worker {w}: epoch {}: loss {:.6}, {:.1} ms",
            e.epoch, e.loss, e.epoch_ms
        );
        if w == 0 {
            if let Ok(j) = serde_json::to_string(e) {
                let _ = progress.0.borrow_mut().epoch(&j);
            }
        }
    })?;
    let scales = ex.scales.clone();
    ex.into_service().close()?;
    let wo = WorkerOutcome {
        outcome,
        scale_range: (
            scales.iter().copied().min().unwrap_or(0),
            scales.iter().copied().max().unwrap_or(0),
        ),
        exchanges: scales.len(),
    };
    std::fs::write(&s.outcome, serde_json::to_string_pretty(&wo)? + "\n")
        .with_context(|| format!("writing {}", s.outcome.display()))?;
    link.0.borrow_mut().done()?;
    eprintln!("worker {w}: done");
    Ok(())
}
