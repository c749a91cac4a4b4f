//! Plots with `plotters`: generic line and grouped-bar charts ([`plot_lines`], [`plot_bars`])
//! that write SVG or PNG by the file's extension, and the plots of a set of simulated runs
//! ([`plot_runs`]: queue length, aggregator occupancy and throughput over time, traffic and
//! layer time per strategy; the axes of the paper's figure 2).
//!
//! SVG needs no font: the viewer draws the text, and the layout here estimates text widths
//! (so an SVG is the same on every machine). PNG text is rasterised with `ab_glyph` from a
//! TrueType font loaded at run time ([`png_font`]: `$SGNN_PLOT_FONT`, else DejaVu Sans or
//! Liberation Sans from the usual system paths; Debian's `fonts-dejavu-core`). Without one,
//! PNG fails with a message and [`plot_runs`] writes SVG only.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

use crate::net::PS_PER_US;
use crate::strategies::DATA_WIRE;
use crate::{RunReport, SimError};

/// Pixel size of every plot.
pub const SIZE: (u32, u32) = (1000, 600);
/// Environment variable naming a TrueType font file for PNG text.
pub const FONT_ENV: &str = "SGNN_PLOT_FONT";
/// Font files tried for PNG text, in order (after `$SGNN_PLOT_FONT`).
pub const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
];
const FAMILY: &str = "sans-serif";

/// Which image files to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formats {
    /// SVG only.
    Svg,
    /// PNG only.
    Png,
    /// SVG and PNG.
    Both,
    /// No plots.
    None,
}

impl Formats {
    /// Extensions to write.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Formats::Svg => &["svg"],
            Formats::Png => &["png"],
            Formats::Both => &["svg", "png"],
            Formats::None => &[],
        }
    }
}

impl FromStr for Formats {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "svg" => Ok(Formats::Svg),
            "png" => Ok(Formats::Png),
            "both" => Ok(Formats::Both),
            "none" => Ok(Formats::None),
            _ => Err(SimError::UnknownFormats {
                given: s.to_string(),
            }),
        }
    }
}

/// The font PNG text is drawn with: found, read and registered with `plotters` on the first
/// call; `Err` says where it looked.
pub fn png_font() -> Result<&'static Path, &'static str> {
    static FONT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = FONT.get_or_init(|| {
        let mut tried = Vec::new();
        let env = std::env::var_os(FONT_ENV).map(PathBuf::from);
        if env.is_none() {
            tried.push(format!("${FONT_ENV} (not set)"));
        }
        for p in env
            .into_iter()
            .chain(FONT_CANDIDATES.iter().map(PathBuf::from))
        {
            match std::fs::read(&p) {
                Ok(bytes) => {
                    // plotters keeps fonts for the life of the process.
                    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                    if plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).is_ok() {
                        return Ok(p);
                    }
                    tried.push(format!("{} (not a TrueType/OpenType font)", p.display()));
                }
                Err(e) => tried.push(format!("{} ({e})", p.display())),
            }
        }
        Err(format!(
            "no font to draw PNG text with; tried {}. Install fonts-dejavu-core or set \
             {FONT_ENV} to a .ttf file",
            tried.join(", ")
        ))
    });
    r.as_deref().map_err(|e| e.as_str())
}

/// Colours of successive series (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

mod svg {
    use plotters::prelude::*;
    use plotters_backend::{
        BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
    };

    /// SVG backend with text sizes estimated from the character count (no font needed).
    pub(super) struct Svg<'a>(pub(super) SVGBackend<'a>);

    type SvgError = <SVGBackend<'static> as DrawingBackend>::ErrorType;

    impl DrawingBackend for Svg<'_> {
        type ErrorType = SvgError;
        fn get_size(&self) -> (u32, u32) {
            self.0.get_size()
        }
        fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.ensure_prepared()
        }
        fn present(&mut self) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.present()
        }
        fn draw_pixel(
            &mut self,
            p: BackendCoord,
            c: BackendColor,
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.draw_pixel(p, c)
        }
        fn draw_line<S: BackendStyle>(
            &mut self,
            a: BackendCoord,
            b: BackendCoord,
            s: &S,
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.draw_line(a, b, s)
        }
        fn draw_rect<S: BackendStyle>(
            &mut self,
            a: BackendCoord,
            b: BackendCoord,
            s: &S,
            fill: bool,
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.draw_rect(a, b, s, fill)
        }
        fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            path: I,
            s: &S,
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.draw_path(path, s)
        }
        fn draw_circle<S: BackendStyle>(
            &mut self,
            c: BackendCoord,
            r: u32,
            s: &S,
            fill: bool,
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.draw_circle(c, r, s, fill)
        }
        fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            vert: I,
            s: &S,
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.fill_polygon(vert, s)
        }
        fn draw_text<T: BackendTextStyle>(
            &mut self,
            text: &str,
            s: &T,
            pos: BackendCoord,
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.draw_text(text, s, pos)
        }
        fn estimate_text_size<T: BackendTextStyle>(
            &self,
            text: &str,
            s: &T,
        ) -> Result<(u32, u32), DrawingErrorKind<SvgError>> {
            // The SVG's font-size is size / 1.24 (plotters-svg); a sans-serif character is about
            // 0.6 em wide on average.
            let em = s.size() / 1.24;
            Ok((
                (text.chars().count() as f64 * 0.6 * em).ceil() as u32,
                em.ceil() as u32,
            ))
        }
        fn blit_bitmap(
            &mut self,
            pos: BackendCoord,
            size: (u32, u32),
            src: &[u8],
        ) -> Result<(), DrawingErrorKind<SvgError>> {
            self.0.blit_bitmap(pos, size, src)
        }
    }
}
use svg::Svg;

/// Something drawn on any backend.
trait Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), SimError>;
}

fn err<E: std::fmt::Display>(e: E) -> SimError {
    SimError::Draw(e.to_string())
}

/// Draws `chart` into `path`: SVG or PNG by the extension.
fn render<C: Chart>(chart: &C, path: &Path) -> Result<(), SimError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let res = match ext {
        "svg" => {
            let root = Svg(SVGBackend::new(path, SIZE)).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            chart.draw(&root)?;
            root.present().map_err(err)
        }
        "png" => {
            png_font().map_err(SimError::NoFont)?;
            let root = BitMapBackend::new(path, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            chart.draw(&root)?;
            root.present().map_err(err)
        }
        _ => Err(SimError::UnknownImageType {
            ext: ext.to_string(),
        }),
    };
    res.map_err(|e| SimError::Plotting {
        path: path.to_path_buf(),
        reason: Box::new(e),
    })
}

/// Tick label: up to 3 significant decimals, no trailing zeros.
fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn span(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        (0.0, 1.0)
    } else if hi > lo {
        (lo, hi)
    } else {
        (lo, lo + lo.abs().max(1.0))
    }
}

struct Lines<'a, S> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    series: &'a [(S, Vec<(f64, f64)>)],
}

impl<S: AsRef<str>> Chart for Lines<'_, S> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), SimError> {
        let pts = || self.series.iter().flat_map(|s| s.1.iter());
        let (x0, x1) = span(
            pts().map(|p| p.0).fold(f64::INFINITY, f64::min),
            pts().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
        );
        let ymin = pts().map(|p| p.1).fold(0.0, f64::min);
        let ymax = pts().map(|p| p.1).fold(0.0, f64::max);
        // Head room for the legend.
        let (y0, y1) = span(ymin, ymax + (ymax - ymin) * 0.25);
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, (FAMILY, 26))
            .margin(18)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label)
            .y_desc(self.y_label)
            .axis_desc_style((FAMILY, 20))
            .label_style((FAMILY, 16))
            .x_label_formatter(&|v| fmt_num(*v))
            .y_label_formatter(&|v| fmt_num(*v))
            .x_max_light_lines(4)
            .y_max_light_lines(4)
            .light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(210, 210, 210))
            .draw()
            .map_err(err)?;
        for (i, (_, points)) in self.series.iter().enumerate() {
            let c = color(i);
            // Dense series one pixel wide: plotters' wide bitmap lines put long miter spikes
            // on sharp peaks.
            let width = if points.len() > 200 { 1 } else { 2 };
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    c.stroke_width(width),
                ))
                .map_err(err)?;
            // Markers where points are few (sweeps), so single points show too.
            if points.len() <= 40 {
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 4, c.filled())))
                    .map_err(err)?;
            }
        }
        let entries: Vec<(&str, RGBColor)> = (self.series.iter().enumerate())
            .map(|(i, s)| (s.0.as_ref(), color(i)))
            .collect();
        legend(root, chart.plotting_area(), &entries, Swatch::Line)
    }
}

struct Bars<'a, G, S> {
    title: &'a str,
    y_label: &'a str,
    groups: &'a [G],
    series: &'a [(S, Vec<f64>)],
}

impl<G: AsRef<str>, S: AsRef<str>> Chart for Bars<'_, G, S> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), SimError> {
        let n = self.groups.len();
        let k = self.series.len().max(1);
        let ymax = self
            .series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .fold(0.0, f64::max);
        let (_, y1) = span(0.0, ymax * 1.3);
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, (FAMILY, 26))
            .margin(18)
            .x_label_area_size(50)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..n.max(1) as f64, 0.0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(self.y_label)
            .axis_desc_style((FAMILY, 20))
            .label_style((FAMILY, 16))
            .y_label_formatter(&|v| fmt_num(*v))
            .x_max_light_lines(4)
            .y_max_light_lines(4)
            .light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(210, 210, 210))
            .draw()
            .map_err(err)?;
        // Each group is 0.8 wide, split between the series.
        let w = 0.8 / k as f64;
        for (j, (_, values)) in self.series.iter().enumerate() {
            let c = color(j);
            let bars = values.iter().take(n).enumerate().map(|(i, &v)| {
                let x = i as f64 + 0.1 + j as f64 * w;
                Rectangle::new([(x, 0.0), (x + w * 0.92, v)], c.filled())
            });
            chart.draw_series(bars).map_err(err)?;
            let labels = values.iter().take(n).enumerate().map(|(i, &v)| {
                let x = i as f64 + 0.1 + (j as f64 + 0.46) * w;
                Text::new(
                    fmt_num(v),
                    (x, v),
                    (FAMILY, 15)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Bottom)),
                )
            });
            chart.draw_series(labels).map_err(err)?;
        }
        // Group names under the axis, centred on their groups.
        for (i, g) in self.groups.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(
                g.as_ref().to_string(),
                (x, y + 10),
                (FAMILY, 18)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(err)?;
        }
        let entries: Vec<(&str, RGBColor)> = (self.series.iter().enumerate())
            .map(|(i, s)| (s.0.as_ref(), color(i)))
            .collect();
        legend(root, chart.plotting_area(), &entries, Swatch::Box)
    }
}

#[derive(Clone, Copy)]
enum Swatch {
    Line,
    Box,
}

/// The legend, in the upper right corner of `plot`. Drawn here rather than with plotters'
/// series labels, which measure text with the font even on the SVG backend.
fn legend<DB: DrawingBackend, X: Ranged, Y: Ranged>(
    root: &DrawingArea<DB, Shift>,
    plot: &DrawingArea<DB, Cartesian2d<X, Y>>,
    entries: &[(&str, RGBColor)],
    swatch: Swatch,
) -> Result<(), SimError> {
    if entries.is_empty() {
        return Ok(());
    }
    let font = (FAMILY, 16).into_font().color(&BLACK);
    let (mut tw, mut th) = (0, 0);
    for (name, _) in entries {
        let (w, h) = root.estimate_text_size(name, &font).map_err(err)?;
        tw = tw.max(w as i32);
        th = th.max(h as i32);
    }
    let (pad, sw, line) = (8, 28, th.max(14) + 8);
    let (xs, ys) = plot.get_pixel_range();
    let x1 = xs.end - 10;
    let x0 = x1 - (pad + sw + pad + tw + pad);
    let y0 = ys.start + 10;
    let y1 = y0 + 2 * pad + line * entries.len() as i32;
    root.draw(&Rectangle::new(
        [(x0, y0), (x1, y1)],
        WHITE.mix(0.9).filled(),
    ))
    .map_err(err)?;
    root.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.stroke_width(1)))
        .map_err(err)?;
    for (i, &(name, c)) in entries.iter().enumerate() {
        let y = y0 + pad + line * i as i32 + line / 2;
        let x = x0 + pad;
        match swatch {
            Swatch::Line => root.draw(&PathElement::new(
                vec![(x, y), (x + sw, y)],
                c.stroke_width(3),
            )),
            Swatch::Box => root.draw(&Rectangle::new(
                [(x + 4, y - 7), (x + sw - 4, y + 7)],
                c.filled(),
            )),
        }
        .map_err(err)?;
        root.draw(&Text::new(
            name.to_string(),
            (x + sw + pad, y),
            font.pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// A line chart of `series` (`(name, points)`, one colour and legend entry each) into
/// `path` (`.svg` or `.png`). The y axis starts at 0 (or the smallest negative value); points
/// get markers when a series has at most 40 (sweeps).
pub fn plot_lines<S: AsRef<str>>(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(S, Vec<(f64, f64)>)],
    path: &Path,
) -> Result<(), SimError> {
    render(
        &Lines {
            title,
            x_label,
            y_label,
            series,
        },
        path,
    )
}

/// A grouped bar chart into `path` (`.svg` or `.png`): one group per entry of `groups` (named
/// on the x axis), one bar per series in each group (`(name, values)`, a value per group),
/// each bar labelled with its value.
pub fn plot_bars<G: AsRef<str>, S: AsRef<str>>(
    title: &str,
    y_label: &str,
    groups: &[G],
    series: &[(S, Vec<f64>)],
    path: &Path,
) -> Result<(), SimError> {
    if let Some((name, v)) = series.iter().find(|s| s.1.len() != groups.len()) {
        return Err(SimError::SeriesLength {
            series: name.as_ref().to_string(),
            values: v.len(),
            groups: groups.len(),
        });
    }
    render(
        &Bars {
            title,
            y_label,
            groups,
            series,
        },
        path,
    )
}

/// A decimal unit for values up to `max`: (divisor, name).
fn unit(max: f64, units: &[(f64, &'static str)]) -> (f64, &'static str) {
    units
        .iter()
        .rev()
        .find(|u| max >= u.0 * 2.0)
        .copied()
        .unwrap_or(units[0])
}

const BYTES: &[(f64, &str)] = &[(1.0, "B"), (1e3, "KB"), (1e6, "MB"), (1e9, "GB")];
const MICROS: &[(f64, &str)] = &[(1.0, "us"), (1e3, "ms"), (1e6, "s")];

/// What [`plot_runs`] needs beside the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlotOptions {
    /// Files to write.
    pub formats: Formats,
    /// Switch memory of one aggregator (one segment slot), bytes (the plan's `agg_bytes`).
    pub aggregator_bytes: u64,
    /// Aggregators the switch holds (shown in the occupancy plot's title).
    pub aggregators: Option<u64>,
}

/// What [`plot_runs`] wrote.
#[derive(Debug, Clone, Default)]
pub struct Plotted {
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Why PNG files were not written although asked for (no font).
    pub png_skipped: Option<String>,
}

/// The plots of `runs` in `dir`: `queue`, `aggregators`, `throughput` (over time, from the
/// runs' series), `traffic` and `time` (per strategy), each as `.svg` and/or `.png`.
/// Without a font, PNG is skipped and [`Plotted::png_skipped`] says why.
pub fn plot_runs(runs: &[RunReport], dir: &Path, opts: &PlotOptions) -> Result<Plotted, SimError> {
    let mut out = Plotted::default();
    let mut exts: Vec<&str> = opts.formats.extensions().to_vec();
    if exts.contains(&"png") {
        if let Err(e) = png_font() {
            out.png_skipped = Some(e.to_string());
            exts.retain(|&e| e != "png");
        }
    }
    if exts.is_empty() {
        return Ok(out);
    }
    let mut write = |stem: &str, f: &dyn Fn(&Path) -> Result<(), SimError>| {
        for ext in &exts {
            let p = dir.join(format!("{stem}.{ext}"));
            f(&p)?;
            out.files.push(p);
        }
        Ok::<(), SimError>(())
    };

    let t_max = runs
        .iter()
        .flat_map(|r| r.series.last())
        .map(|s| s.t as f64 / PS_PER_US as f64)
        .fold(0.0, f64::max);
    let (t_div, t_unit) = unit(t_max, MICROS);
    let x_label = format!("simulated time ({t_unit})");
    let t = |s: &crate::Sample| s.t as f64 / PS_PER_US as f64 / t_div;
    let lines = |f: &dyn Fn(&crate::Sample) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        runs.iter()
            .map(|r| {
                (
                    r.strategy.clone(),
                    r.series.iter().map(|s| (t(s), f(s))).collect(),
                )
            })
            .collect()
    };

    let q_max = runs
        .iter()
        .flat_map(|r| &r.series)
        .map(|s| s.queue_peak_bytes as f64)
        .fold(0.0, f64::max);
    let (q_div, q_unit) = unit(q_max, BYTES);
    let queue = lines(&|s| s.queue_peak_bytes as f64 / q_div);
    write("queue", &|p| {
        plot_lines(
            "Longest switch egress queue (peak in each sample interval)",
            &x_label,
            &format!("queue length ({q_unit})"),
            &queue,
            p,
        )
    })?;

    let agg_bytes = opts.aggregator_bytes as f64;
    let a_max = runs
        .iter()
        .flat_map(|r| &r.series)
        .map(|s| s.aggregators_in_use as f64 * agg_bytes)
        .fold(0.0, f64::max);
    let (a_div, a_unit) = unit(a_max, BYTES);
    let occupancy = lines(&|s| s.aggregators_in_use as f64 * agg_bytes / a_div);
    let a_title = match opts.aggregators {
        Some(n) => format!(
            "Aggregator occupancy (switch holds {n} aggregators of {} B)",
            opts.aggregator_bytes
        ),
        None => format!(
            "Aggregator occupancy ({} B per aggregator)",
            opts.aggregator_bytes
        ),
    };
    write("aggregators", &|p| {
        plot_lines(
            &a_title,
            &x_label,
            &format!("aggregator memory in use ({a_unit})"),
            &occupancy,
            p,
        )
    })?;

    let mut tput = Vec::new();
    for r in runs {
        let pts = |f: &dyn Fn(&crate::Sample) -> f64| -> Vec<(f64, f64)> {
            r.series.iter().map(|s| (t(s), f(s))).collect()
        };
        if r.switch.is_some() {
            tput.push((
                format!("{} aggregation", r.strategy),
                pts(&|s| s.contributions_per_s() * DATA_WIRE as f64 * 8.0 / 1e9),
            ));
        }
        tput.push((
            format!("{} delivered", r.strategy),
            pts(&|s| s.delivered_bps() / 1e9),
        ));
    }
    write("throughput", &|p| {
        plot_lines(
            "Aggregation throughput (data frames aggregated) and goodput to hosts",
            &x_label,
            "throughput (Gbit/s)",
            &tput,
            p,
        )
    })?;

    let names: Vec<&str> = runs.iter().map(|r| r.strategy.as_str()).collect();
    let up: Vec<f64> = runs
        .iter()
        .map(|r| r.host_uplink.iter().sum::<u64>() as f64)
        .collect();
    let down: Vec<f64> = runs
        .iter()
        .map(|r| r.host_downlink.iter().sum::<u64>() as f64)
        .collect();
    let total: Vec<f64> = runs.iter().map(|r| r.total_bytes() as f64).collect();
    let (b_div, b_unit) = unit(total.iter().copied().fold(0.0, f64::max), BYTES);
    let scale = |v: &[f64]| v.iter().map(|x| x / b_div).collect::<Vec<_>>();
    let traffic = [
        ("upload (hosts to switch)", scale(&up)),
        ("download (switch to hosts)", scale(&down)),
        ("all links", scale(&total)),
    ];
    write("traffic", &|p| {
        plot_bars(
            "Wire bytes of one layer",
            &format!("traffic ({b_unit})"),
            &names,
            &traffic,
            p,
        )
    })?;

    let done: Vec<&RunReport> = runs.iter().filter(|r| r.time.is_some()).collect();
    let incomplete: Vec<&str> = runs
        .iter()
        .filter(|r| r.time.is_none())
        .map(|r| r.strategy.as_str())
        .collect();
    let us: Vec<f64> = done
        .iter()
        .map(|r| r.time.unwrap() as f64 / PS_PER_US as f64)
        .collect();
    let (l_div, l_unit) = unit(us.iter().copied().fold(0.0, f64::max), MICROS);
    let time_names: Vec<&str> = done.iter().map(|r| r.strategy.as_str()).collect();
    let times = [(
        "communication time",
        us.iter().map(|x| x / l_div).collect::<Vec<_>>(),
    )];
    let time_title = if incomplete.is_empty() {
        "Time of one layer".to_string()
    } else {
        format!("Time of one layer (incomplete: {})", incomplete.join(", "))
    };
    write("time", &|p| {
        plot_bars(
            &time_title,
            &format!("time per layer ({l_unit})"),
            &time_names,
            &times,
            p,
        )
    })?;
    Ok(out)
}
