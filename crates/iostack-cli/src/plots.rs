//! Self-contained HTML pages of Vega-Lite charts: the Vega and Vega-Lite
//! JavaScript (pinned versions, vendored in `assets/`, see its README) is
//! embedded in the page, each chart's specification is a JSON block compiled
//! and rendered as SVG when the page loads; nothing is fetched. Each chart
//! sits in a section of fixed height (`data-top`, `data-height`) so that a
//! screenshot can be checked plot by plot.

use serde_json::Value;
use std::fmt::Write;

const VEGA: &str = include_str!("../assets/vega-5.30.0.min.js");
const VEGA_LITE: &str = include_str!("../assets/vega-lite-5.21.0.min.js");

/// Page width in pixels; charts are laid out inside it.
pub const PAGE_WIDTH: u32 = 1200;
const HEADER: u32 = 90;
/// Section height above the chart (title and source line).
const TITLE: u32 = 64;

/// Read and write colours of the run plots (blkparse's R and W).
pub const READ: &str = "#1f77b4";
pub const WRITE: &str = "#ff7f0e";

/// One chart: an id, a title, a line under it, its Vega-Lite specification
/// and the pixels it needs below the title.
pub struct Chart {
    pub id: String,
    pub title: String,
    pub note: String,
    pub spec: Value,
    pub height: u32,
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JSON that is safe inside a `<script>` element.
fn script_json(v: &Value) -> String {
    v.to_string().replace("</", "<\\/")
}

/// Renders every `script.vl-spec` into the element before it; an error is
/// logged to the console (which the test suite watches).
const BOOT: &str = "for (const s of document.querySelectorAll('script.vl-spec')) {\
  const el = document.getElementById(s.dataset.target);\
  try {\
    const vg = vegaLite.compile(JSON.parse(s.textContent)).spec;\
    new vega.View(vega.parse(vg), {renderer: 'svg', container: el, hover: false})\
      .runAsync().catch(e => console.error('chart ' + s.dataset.target + ': ' + e));\
  } catch (e) { console.error('chart ' + s.dataset.target + ': ' + e); }\
}";

/// The page: a header, then one section per chart.
pub fn page(title: &str, intro: &str, charts: &[Chart]) -> String {
    let mut body = String::new();
    let mut y = HEADER;
    for c in charts {
        let height = TITLE + c.height;
        let _ = writeln!(
            body,
            "<section class=\"plot\" id=\"{0}\" data-plot=\"{0}\" data-top=\"{y}\" \
             data-height=\"{height}\" style=\"height:{height}px\"><h2>{1}</h2>\
             <p class=\"src\">{2}</p><div class=\"chart\" id=\"{0}-chart\"></div>\
             <script type=\"application/json\" class=\"vl-spec\" data-target=\"{0}-chart\">{3}\
             </script></section>",
            esc(&c.id),
            esc(&c.title),
            esc(&c.note),
            script_json(&c.spec)
        );
        y += height;
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{t}</title><style>\
         body{{margin:0;width:{PAGE_WIDTH}px;font-family:sans-serif}}\
         header{{height:{HEADER}px;box-sizing:border-box;padding:12px;overflow:hidden}}\
         header h1{{margin:0;font-size:22px}}\
         header p{{margin:6px 0 0;font-size:13px}}\
         section.plot{{box-sizing:border-box;overflow:hidden}}\
         section.plot h2{{margin:0;padding:8px 12px 0;height:26px;font-size:17px;\
         white-space:nowrap;overflow:hidden}}\
         section.plot p.src{{margin:0;padding:0 12px;height:22px;font-size:11px;color:#555;\
         white-space:nowrap;overflow:hidden}}\
         div.chart{{margin:8px 0 0 12px}}</style>\
         <script>{VEGA}</script><script>{VEGA_LITE}</script></head><body>\n\
         <header><h1>{t}</h1><p>{intro}</p></header>\n{body}\
         <script>{BOOT}</script></body></html>\n",
        t = esc(title),
        intro = esc(intro),
    )
}

/// A time series chart: `x` against `y` for every row of `values`, one line
/// (or point cloud, `mark` "point") per `series` value with `colors`.
pub fn series(
    values: Vec<Value>,
    mark: &str,
    (x, xtitle): (&str, &str),
    (y, ytitle): (&str, &str),
    color: (&str, &[&str], &[&str]),
) -> Value {
    let (field, domain, range) = color;
    let mark = if mark == "point" {
        serde_json::json!({"type": "point", "filled": true, "size": 12, "opacity": 1})
    } else {
        serde_json::json!({"type": mark, "strokeWidth": 1.5})
    };
    let mut color = serde_json::json!({"field": field, "type": "nominal", "title": null});
    if !domain.is_empty() {
        color["scale"] = serde_json::json!({"domain": domain, "range": range});
    }
    serde_json::json!({
        "width": PAGE_WIDTH - 200,
        "height": 200,
        "data": {"values": values},
        "mark": mark,
        "encoding": {
            "x": {"field": x, "type": "quantitative", "title": xtitle},
            "y": {"field": y, "type": "quantitative", "title": ytitle},
            "color": color,
        },
    })
}
