//! The figures, drawn with plotters' SVG backend into strings. Each
//! function takes summarised data (a few hundred points at most) and
//! returns one `<svg>` element; titles are the page's, not the plot's.

use crate::bucket::EnvelopePoint;
use crate::error::ReportError;
use plotters::coord::ranged1d::AsRangedCoord;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Size of every figure (px); the page scales it down to its width.
pub const SIZE: (u32, u32) = (760, 300);

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(23, 190, 207),
];

/// The light grid lines of every figure.
const GRID: RGBColor = RGBColor(240, 240, 240);

fn err(e: impl std::fmt::Display) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// A display unit for ns values: its divisor and name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    pub div: f64,
    pub name: &'static str,
}

/// The unit that shows `max_abs` ns with a few digits.
pub fn ns_unit(max_abs: f64) -> Unit {
    let (div, name) = match max_abs.abs() {
        a if a >= 1e9 => (1e9, "s"),
        a if a >= 1e6 => (1e6, "ms"),
        a if a >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    };
    Unit { div, name }
}

/// A range that plotters can draw: finite, ordered, not empty.
fn range(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    if hi - lo <= f64::EPSILON * lo.abs().max(1.0) {
        let pad = (lo.abs() * 0.05).max(1.0);
        return (lo - pad)..(hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad)..(hi + pad)
}

/// A chart on an SVG drawing area with the coordinates `X` × `Y`.
type ChartOn<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// A chart on `root` with the page's margins and label areas.
fn chart<'a, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    x: X,
    y: Y,
) -> Result<ChartOn<'a, 'b, X::CoordDescType, Y::CoordDescType>, ReportError> {
    ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// A chart with f64 axes.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The axes' descriptions and a light grid.
fn mesh(
    c: &mut Chart,
    x_desc: impl Into<String>,
    y_desc: impl Into<String>,
) -> Result<(), ReportError> {
    c.configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .light_line_style(GRID)
        .draw()
        .map_err(err)
}

/// The legend box of the labelled series, at `pos`.
fn legend<'a, 'b: 'a, CT: CoordTranslate>(
    c: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    pos: SeriesLabelPosition,
) -> Result<(), ReportError> {
    c.configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(err)
}

/// A legend's key for a line series drawn in `col`.
fn line_key(col: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(a, b)| PathElement::new(vec![(a, b), (a + 18, b)], col.stroke_width(2))
}

fn draw(
    f: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), ReportError>,
) -> Result<String, ReportError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        f(&root)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// A time-bucketed envelope: min–max band per bucket, p50 and p99 lines,
/// and red marks at the bottom for buckets with events (e.g. loss).
/// Times are shown in s from `t0`; values in the unit that fits them.
pub fn envelope(
    points: &[EnvelopePoint],
    width_ns: u64,
    t0: u64,
    marks: &[(u64, u64)],
    marks_label: &str,
    y_desc: &str,
) -> Result<String, ReportError> {
    let max_abs = points
        .iter()
        .map(|p| (p.min as f64).abs().max((p.max as f64).abs()))
        .fold(0.0, f64::max);
    let u = ns_unit(max_abs);
    let x = |t: u64| t.saturating_sub(t0) as f64 / 1e9;
    let w = width_ns as f64 / 1e9;
    let x_hi = points
        .iter()
        .map(|p| p.t_ns)
        .chain(marks.iter().map(|m| m.0))
        .max()
        .map_or(1.0, |t| x(t) + w);
    let y_lo = points
        .iter()
        .map(|p| p.min as f64 / u.div)
        .fold(f64::INFINITY, f64::min);
    let y_hi = points
        .iter()
        .map(|p| p.max as f64 / u.div)
        .fold(f64::NEG_INFINITY, f64::max);
    let yr = if points.is_empty() {
        range(0.0, 1.0)
    } else {
        range(y_lo, y_hi)
    };
    let y_floor = yr.start;
    draw(|root| {
        let mut c = chart(root, range(0.0, x_hi), yr)?;
        mesh(
            &mut c,
            "time since the first send (s)",
            format!("{y_desc} ({})", u.name),
        )?;
        let band = COLOURS[0].mix(0.25);
        c.draw_series(points.iter().map(|p| {
            Rectangle::new(
                [
                    (x(p.t_ns), p.min as f64 / u.div),
                    (x(p.t_ns) + w, p.max as f64 / u.div),
                ],
                band.filled(),
            )
        }))
        .map_err(err)?
        .label("min–max")
        .legend(move |(a, b)| Rectangle::new([(a, b - 5), (a + 18, b + 5)], band.filled()));
        for (k, (name, q)) in [("p50", 0usize), ("p99", 1)].into_iter().enumerate() {
            let col = COLOURS[k * 3];
            c.draw_series(LineSeries::new(
                points.iter().map(|p| {
                    let v = if q == 0 { p.p50 } else { p.p99 };
                    (x(p.t_ns) + w / 2.0, v as f64 / u.div)
                }),
                col.stroke_width(2),
            ))
            .map_err(err)?
            .label(name)
            .legend(line_key(col));
        }
        if !marks.is_empty() {
            let total: u64 = marks.iter().map(|m| m.1).sum();
            c.draw_series(
                marks
                    .iter()
                    .map(|m| TriangleMarker::new((x(m.0) + w / 2.0, y_floor), 6, RED.filled())),
            )
            .map_err(err)?
            .label(format!("{marks_label} ({total})"))
            .legend(|(a, b)| TriangleMarker::new((a + 9, b), 6, RED.filled()));
        }
        legend(&mut c, SeriesLabelPosition::UpperRight)
    })
}

/// Bars `(x_from, x_to, count)` with vertical marker lines `(x, label)`.
pub fn bars(
    bins: &[(f64, f64, f64)],
    x_desc: &str,
    y_desc: &str,
    vlines: &[(f64, String)],
) -> Result<String, ReportError> {
    let x_lo = bins
        .iter()
        .map(|b| b.0)
        .chain(vlines.iter().map(|v| v.0))
        .fold(f64::INFINITY, f64::min);
    let x_hi = bins
        .iter()
        .map(|b| b.1)
        .chain(vlines.iter().map(|v| v.0))
        .fold(f64::NEG_INFINITY, f64::max);
    let y_hi = bins.iter().map(|b| b.2).fold(0.0, f64::max).max(1.0) * 1.1;
    let xr = if x_lo.is_finite() {
        range(x_lo, x_hi)
    } else {
        range(0.0, 1.0)
    };
    draw(|root| {
        let mut c = chart(root, xr, 0.0..y_hi)?;
        mesh(&mut c, x_desc, y_desc)?;
        c.draw_series(
            bins.iter()
                .filter(|b| b.2 > 0.0)
                .map(|b| Rectangle::new([(b.0, 0.0), (b.1, b.2)], COLOURS[0].mix(0.8).filled())),
        )
        .map_err(err)?;
        for (k, (v, label)) in vlines.iter().enumerate() {
            let col = COLOURS[1 + k % (COLOURS.len() - 1)];
            c.draw_series(LineSeries::new(
                [(*v, 0.0), (*v, y_hi)],
                col.stroke_width(2),
            ))
            .map_err(err)?
            .label(label.as_str())
            .legend(line_key(col));
        }
        if !vlines.is_empty() {
            legend(&mut c, SeriesLabelPosition::UpperRight)?;
        }
        Ok(())
    })
}

/// Named line series over shared axes, with labelled points `(x, y,
/// label)` drawn on top.
pub fn lines(
    series: &[(String, Vec<(f64, f64)>)],
    x_desc: &str,
    y_desc: &str,
    points: &[(f64, f64, String)],
) -> Result<String, ReportError> {
    let all = || series.iter().flat_map(|s| s.1.iter().copied());
    let x_lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_hi = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y_lo = all().map(|p| p.1).fold(f64::INFINITY, f64::min).min(0.0);
    let y_hi = all().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let (xr, yr) = if x_lo.is_finite() {
        (range(x_lo, x_hi), range(y_lo, y_hi))
    } else {
        (range(0.0, 1.0), range(0.0, 1.0))
    };
    draw(|root| {
        let mut c = chart(root, xr, yr)?;
        mesh(&mut c, x_desc, y_desc)?;
        for (k, (name, pts)) in series.iter().enumerate() {
            let col = COLOURS[k % COLOURS.len()];
            c.draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))
                .map_err(err)?
                .label(name.as_str())
                .legend(line_key(col));
        }
        c.draw_series(points.iter().map(|(x, y, label)| {
            EmptyElement::at((*x, *y))
                + Circle::new((0, 0), 4, COLOURS[1].filled())
                + Text::new(label.clone(), (6, -14), ("sans-serif", 13).into_font())
        }))
        .map_err(err)?;
        if series.len() > 1 {
            legend(&mut c, SeriesLabelPosition::LowerRight)?;
        }
        Ok(())
    })
}

/// `x` with at most 4 significant digits and no trailing zeros.
fn short(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A named series of `(x, y, ± error)` points.
pub type ErrSeries = (String, Vec<(f64, f64, f64)>);

/// Values against a parameter: per series a line through its points, a
/// dot on each and a vertical bar of ± its error. `categories` names the
/// x positions 0, 1, ... of a parameter that is not a number.
pub fn by_param(
    series: &[ErrSeries],
    x_desc: &str,
    y_desc: &str,
    categories: Option<&[String]>,
) -> Result<String, ReportError> {
    let all = || series.iter().flat_map(|s| s.1.iter().copied());
    let x_lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_hi = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y_lo = all()
        .map(|p| p.1 - p.2)
        .fold(f64::INFINITY, f64::min)
        .min(0.0);
    let y_hi = all().map(|p| p.1 + p.2).fold(f64::NEG_INFINITY, f64::max);
    let (xr, yr) = if x_lo.is_finite() && y_hi.is_finite() {
        let xr = match categories {
            Some(_) => (x_lo - 0.5)..(x_hi + 0.5),
            None => range(x_lo, x_hi),
        };
        (xr, range(y_lo, y_hi))
    } else {
        (range(0.0, 1.0), range(0.0, 1.0))
    };
    draw(|root| {
        let mut c = chart(root, xr, yr)?;
        let label = |x: &f64| match categories {
            Some(cats) => {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    cats.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
            None => short(*x),
        };
        let mut mesh = c.configure_mesh();
        mesh.x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&label)
            .light_line_style(GRID);
        if let Some(cats) = categories {
            mesh.x_labels(cats.len() * 2 + 1);
        }
        mesh.draw().map_err(err)?;
        for (k, (name, pts)) in series.iter().enumerate() {
            let col = COLOURS[k % COLOURS.len()];
            c.draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                col.stroke_width(2),
            ))
            .map_err(err)?
            .label(name.as_str())
            .legend(line_key(col));
            c.draw_series(pts.iter().map(|p| Circle::new((p.0, p.1), 3, col.filled())))
                .map_err(err)?;
            c.draw_series(pts.iter().filter(|p| p.2 > 0.0).map(|p| {
                PathElement::new(
                    vec![(p.0, p.1 - p.2), (p.0, p.1 + p.2)],
                    col.stroke_width(1),
                )
            }))
            .map_err(err)?;
        }
        if !series.is_empty() {
            legend(&mut c, SeriesLabelPosition::UpperLeft)?;
        }
        Ok(())
    })
}

/// A log-log scatter of `(x, y)` ns values (all > 0) with the line y = x:
/// a point on it is a value kept exactly.
pub fn scatter_loglog(
    points: &[(u64, u64)],
    x_desc: &str,
    y_desc: &str,
) -> Result<String, ReportError> {
    let lo = points
        .iter()
        .map(|p| p.0.min(p.1))
        .min()
        .unwrap_or(1)
        .max(1) as f64;
    let hi = points.iter().map(|p| p.0.max(p.1)).max().unwrap_or(10) as f64;
    // One decade of margin below and a half above, so the diagonal and
    // the extremes show.
    let (lo, hi) = (lo / 2.0, (hi * 2.0).max(lo * 10.0));
    let u = ns_unit(hi);
    let (lo, hi) = (lo / u.div, hi / u.div);
    draw(|root| {
        let mut c = chart(root, (lo..hi).log_scale(), (lo..hi).log_scale())?;
        c.configure_mesh()
            .x_desc(format!("{x_desc} ({})", u.name))
            .y_desc(format!("{y_desc} ({})", u.name))
            .x_label_formatter(&|v| short(*v))
            .y_label_formatter(&|v| short(*v))
            .light_line_style(GRID)
            .draw()
            .map_err(err)?;
        c.draw_series(LineSeries::new(
            [(lo, lo), (hi, hi)],
            RGBColor(160, 160, 160).stroke_width(1),
        ))
        .map_err(err)?;
        c.draw_series(points.iter().map(|&(x, y)| {
            Circle::new(
                (x as f64 / u.div, y as f64 / u.div),
                2,
                COLOURS[0].mix(0.5).filled(),
            )
        }))
        .map_err(err)?;
        Ok(())
    })
}

/// Bars of named categories (in the order given), each labelled below.
pub fn category_bars(cats: &[(String, u64)], y_desc: &str) -> Result<String, ReportError> {
    // A segmented 0..=last has a slot per value, the last one included.
    let n = cats.len().saturating_sub(1).max(1) as u32;
    let y_hi = (cats.iter().map(|c| c.1).max().unwrap_or(0).max(1) as f64 * 1.1).ceil() as u64;
    draw(|root| {
        let mut c = chart(root, (0..n).into_segmented(), 0..y_hi)?;
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(n as usize + 1)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => cats
                    .get(*i as usize)
                    .map_or_else(String::new, |c| c.0.clone()),
                _ => String::new(),
            })
            .y_desc(y_desc)
            .light_line_style(GRID)
            .draw()
            .map_err(err)?;
        // One rectangle per category, in order (plotters' `Histogram` keeps
        // its bars in a HashMap, so their order in the SVG changed from run
        // to run and the same data made different pages).
        c.draw_series(cats.iter().enumerate().map(|(i, cat)| {
            let (x0, x1) = (
                SegmentValue::Exact(i as u32),
                SegmentValue::Exact(i as u32 + 1),
            );
            let mut bar = Rectangle::new([(x0, 0), (x1, cat.1)], COLOURS[1].mix(0.8).filled());
            bar.set_margin(0, 0, 12, 12);
            bar
        }))
        .map_err(err)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_categories_make_the_same_svg() {
        let cats: Vec<(String, u64)> = ["loss", "trace", "limit", "queue", "unsent", "other"]
            .iter()
            .zip([5, 0, 7, 1, 3, 2])
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        let first = category_bars(&cats, "copies").unwrap();
        for _ in 0..10 {
            assert_eq!(category_bars(&cats, "copies").unwrap(), first);
        }
    }

    #[test]
    fn axis_numbers_are_short() {
        assert_eq!(short(0.30000000000000004), "0.3");
        assert_eq!(short(0.7999999999999999), "0.8");
        assert_eq!(short(1234.5678), "1235");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(70.0), "70");
    }

    #[test]
    fn units_fit_the_magnitude() {
        assert_eq!(ns_unit(999.0).name, "ns");
        assert_eq!(ns_unit(1_500.0).name, "µs");
        assert_eq!(ns_unit(-2e6).name, "ms");
        assert_eq!(ns_unit(3e9).name, "s");
    }

    #[test]
    fn figures_are_one_svg_each_even_when_empty_or_degenerate() {
        let one = |s: String| {
            assert!(s.starts_with("<svg"), "{}", &s[..40.min(s.len())]);
            assert_eq!(s.matches("<svg").count(), 1);
            s
        };
        one(envelope(&[], 1, 0, &[], "lost", "delay").unwrap());
        let p = EnvelopePoint {
            t_ns: 5,
            count: 1,
            min: 7,
            p50: 7,
            p99: 7,
            max: 7,
        };
        let s = one(envelope(&[p], 10, 5, &[(5, 2)], "lost", "delay").unwrap());
        assert!(s.contains("lost (2)"), "{s}");
        one(bars(&[], "x", "y", &[]).unwrap());
        one(bars(&[(0.0, 1.0, 3.0)], "x", "y", &[(0.5, "p50".into())]).unwrap());
        one(lines(&[], "x", "y", &[]).unwrap());
        let s = one(lines(
            &[("a".into(), vec![(f64::NAN, 1.0), (1.0, 1.0)])],
            "x",
            "y",
            &[(1.0, 1.0, "p99 1ns".into())],
        )
        .unwrap());
        assert!(s.contains("p99 1ns"));
    }
}
