//! PNG plots: the plot size, the series' colours and rasterised text (needs a TrueType font:
//! skipped, saying so on stderr, without one).

use std::path::Path;

use sgnn_sim::plot::{plot_bars, plot_lines, png_font, SIZE};

/// Colour of the first two series (Tableau 10 blue and orange).
const C0: (u8, u8, u8) = (31, 119, 180);
const C1: (u8, u8, u8) = (255, 127, 14);

fn lines_data() -> Vec<(&'static str, Vec<(f64, f64)>)> {
    let up = (0..200).map(|i| (i as f64, i as f64 * 2.0)).collect();
    let down = (0..200).map(|i| (i as f64, 400.0 - i as f64)).collect();
    vec![("rising series", up), ("falling series", down)]
}

fn no_font() -> bool {
    match png_font() {
        Ok(_) => false,
        Err(e) => {
            sgnn_testkit::skipped("PNG plot test", e, sgnn_testkit::HOW_FONT);
            true
        }
    }
}

/// Decoded RGB(A) pixels of a PNG: (width, height, pixels as RGB).
fn decode_png(path: &Path) -> (u32, u32, Vec<(u8, u8, u8)>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    assert!(step >= 3, "colour image");
    let px = buf[..info.buffer_size()]
        .chunks(step)
        .map(|p| (p[0], p[1], p[2]))
        .collect();
    (info.width, info.height, px)
}

#[test]
fn png_plots_have_the_size_the_series_colours_and_text() {
    if no_font() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines.png");
    plot_lines(
        "Test lines with a long title",
        "simulated time (us)",
        "queue length (KB)",
        &lines_data(),
        &path,
    )
    .unwrap();
    let (w, h, px) = decode_png(&path);
    assert_eq!((w, h), SIZE);
    let count = |c: (u8, u8, u8)| px.iter().filter(|&&p| p == c).count();
    // Two-pixel lines across most of the plot width.
    assert!(count(C0) > 500, "{} blue pixels", count(C0));
    assert!(count(C1) > 500, "{} orange pixels", count(C1));
    // Text is rasterised: the same chart with its title and axis labels has more dark
    // pixels than without them.
    let dark = |px: &[(u8, u8, u8)]| {
        px.iter()
            .filter(|p| p.0 < 90 && p.1 < 90 && p.2 < 90)
            .count()
    };
    let bare = dir.path().join("bare.png");
    plot_lines("", "", "", &lines_data(), &bare).unwrap();
    let (_, _, bare_px) = decode_png(&bare);
    assert!(
        dark(&px) > dark(&bare_px) + 500,
        "{} dark pixels with text, {} without",
        dark(&px),
        dark(&bare_px)
    );
    let bars = dir.path().join("bars.png");
    plot_bars("Bars", "MB", &["a", "b"], &[("s", vec![1.0, 2.0])], &bars).unwrap();
    let (w, h, px) = decode_png(&bars);
    assert_eq!((w, h), SIZE);
    assert!(
        px.iter().filter(|&&p| p == C0).count() > 10_000,
        "filled bars"
    );
}
