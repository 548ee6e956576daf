//! The PNG plot of `natm perf stream --plot FILE`: goodput (Mbit/s, linear, from 0) against
//! message size (bytes, log₂ scale), one line per transport, drawn with plotters' bitmap
//! backend.
//!
//! natm builds plotters without a font feature (a TrueType font would need a system font
//! library or a font file in the repository), so the few labels natm's plots need, digits
//! and some lower-case letters, are drawn from a 3×5 pixel font defined here ([`glyph`],
//! [`text`]), scaled up; `natm sim eventbuilder`'s plots use it too. Tick labels: every power of two
//! on the size axis (`1k` = 1024), a round step on the goodput axis; a legend names each
//! line.
//!
//! This module only draws; the figures come from `natm perf stream` and `natm perf paths`
//! ([`super::perf`]). It sits beside the commands, not under `perf`, because `natm sim
//! eventbuilder` draws with it too.

use std::io;
use std::path::Path;

use plotters::prelude::*;

use natm_bench::transport::Kind;

/// What the table prints beside the plot's file name.
pub const LEGEND: &str = "x: message size in bytes (log scale), y: goodput in Mbit/s; \
                          lines: natm red, udp blue, tcp green, unix magenta";

/// One transport's points: (message size in bytes, goodput in Mbit/s).
pub struct Series {
    /// Which transport.
    pub kind: Kind,
    /// Its points, in the order measured.
    pub points: Vec<(usize, f64)>,
}

const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;
const LEFT: i32 = 90;
const RIGHT: i32 = 30;
const TOP: i32 = 50;
const BOTTOM: i32 = 70;
/// Pixels per font dot.
pub const SCALE: i32 = 3;

fn color(kind: Kind) -> RGBColor {
    match kind {
        Kind::Natm => RGBColor(220, 30, 30),
        Kind::Udp => RGBColor(30, 60, 220),
        Kind::Tcp => RGBColor(20, 150, 40),
        Kind::Unix => RGBColor(190, 30, 190),
    }
}

/// The 3×5 glyph of `c`, one row per byte (bit 2 is the left column); `None` for a
/// character the plot never writes.
pub fn glyph(c: char) -> Option<[u8; 5]> {
    Some(match c {
        '0' => [0b111, 0b101, 0b101, 0b101, 0b111],
        '1' => [0b010, 0b110, 0b010, 0b010, 0b111],
        '2' => [0b111, 0b001, 0b111, 0b100, 0b111],
        '3' => [0b111, 0b001, 0b111, 0b001, 0b111],
        '4' => [0b101, 0b101, 0b111, 0b001, 0b001],
        '5' => [0b111, 0b100, 0b111, 0b001, 0b111],
        '6' => [0b111, 0b100, 0b111, 0b101, 0b111],
        '7' => [0b111, 0b001, 0b001, 0b010, 0b010],
        '8' => [0b111, 0b101, 0b111, 0b101, 0b111],
        '9' => [0b111, 0b101, 0b111, 0b001, 0b111],
        'M' => [0b101, 0b111, 0b111, 0b101, 0b101],
        'a' => [0b000, 0b011, 0b101, 0b101, 0b011],
        'b' => [0b100, 0b110, 0b101, 0b101, 0b110],
        'c' => [0b000, 0b011, 0b100, 0b100, 0b011],
        'd' => [0b001, 0b011, 0b101, 0b101, 0b011],
        'e' => [0b010, 0b101, 0b111, 0b100, 0b011],
        'i' => [0b010, 0b000, 0b010, 0b010, 0b010],
        'k' => [0b100, 0b101, 0b110, 0b101, 0b101],
        'l' => [0b110, 0b010, 0b010, 0b010, 0b111],
        'm' => [0b000, 0b110, 0b111, 0b101, 0b101],
        'n' => [0b000, 0b110, 0b101, 0b101, 0b101],
        'o' => [0b000, 0b111, 0b101, 0b101, 0b111],
        'p' => [0b000, 0b110, 0b101, 0b110, 0b100],
        'r' => [0b000, 0b101, 0b110, 0b100, 0b100],
        's' => [0b000, 0b011, 0b110, 0b001, 0b110],
        't' => [0b010, 0b111, 0b010, 0b010, 0b001],
        'u' => [0b000, 0b101, 0b101, 0b101, 0b011],
        'v' => [0b000, 0b101, 0b101, 0b101, 0b010],
        'x' => [0b000, 0b101, 0b010, 0b010, 0b101],
        'y' => [0b000, 0b101, 0b011, 0b001, 0b110],
        '/' => [0b001, 0b001, 0b010, 0b100, 0b100],
        '.' => [0b000, 0b000, 0b000, 0b000, 0b010],
        '-' => [0b000, 0b000, 0b111, 0b000, 0b000],
        ' ' => [0; 5],
        _ => return None,
    })
}

/// Width in pixels of `text` in the plot's font.
pub fn text_width(text: &str) -> i32 {
    text.chars().count() as i32 * 4 * SCALE - SCALE
}

/// A plotters bitmap drawing area.
pub type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// A plotters error as an I/O error.
pub fn failed(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Writes `text` with its top-left corner at `(x, y)`; an error names a character the font
/// lacks.
pub fn text(area: &Area<'_>, x: i32, y: i32, text: &str, c: RGBColor) -> io::Result<()> {
    for (i, ch) in text.chars().enumerate() {
        let Some(rows) = glyph(ch) else {
            return Err(io::Error::other(format!("no glyph for {ch:?}")));
        };
        let gx = x + i as i32 * 4 * SCALE;
        for (r, bits) in rows.iter().enumerate() {
            for col in 0..3 {
                if bits & (0b100 >> col) != 0 {
                    let px = gx + col * SCALE;
                    let py = y + r as i32 * SCALE;
                    area.draw(&Rectangle::new(
                        [(px, py), (px + SCALE, py + SCALE)],
                        c.filled(),
                    ))
                    .map_err(failed)?;
                }
            }
        }
    }
    Ok(())
}

/// A size as the axis writes it: `512`, `1k`, `64k`.
fn size_label(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}k", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

/// A round step (1, 2 or 5 × a power of ten) giving about five gridlines up to `max`.
pub fn step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    let decade = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * decade)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * decade)
}

/// Draws goodput against size for every series into a PNG at `path`.
pub fn goodput(path: &Path, series: &[Series]) -> io::Result<()> {
    let points = series.iter().flat_map(|s| s.points.iter());
    let (mut lo, mut hi, mut top) = (f64::MAX, f64::MIN, 0f64);
    for &(size, mbit) in points {
        let x = (size.max(1) as f64).log2();
        lo = lo.min(x);
        hi = hi.max(x);
        if mbit.is_finite() {
            top = top.max(mbit);
        }
    }
    if lo > hi {
        return Err(io::Error::other("nothing to plot"));
    }
    // Whole powers of two at both ends, at least one apart.
    let (lo, hi) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
    let step = step(top.max(1.0));
    let top = (top.max(1.0) / step).ceil() * step;

    let area = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    area.fill(&WHITE).map_err(failed)?;
    let (x0, x1) = (LEFT, WIDTH as i32 - RIGHT);
    let (y0, y1) = (TOP, HEIGHT as i32 - BOTTOM);
    let px = |size: f64| x0 + ((size.log2() - lo) / (hi - lo) * (x1 - x0) as f64).round() as i32;
    let py = |mbit: f64| y1 - (mbit / top * (y1 - y0) as f64).round() as i32;
    let grid = RGBColor(220, 220, 220);
    let ink = RGBColor(40, 40, 40);

    // Gridlines and tick labels.
    let mut e = lo as i32;
    while e as f64 <= hi {
        let x = px(2f64.powi(e));
        area.draw(&PathElement::new(vec![(x, y0), (x, y1)], grid))
            .map_err(failed)?;
        let label = size_label(1u64 << e.clamp(0, 62));
        text(&area, x - text_width(&label) / 2, y1 + 8, &label, ink)?;
        e += 1;
    }
    let mut v = 0.0;
    while v <= top + step / 2.0 {
        let y = py(v);
        area.draw(&PathElement::new(vec![(x0, y), (x1, y)], grid))
            .map_err(failed)?;
        let label = format!("{v:.0}");
        text(
            &area,
            x0 - 8 - text_width(&label),
            y - 2 * SCALE,
            &label,
            ink,
        )?;
        v += step;
    }
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], ink))
        .map_err(failed)?;
    text(
        &area,
        (x0 + x1 - text_width("bytes")) / 2,
        y1 + 35,
        "bytes",
        ink,
    )?;
    text(&area, 10, 12, "Mbit/s", ink)?;

    // The lines, each point marked, then the legend.
    for (i, s) in series.iter().enumerate() {
        let c = color(s.kind);
        let pts: Vec<(i32, i32)> = s
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|&(size, mbit)| (px(size.max(1) as f64), py(mbit)))
            .collect();
        area.draw(&PathElement::new(pts.clone(), c.stroke_width(2)))
            .map_err(failed)?;
        for (x, y) in pts {
            area.draw(&Rectangle::new(
                [(x - 3, y - 3), (x + 3, y + 3)],
                c.filled(),
            ))
            .map_err(failed)?;
        }
        let ly = y0 + 12 + i as i32 * 8 * SCALE;
        area.draw(&Rectangle::new(
            [(x0 + 12, ly + SCALE), (x0 + 40, ly + 3 * SCALE)],
            c.filled(),
        ))
        .map_err(failed)?;
        text(&area, x0 + 48, ly, s.kind.name(), ink)?;
    }
    area.present().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_the_plot_writes_has_a_glyph() {
        for kind in [Kind::Natm, Kind::Udp, Kind::Tcp, Kind::Unix] {
            assert!(kind.name().chars().all(|c| glyph(c).is_some()), "{kind}");
        }
        for s in ["bytes", "Mbit/s", "0123456789", "64k", "2.5"] {
            assert!(s.chars().all(|c| glyph(c).is_some()), "{s}");
        }
        assert!(glyph('Q').is_none());
    }

    #[test]
    fn axis_labels_and_steps() {
        assert_eq!(size_label(40), "40");
        assert_eq!(size_label(1024), "1k");
        assert_eq!(size_label(65_536), "64k");
        assert_eq!(step(1000.0), 200.0);
        assert_eq!(step(37_000.0), 10_000.0);
        assert_eq!(step(3.0), 1.0);
    }
}
