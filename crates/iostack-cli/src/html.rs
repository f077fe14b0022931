//! `iostack reproduce --html FILE`: one self-contained HTML page (inline SVG, no
//! script, nothing fetched) with one plot per experiment: for each metric a
//! panel of grouped bars, the published value (grey) beside the simulated one
//! (blue) for every variant. The layout is fixed (sizes in pixels written on
//! each plot as `data-top`/`data-height`), so a screenshot can be checked.

use iostack_sim::experiment::{Experiment, Row};
use std::fmt::Write;

/// Bar colours: published and simulated.
pub const PUBLISHED: &str = "#8c8c8c";
pub const SIMULATED: &str = "#1f77b4";

const PAGE_WIDTH: u32 = 1200;
const HEADER: u32 = 80;
const TITLE: u32 = 64;
const PANEL_W: u32 = 290;
const PANEL_H: u32 = 230;
const PER_ROW: u32 = 4;
const GAP: u32 = 24;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A figure as the table prints it, short.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The metrics of `rows` in first-seen order.
fn metrics(rows: &[Row]) -> Vec<(&str, &str)> {
    let mut m: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !m.iter().any(|(n, _)| *n == r.metric) {
            m.push((&r.metric, &r.unit));
        }
    }
    m
}

/// One metric's panel at (x, y): a bar pair per variant on a linear axis from 0.
fn panel(s: &mut String, x: u32, y: u32, metric: &str, unit: &str, rows: &[&Row]) {
    let (left, top, bottom) = (10.0, 34.0, 44.0);
    let plot_w = f64::from(PANEL_W) - 2.0 * left;
    let plot_h = f64::from(PANEL_H) - top - bottom;
    let max = rows
        .iter()
        .flat_map(|r| [r.simulated, r.published.unwrap_or(0.0)])
        .fold(0.0_f64, f64::max);
    let scale = if max > 0.0 { plot_h / max } else { 0.0 };
    let _ = write!(
        s,
        "<g transform=\"translate({x},{y})\"><rect width=\"{PANEL_W}\" height=\"{PANEL_H}\" \
         fill=\"#fafafa\" stroke=\"#ddd\"/><text x=\"{left}\" y=\"20\" font-size=\"13\" \
         font-weight=\"bold\">{} <tspan font-weight=\"normal\" fill=\"#666\">({})</tspan></text>",
        esc(metric),
        esc(unit)
    );
    let slot = plot_w / rows.len().max(1) as f64;
    let bar = (slot * 0.36).min(40.0);
    let base = top + plot_h;
    for (i, r) in rows.iter().enumerate() {
        let cx = left + slot * (i as f64 + 0.5);
        let mut bars = vec![(cx - bar, r.published, PUBLISHED, "published")];
        bars.push((cx, Some(r.simulated), SIMULATED, "simulated"));
        for (bx, v, color, what) in bars {
            let Some(v) = v else { continue };
            // A value of zero still shows as a hairline.
            let h = (v * scale).max(1.0);
            let _ = write!(
                s,
                "<rect x=\"{bx:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\" \
                 fill=\"{color}\"><title>{} {what}: {}</title></rect>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"middle\">{}</text>",
                base - h,
                esc(&r.variant),
                short(v),
                bx + bar / 2.0,
                base - h - 2.0,
                short(v)
            );
        }
        let _ = write!(
            s,
            "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            base + 14.0,
            esc(&r.variant)
        );
    }
    let _ = write!(
        s,
        "<line x1=\"{left}\" y1=\"{base}\" x2=\"{:.1}\" y2=\"{base}\" stroke=\"#333\"/></g>",
        left + plot_w
    );
}

/// The page for the experiments run and their rows.
pub fn report(exps: &[(&Experiment, Vec<Row>)]) -> String {
    let mut body = String::new();
    let mut y = HEADER;
    for (e, rows) in exps {
        let ms = metrics(rows);
        let nrows = (ms.len() as u32).div_ceil(PER_ROW).max(1);
        let svg_h = nrows * (PANEL_H + GAP);
        let height = TITLE + svg_h;
        let _ = write!(
            body,
            "<section class=\"plot\" id=\"{0}\" data-experiment=\"{0}\" data-top=\"{y}\" \
             data-height=\"{height}\" style=\"height:{height}px\"><h2>{0}: {1}</h2>\
             <p class=\"src\">{2}</p><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{PAGE_WIDTH}\" \
             height=\"{svg_h}\" font-family=\"sans-serif\">",
            esc(&e.name),
            esc(&e.title),
            esc(&e.source)
        );
        for (i, (m, unit)) in ms.iter().enumerate() {
            let i = i as u32;
            let x = GAP / 2 + (i % PER_ROW) * (PANEL_W + 6);
            let py = (i / PER_ROW) * (PANEL_H + GAP);
            let mine: Vec<&Row> = rows.iter().filter(|r| r.metric == *m).collect();
            panel(&mut body, x, py, m, unit, &mine);
        }
        body.push_str("</svg></section>\n");
        y += height;
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>iostack reproduce</title><style>\
         body{{margin:0;width:{PAGE_WIDTH}px;font-family:sans-serif}}\
         header{{height:{HEADER}px;box-sizing:border-box;padding:12px;overflow:hidden}}\
         header h1{{margin:0;font-size:22px}}\
         section.plot{{box-sizing:border-box;overflow:hidden}}\
         section.plot h2{{margin:0;padding:8px 12px 0;height:26px;font-size:17px;\
         white-space:nowrap;overflow:hidden}}\
         section.plot p.src{{margin:0;padding:0 12px;height:22px;font-size:11px;color:#555;\
         white-space:nowrap;overflow:hidden}}\
         svg{{display:block;margin-top:8px}}</style></head><body>\n\
         <header><h1>iostack reproduce: published vs simulated</h1>\
         <p><span style=\"color:{PUBLISHED}\">&#9632;</span> published \
         <span style=\"color:{SIMULATED}\">&#9632;</span> simulated; one plot per \
         experiment, one panel per metric, one bar pair per variant.</p></header>\n\
         {body}</body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, metric: &str, published: Option<f64>, simulated: f64) -> Row {
        Row {
            experiment: "e".into(),
            variant: variant.into(),
            metric: metric.into(),
            unit: "MB/s".into(),
            published,
            simulated,
        }
    }

    #[test]
    fn one_panel_per_metric_and_a_bar_per_value() {
        let rows = vec![
            row("a<b", "bw", Some(10.0), 12.0),
            row("c", "bw", None, 0.0),
            row("a<b", "seeks", Some(3.0), 4.5),
        ];
        let mut panels = String::new();
        let mine: Vec<&Row> = rows.iter().filter(|r| r.metric == "bw").collect();
        panel(&mut panels, 0, 0, "bw", "MB/s", &mine);
        // Published and simulated for `a<b`, simulated only for `c`.
        assert_eq!(panels.matches(&format!("fill=\"{SIMULATED}\"")).count(), 2);
        assert_eq!(panels.matches(&format!("fill=\"{PUBLISHED}\"")).count(), 1);
        assert!(panels.contains("a&lt;b") && !panels.contains("a<b"));
        // The tallest bar spans the plot; a zero is a hairline, not nothing.
        assert!(panels.contains("height=\"152.0\""), "{panels}");
        assert!(panels.contains("height=\"1.0\""), "{panels}");
        assert_eq!(metrics(&rows), vec![("bw", "MB/s"), ("seeks", "MB/s")]);
        assert_eq!(short(31_300.0), "31.3k");
        assert_eq!(short(0.25), "0.25");
    }
}
