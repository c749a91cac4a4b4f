//! Progress bars and stage lines for the planner's stages (`plan`, `bench`), and loading the
//! graph of `--graph` as the first stage.

use std::time::Instant;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use sgnn_graph::GraphSource;
use sgnn_planner::planner::Event;

/// Draws one progress bar per stage and prints a line when a stage finishes.
pub struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        Progress { bar: None, quiet }
    }

    pub fn on(&mut self, ev: Event) {
        match ev {
            Event::Start { stage, total } => {
                if self.quiet {
                    return;
                }
                let bar = match total {
                    Some(t) => ProgressBar::new(t).with_style(
                        ProgressStyle::with_template(
                            "{spinner} {prefix:>10} [{elapsed_precise}] {wide_bar} {percent:>3}% {msg}",
                        )
                        .unwrap(),
                    ),
                    None => ProgressBar::new_spinner().with_style(
                        ProgressStyle::with_template("{spinner} {prefix:>10} [{elapsed_precise}] {msg}")
                            .unwrap(),
                    ),
                };
                bar.set_prefix(stage);
                bar.enable_steady_tick(std::time::Duration::from_millis(120));
                self.bar = Some(bar);
            }
            Event::Progress { done, message } => {
                if let Some(b) = &self.bar {
                    b.set_position(done);
                    b.set_message(message);
                }
            }
            Event::Done {
                stage,
                seconds,
                summary,
            } => {
                if let Some(b) = self.bar.take() {
                    b.finish_and_clear();
                }
                eprintln!("  {stage:>10}  {seconds:>8.2} s  {summary}");
            }
        }
    }
}

/// Loads the graph of `--graph` as the `load` stage.
pub fn load_graph(spec: &str, progress: &mut Progress) -> Result<sgnn_graph::LoadedGraph> {
    let source: GraphSource = spec.parse().map_err(|e| anyhow::anyhow!("--graph: {e}"))?;
    progress.on(Event::Start {
        stage: "load",
        total: None,
    });
    let t = Instant::now();
    let g = source.load()?;
    progress.on(Event::Done {
        stage: "load",
        seconds: t.elapsed().as_secs_f64(),
        summary: g.summary(),
    });
    Ok(g)
}
