//! The PNG plots of natm's measurements, drawn with plotters' bitmap backend: goodput
//! against message size for `natm perf stream --plot` and `natm perf paths --plot`
//! ([`goodput`]) and for `natm perf transport --plot` ([`log_sizes`]: named curves with
//! min–max bars, lines or marks only), and the event builder's latency histogram and queue occupancy over time
//! for `natm sim eventbuilder --plot-dir` ([`bars`], [`lines`], which take the
//! simulator's figures as plain numbers, so natm-sim needs no plotters).
//!
//! Every plot is 960×600 pixels on white: light grey gridlines with tick labels, a dark
//! frame, the x axis's title under it, the y axis's in the top-left corner, and a legend
//! of coloured bars in the frame's top-left corner. Goodput's x axis is log₂
//! (every power of two labelled, `1k` = 1024); the others are linear with round steps
//! ([`step`]).
//!
//! natm builds plotters without a font feature (a TrueType font would need a system font
//! library or a font file in the repository), so the few labels natm's plots need, digits
//! and some lower-case letters, are drawn from a 3×5 pixel font defined here ([`glyph`]),
//! scaled up.
//!
//! This module only draws: the figures come from the engines' reports, and the file names
//! from the caller.

use std::io;
use std::path::Path;

use plotters::prelude::*;

use crate::transport::Kind;

/// What a table prints beside a goodput plot's file name.
pub const LEGEND: &str = "x: message size in bytes (log scale), y: goodput in Mbit/s; \
                          lines: natm red, udp blue, tcp green, unix magenta";

/// One transport's points: (message size in bytes, goodput in Mbit/s).
#[derive(Clone, Debug)]
pub struct Series {
    /// Which transport.
    pub kind: Kind,
    /// Its points, in the order measured.
    pub points: Vec<(usize, f64)>,
}

/// One named line of a linear plot ([`lines`]).
#[derive(Clone, Copy, Debug)]
pub struct Line<'a> {
    /// Its legend.
    pub name: &'a str,
    /// Its colour, red, green and blue.
    pub rgb: [u8; 3],
    /// Its points (x, y), in the order drawn.
    pub points: &'a [(f64, f64)],
}

const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;
/// The frame's left edge: goodput's y labels are narrower than the event builder's.
const GOODPUT_LEFT: i32 = 90;
const LINEAR_LEFT: i32 = 100;
const RIGHT: i32 = 30;
const TOP: i32 = 50;
const BOTTOM: i32 = 70;
/// Pixels per font dot.
const SCALE: i32 = 3;
const GRID: RGBColor = RGBColor(220, 220, 220);
const INK: RGBColor = RGBColor(40, 40, 40);

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
        'f' => [0b011, 0b100, 0b110, 0b100, 0b100],
        'g' => [0b011, 0b101, 0b011, 0b001, 0b110],
        'h' => [0b100, 0b100, 0b110, 0b101, 0b101],
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
        'w' => [0b000, 0b101, 0b101, 0b111, 0b101],
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
fn text_width(text: &str) -> i32 {
    text.chars().count() as i32 * 4 * SCALE - SCALE
}

/// A plotters bitmap drawing area.
type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// A plotters error as an I/O error.
fn failed(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Writes `text` with its top-left corner at `(x, y)`; an error names a character the font
/// lacks.
fn text(area: &Area<'_>, x: i32, y: i32, text: &str, c: RGBColor) -> io::Result<()> {
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

/// The parts every plot shares, on a white picture whose frame's left edge is `left`:
/// gridlines with their tick labels, the frame with the axes' titles, the legend.
struct Frame<'a> {
    area: Area<'a>,
    left: i32,
}

impl<'a> Frame<'a> {
    /// A white picture for `path`.
    fn new(path: &'a Path, left: i32) -> io::Result<Self> {
        let area = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
        area.fill(&WHITE).map_err(failed)?;
        Ok(Frame { area, left })
    }

    /// The frame's corners in pixels: (x0, x1, y0, y1), y0 at the top.
    fn edges(&self) -> (i32, i32, i32, i32) {
        (self.left, WIDTH as i32 - RIGHT, TOP, HEIGHT as i32 - BOTTOM)
    }

    /// A vertical gridline at `x`, its label's left edge at `label_x` under the frame.
    fn x_tick(&self, x: i32, label_x: i32, label: &str) -> io::Result<()> {
        let (_, _, y0, y1) = self.edges();
        self.draw(&PathElement::new(vec![(x, y0), (x, y1)], GRID))?;
        text(&self.area, label_x, y1 + 8, label, INK)
    }

    /// A horizontal gridline at `y`, its label right-aligned left of the frame.
    fn y_tick(&self, y: i32, label: &str) -> io::Result<()> {
        let (x0, x1, _, _) = self.edges();
        self.draw(&PathElement::new(vec![(x0, y), (x1, y)], GRID))?;
        text(
            &self.area,
            x0 - 8 - text_width(label),
            y - 2 * SCALE,
            label,
            INK,
        )
    }

    /// The frame, the x axis's title centred under it, the y axis's in the top-left corner.
    fn border(&self, xlabel: &str, ylabel: &str) -> io::Result<()> {
        let (x0, x1, y0, y1) = self.edges();
        self.draw(&Rectangle::new([(x0, y0), (x1, y1)], INK))?;
        text(
            &self.area,
            (x0 + x1 - text_width(xlabel)) / 2,
            y1 + 35,
            xlabel,
            INK,
        )?;
        text(&self.area, 10, 12, ylabel, INK)
    }

    /// The `i`th line of the legend: a bar of `c` and `name`.
    fn legend(&self, i: usize, c: RGBColor, name: &str) -> io::Result<()> {
        let x0 = self.left;
        let ly = TOP + 12 + i as i32 * 8 * SCALE;
        self.draw(&Rectangle::new(
            [(x0 + 12, ly + SCALE), (x0 + 40, ly + 3 * SCALE)],
            c.filled(),
        ))?;
        text(&self.area, x0 + 48, ly, name, INK)
    }

    fn draw<E>(&self, element: &E) -> io::Result<()>
    where
        for<'b> &'b E: plotters::element::PointCollection<'b, (i32, i32)>,
        E: plotters::element::Drawable<BitMapBackend<'a>>,
    {
        self.area.draw(element).map_err(failed)
    }

    fn present(self) -> io::Result<()> {
        self.area.present().map_err(failed)
    }
}

/// A size as the axis writes it: `512`, `1k`, `64k`.
fn size_label(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}k", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

/// A tick label at `v` with as many decimals as the tick `step` needs to tell neighbours
/// apart (a narrow axis, e.g. every event taking the same time, has steps below 1).
fn label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()).clamp(0.0, 6.0) as usize
    };
    format!("{v:.decimals$}")
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
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| s.points.iter().map(|&(n, g)| (n as f64, g)).collect())
        .collect();
    let curves: Vec<Curve<'_>> = series
        .iter()
        .zip(&points)
        .map(|(s, p)| {
            let RGBColor(r, g, b) = color(s.kind);
            Curve {
                name: s.kind.name(),
                rgb: [r, g, b],
                points: p,
                bars: &[],
                line: true,
                marks: true,
            }
        })
        .collect();
    log_sizes(path, &curves, None)
}

/// One named curve of a goodput plot with a log₂ size axis ([`log_sizes`]).
#[derive(Clone, Copy, Debug)]
pub struct Curve<'a> {
    /// Its legend (characters of [`glyph`]'s font).
    pub name: &'a str,
    /// Its colour, red, green and blue.
    pub rgb: [u8; 3],
    /// Its points: (message size in bytes, Mbit/s), in the order drawn.
    pub points: &'a [(f64, f64)],
    /// Vertical bars: (size, least, greatest Mbit/s), e.g. the spread of repeated runs.
    pub bars: &'a [(f64, f64, f64)],
    /// Whether the points are joined by a line.
    pub line: bool,
    /// Whether each point is marked with a square.
    pub marks: bool,
}

/// Draws goodput against message size (log₂ x axis, linear y from 0) for every curve into
/// a PNG at `path`: `natm perf transport --plot`'s picture, and [`goodput`]'s. With
/// `y_max` the y axis ends there (rounded up to a gridline) and what is above is drawn at
/// the frame's top edge.
pub fn log_sizes(path: &Path, curves: &[Curve<'_>], y_max: Option<f64>) -> io::Result<()> {
    let (mut lo, mut hi, mut top) = (f64::MAX, f64::MIN, 0f64);
    for c in curves {
        let bar_tops = c.bars.iter().map(|b| (b.0, b.2));
        for (size, mbit) in c.points.iter().copied().chain(bar_tops) {
            let x = size.max(1.0).log2();
            lo = lo.min(x);
            hi = hi.max(x);
            if mbit.is_finite() {
                top = top.max(mbit);
            }
        }
    }
    if lo > hi {
        return Err(io::Error::other("nothing to plot"));
    }
    if let Some(cap) = y_max.filter(|c| c.is_finite() && *c > 0.0) {
        top = top.min(cap);
    }
    // Whole powers of two at both ends, at least one apart.
    let (lo, hi) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
    let step = step(top.max(1.0));
    let top = (top.max(1.0) / step).ceil() * step;

    let frame = Frame::new(path, GOODPUT_LEFT)?;
    let (x0, x1, y0, y1) = frame.edges();
    let px = |size: f64| {
        x0 + ((size.max(1.0).log2() - lo) / (hi - lo) * (x1 - x0) as f64).round() as i32
    };
    let py = |mbit: f64| y1 - (mbit.min(top) / top * (y1 - y0) as f64).round() as i32;

    // Gridlines and tick labels.
    let mut e = lo as i32;
    while e as f64 <= hi {
        let x = px(2f64.powi(e));
        let label = size_label(1u64 << e.clamp(0, 62));
        frame.x_tick(x, x - text_width(&label) / 2, &label)?;
        e += 1;
    }
    let mut v = 0.0;
    while v <= top + step / 2.0 {
        frame.y_tick(py(v), &format!("{v:.0}"))?;
        v += step;
    }
    frame.border("bytes", "Mbit/s")?;

    // The curves, their bars and marks, then the legend.
    for (i, cv) in curves.iter().enumerate() {
        let [r, g, b] = cv.rgb;
        let c = RGBColor(r, g, b);
        let pts: Vec<(i32, i32)> = cv
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|&(size, mbit)| (px(size), py(mbit)))
            .collect();
        if cv.line {
            frame.draw(&PathElement::new(pts.clone(), c.stroke_width(2)))?;
        }
        for &(size, least, most) in cv
            .bars
            .iter()
            .filter(|b| b.1.is_finite() && b.2.is_finite())
        {
            let (x, a, b) = (px(size), py(least), py(most));
            frame.draw(&PathElement::new(vec![(x, a), (x, b)], c.stroke_width(2)))?;
            for y in [a, b] {
                frame.draw(&PathElement::new(
                    vec![(x - 5, y), (x + 5, y)],
                    c.stroke_width(2),
                ))?;
            }
        }
        if cv.marks {
            for (x, y) in pts {
                frame.draw(&Rectangle::new(
                    [(x - 3, y - 3), (x + 3, y + 3)],
                    c.filled(),
                ))?;
            }
        }
        frame.legend(i, c, cv.name)?;
    }
    frame.present()
}

/// Plot coordinates (`xlo`, 0)…(`xtop`, `ytop`) to pixels.
#[derive(Clone, Copy)]
struct Map {
    xlo: f64,
    xtop: f64,
    ytop: f64,
}

impl Map {
    fn at(self, x: f64, y: f64) -> (i32, i32) {
        let (x0, x1) = (LINEAR_LEFT, WIDTH as i32 - RIGHT);
        let (y0, y1) = (TOP, HEIGHT as i32 - BOTTOM);
        (
            x0 + ((x - self.xlo) / (self.xtop - self.xlo) * f64::from(x1 - x0)).round() as i32,
            y1 - (y / self.ytop * f64::from(y1 - y0)).round() as i32,
        )
    }
}

/// The frame, gridlines and tick labels of a linear plot from (`xmin`, 0) to (`xmax`,
/// `ymax`), widened to whole ticks; returns the pixel mapping.
fn linear_axes(
    frame: &Frame<'_>,
    (xmin, xmax): (f64, f64),
    ymax: f64,
    xlabel: &str,
    ylabel: &str,
) -> io::Result<Map> {
    let xmin = xmin.clamp(0.0, xmax);
    let (xs, ys) = (step((xmax - xmin).max(1e-9)), step(ymax.max(5.0)));
    let xlo = (xmin / xs).floor() * xs;
    let m = Map {
        xlo,
        xtop: ((xmax / xs).ceil() * xs).max(xlo + xs),
        ytop: (ymax.max(5.0) / ys).ceil() * ys,
    };
    let mut v = xlo;
    while v <= m.xtop + xs / 2.0 {
        let (x, _) = m.at(v, 0.0);
        let l = label(v, xs);
        // Centred under its tick, but kept inside the picture at the right edge.
        let lx = (x - text_width(&l) / 2).min(WIDTH as i32 - 2 - text_width(&l));
        frame.x_tick(x, lx, &l)?;
        v += xs;
    }
    let mut v = 0.0;
    while v <= m.ytop + ys / 2.0 {
        let (_, y) = m.at(0.0, v);
        frame.y_tick(y, &label(v, ys))?;
        v += ys;
    }
    frame.border(xlabel, ylabel)?;
    Ok(m)
}

/// A histogram into a PNG at `path`: one bar per (from, to, count), x from the first
/// bucket's start (or 0) to the last's end, y from 0; `xlabel` and `ylabel` title the axes.
pub fn bars(
    path: &Path,
    buckets: &[(f64, f64, f64)],
    xlabel: &str,
    ylabel: &str,
) -> io::Result<()> {
    let xmin = buckets.iter().map(|b| b.0).fold(f64::MAX, f64::min);
    let xmax = buckets.iter().map(|b| b.1).fold(0.0, f64::max);
    let ymax = buckets.iter().map(|b| b.2).fold(0.0, f64::max);
    let frame = Frame::new(path, LINEAR_LEFT)?;
    let m = linear_axes(&frame, (xmin.min(xmax), xmax), ymax, xlabel, ylabel)?;
    let fill = RGBColor(30, 60, 220);
    for &(from, to, n) in buckets.iter().filter(|b| b.2 > 0.0) {
        let (a, top) = m.at(from, n);
        let (b, bottom) = m.at(to, 0.0);
        frame.draw(&Rectangle::new(
            [(a, top), (b.max(a + 1), bottom)],
            fill.filled(),
        ))?;
    }
    frame.present()
}

/// Lines into a PNG at `path`, one per series, with a legend; both axes linear from 0.
pub fn lines(path: &Path, series: &[Line<'_>], xlabel: &str, ylabel: &str) -> io::Result<()> {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (xmax, ymax) = all.fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
    let frame = Frame::new(path, LINEAR_LEFT)?;
    let m = linear_axes(&frame, (0.0, xmax), ymax, xlabel, ylabel)?;
    for (i, s) in series.iter().enumerate() {
        let [r, g, b] = s.rgb;
        let c = RGBColor(r, g, b);
        let px: Vec<(i32, i32)> = s.points.iter().map(|&(x, y)| m.at(x, y)).collect();
        frame.draw(&PathElement::new(px, c.stroke_width(2)))?;
        frame.legend(i, c, s.name)?;
    }
    frame.present()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_the_plots_write_has_a_glyph() {
        for kind in [Kind::Natm, Kind::Udp, Kind::Tcp, Kind::Unix] {
            assert!(kind.name().chars().all(|c| glyph(c).is_some()), "{kind}");
        }
        for s in [
            "bytes",
            "Mbit/s",
            "0123456789",
            "64k",
            "2.5",
            "latency us",
            "events",
            "time ms",
            "cells",
            "max port",
            "mean",
            "natm median",
            "aal5 ceiling",
            "seed fit",
            "seed points",
            "tcp cut at top",
            "asked",
        ] {
            assert!(s.chars().all(|c| glyph(c).is_some()), "{s}");
        }
        assert!(glyph('Q').is_none());
    }

    #[test]
    fn log_sizes_draws_curves_with_bars_and_refuses_nothing() {
        let path = std::env::temp_dir().join(format!("natm-plot-{}.png", std::process::id()));
        let pts = [(64.0, 10.0), (8192.0, 120.0)];
        let bars = [(64.0, 8.0, 12.0), (8192.0, 110.0, 130.0)];
        let curve = Curve {
            name: "natm median",
            rgb: [220, 30, 30],
            points: &pts,
            bars: &bars,
            line: true,
            marks: true,
        };
        log_sizes(&path, &[curve], None).unwrap();
        let png = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(png.starts_with(b"\x89PNG"));
        let empty = Curve {
            points: &[],
            bars: &[],
            ..curve
        };
        assert!(log_sizes(&path, &[empty], None).is_err());
        // A name the font cannot write is an error, not a panic.
        let bad = Curve { name: "Q", ..curve };
        assert!(log_sizes(&path, &[bad], Some(50.0)).is_err());
        let _ = std::fs::remove_file(&path);
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

    #[test]
    fn tick_labels_tell_neighbouring_ticks_apart() {
        assert_eq!(label(600.0, 200.0), "600");
        assert_eq!(label(2.5, 0.5), "2.5");
        assert_eq!(label(124.002, 0.002), "124.002");
        assert_ne!(label(124.002, 0.002), label(124.004, 0.002));
    }
}
