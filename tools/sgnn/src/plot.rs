//! `sgnn plot`: a line chart from any CSV the toolkit writes (`runs.csv`, the figure scripts'
//! sweeps), one line per value of the series columns.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use sgnn_sim::plot::plot_lines;

#[derive(Args)]
pub struct PlotArgs {
    /// CSV file with a header line (comma-separated, no quoting), e.g. a sweep written by
    /// tools/sim/figures/*.sh or an `sgnn sim` runs.csv.
    #[arg(long)]
    csv: PathBuf,
    /// Column for the x axis (numeric).
    #[arg(long)]
    x: String,
    /// Column for the y axis (numeric; rows where it is empty, e.g. an incomplete run, are
    /// skipped and counted).
    #[arg(long)]
    y: String,
    /// Column(s), comma-separated, whose values name the lines: one line per distinct
    /// combination (e.g. `strategy` or `strategy,recirc_gbps`). None: a single line.
    #[arg(long)]
    series: Option<String>,
    /// Keep only rows where COL equals VALUE (repeatable; all must hold).
    #[arg(long = "where", value_name = "COL=VALUE")]
    filters: Vec<String>,
    /// Divide every y value by this (e.g. 1000 to plot microseconds as milliseconds; say so
    /// in --y-label).
    #[arg(long, default_value_t = 1.0)]
    y_div: f64,
    /// Chart title (default: "Y vs X").
    #[arg(long)]
    title: Option<String>,
    /// X axis label (default: the x column's name).
    #[arg(long)]
    x_label: Option<String>,
    /// Y axis label (default: the y column's name).
    #[arg(long)]
    y_label: Option<String>,
    /// Output file, .png or .svg (PNG needs a TrueType font, see `sgnn sim --help`).
    #[arg(long)]
    out: PathBuf,
}

/// A CSV's header and rows, fields split on commas.
struct Table {
    header: Vec<String>,
    /// `(line number, fields)`.
    rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    fn parse(text: &str, file: &str) -> Result<Table> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((_, head)) = lines.next() else {
            bail!("{file} is empty: expected a header line");
        };
        let header: Vec<String> = head.split(',').map(|c| c.trim().to_string()).collect();
        let mut rows = Vec::new();
        for (i, l) in lines {
            if l.contains('"') {
                bail!("{file}:{}: quoted fields are not supported", i + 1);
            }
            let f: Vec<String> = l.split(',').map(|c| c.trim().to_string()).collect();
            if f.len() != header.len() {
                bail!(
                    "{file}:{}: {} fields, but the header has {} columns",
                    i + 1,
                    f.len(),
                    header.len()
                );
            }
            rows.push((i + 1, f));
        }
        Ok(Table { header, rows })
    }

    fn col(&self, name: &str, file: &str) -> Result<usize> {
        self.header.iter().position(|c| c == name).with_context(|| {
            format!(
                "{file} has no column {name:?}; its columns are: {}",
                self.header.join(", ")
            )
        })
    }
}

/// The lines of the chart: `(name, points sorted by x)`, and how many rows had no y value.
type Lines = (Vec<(String, Vec<(f64, f64)>)>, usize);

fn lines(a: &PlotArgs, t: &Table, file: &str) -> Result<Lines> {
    let x = t.col(&a.x, file)?;
    let y = t.col(&a.y, file)?;
    let series: Vec<usize> = match &a.series {
        Some(s) => s
            .split(',')
            .map(|c| t.col(c.trim(), file))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let mut filters = Vec::new();
    for f in &a.filters {
        let Some((c, v)) = f.split_once('=') else {
            bail!("--where {f:?}: expected COL=VALUE");
        };
        filters.push((t.col(c.trim(), file)?, v.trim().to_string()));
    }
    if !(a.y_div.is_finite() && a.y_div != 0.0) {
        bail!("--y-div must be a non-zero number, got {}", a.y_div);
    }
    let num = |v: &str, line: usize, col: &str| -> Result<f64> {
        v.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .with_context(|| format!("{file}:{line}: column {col}: {v:?} is not a number"))
    };
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut skipped = 0;
    for (line, f) in &t.rows {
        if filters.iter().any(|(c, v)| &f[*c] != v) {
            continue;
        }
        if f[y].is_empty() {
            skipped += 1;
            continue;
        }
        let name = if series.is_empty() {
            a.y.clone()
        } else {
            series
                .iter()
                .map(|&c| f[c].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let p = (num(&f[x], *line, &a.x)?, num(&f[y], *line, &a.y)? / a.y_div);
        if !by.contains_key(&name) {
            order.push(name.clone());
        }
        by.entry(name).or_default().push(p);
    }
    if by.is_empty() {
        bail!("{file}: no row left to plot (check --where and the y column)");
    }
    let out = order
        .into_iter()
        .map(|n| {
            let mut pts = by.remove(&n).expect("every name has points");
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (n, pts)
        })
        .collect();
    Ok((out, skipped))
}

pub fn run(a: PlotArgs) -> Result<()> {
    let file = a.csv.display().to_string();
    let text = std::fs::read_to_string(&a.csv).with_context(|| format!("reading {file}"))?;
    let t = Table::parse(&text, &file)?;
    let (series, skipped) = lines(&a, &t, &file)?;
    match a.out.extension().and_then(|e| e.to_str()) {
        Some("png" | "svg") => {}
        _ => bail!("--out {}: use a .png or .svg file", a.out.display()),
    }
    let title = a
        .title
        .clone()
        .unwrap_or_else(|| format!("{} vs {}", a.y, a.x));
    plot_lines(
        &title,
        a.x_label.as_deref().unwrap_or(&a.x),
        a.y_label.as_deref().unwrap_or(&a.y),
        &series,
        &a.out,
    )
    .map_err(|e| anyhow::anyhow!("plotting {}: {e}", a.out.display()))?;
    if skipped > 0 {
        eprintln!("note: {skipped} row(s) with an empty {} skipped", a.y);
    }
    println!(
        "wrote {} ({} line(s): {})",
        a.out.display(),
        series.len(),
        series
            .iter()
            .map(|(n, p)| format!("{n} [{}]", p.len()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PlotArgs,
    }

    fn args(extra: &[&str]) -> PlotArgs {
        let mut v = vec!["t", "--csv", "x.csv", "--out", "o.svg"];
        v.extend_from_slice(extra);
        T::parse_from(v).a
    }

    const CSV: &str = "workers,strategy,time_us\n16,a,3\n8,a,1\n8,b,2\n16,b,\n";

    #[test]
    fn one_line_per_series_sorted_by_x_and_empty_values_skipped() {
        let t = Table::parse(CSV, "x.csv").unwrap();
        let a = args(&["--x", "workers", "--y", "time_us", "--series", "strategy"]);
        let (s, skipped) = lines(&a, &t, "x.csv").unwrap();
        assert_eq!(skipped, 1);
        assert_eq!(
            s,
            vec![
                ("a".to_string(), vec![(8.0, 1.0), (16.0, 3.0)]),
                ("b".to_string(), vec![(8.0, 2.0)]),
            ]
        );
        let a = args(&[
            "--x",
            "workers",
            "--y",
            "time_us",
            "--where",
            "strategy=a",
            "--y-div",
            "2",
        ]);
        let (s, _) = lines(&a, &t, "x.csv").unwrap();
        assert_eq!(
            s,
            vec![("time_us".to_string(), vec![(8.0, 0.5), (16.0, 1.5)])]
        );
    }

    #[test]
    fn errors_name_the_file_line_and_columns() {
        let e = Table::parse("a,b\n1,2\n3\n", "f.csv").err().unwrap();
        assert_eq!(
            e.to_string(),
            "f.csv:3: 1 fields, but the header has 2 columns"
        );
        let t = Table::parse(CSV, "x.csv").unwrap();
        let e = lines(&args(&["--x", "nope", "--y", "time_us"]), &t, "x.csv")
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("no column \"nope\"")
                && e.to_string().contains("workers, strategy, time_us"),
            "{e}"
        );
        let t = Table::parse("x,y\n1,abc\n", "g.csv").unwrap();
        let e = lines(&args(&["--x", "x", "--y", "y"]), &t, "g.csv")
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "g.csv:2: column y: \"abc\" is not a number");
    }
}
