//! `iostack reproduce --html FILE`: one self-contained page (Vega-Lite, see
//! [`crate::plots`]) with one chart per experiment: a panel per metric, a
//! bar per variant for the simulated value, the published value marked on it
//! as a tick.

use crate::plots::{self, Chart};
use iostack_sim::experiment::{Experiment, Row};

/// Colours: the simulated bars and the published ticks.
pub const SIMULATED: &str = "#1f77b4";
pub const PUBLISHED: &str = "#d62728";

/// Panels per row.
const PER_ROW: u32 = 4;
const PANEL_W: u32 = 220;
const PANEL_H: u32 = 150;
/// A panel's height with its header and variant labels.
const PANEL_ROW: u32 = PANEL_H + 120;

/// The metrics of `rows` in first-seen order.
fn metrics(rows: &[Row]) -> Vec<&str> {
    let mut m: Vec<&str> = Vec::new();
    for r in rows {
        if !m.contains(&r.metric.as_str()) {
            m.push(&r.metric);
        }
    }
    m
}

/// One experiment's chart: facets by metric (each its own y scale), bars of
/// simulated values and ticks at the published ones.
pub fn chart(e: &Experiment, rows: &[Row]) -> Chart {
    let values: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "variant": r.variant,
                "metric": format!("{} ({})", r.metric, r.unit),
                "simulated": r.simulated,
                "published": r.published,
            })
        })
        .collect();
    let x = serde_json::json!({"field": "variant", "type": "nominal", "sort": null, "title": null,
                               "axis": {"labelAngle": -30, "labelLimit": 90}});
    let spec = serde_json::json!({
        "data": {"values": values},
        "facet": {"field": "metric", "type": "nominal", "sort": null, "title": null},
        "columns": PER_ROW,
        "spec": {
            "width": PANEL_W,
            "height": PANEL_H,
            "layer": [
                {"mark": {"type": "bar", "color": SIMULATED},
                 "encoding": {"x": x, "y": {"field": "simulated", "type": "quantitative", "title": null}}},
                {"transform": [{"filter": "datum.published != null"}],
                 "mark": {"type": "tick", "color": PUBLISHED, "thickness": 3},
                 "encoding": {"x": x, "y": {"field": "published", "type": "quantitative"}}},
            ],
        },
        "resolve": {"scale": {"y": "independent"}},
    });
    let nrows = (metrics(rows).len() as u32).div_ceil(PER_ROW).max(1);
    Chart {
        id: e.name.clone(),
        title: format!("{}: {}", e.name, e.title),
        note: e.source.clone(),
        spec,
        height: nrows * PANEL_ROW,
    }
}

/// The page for the experiments run and their rows.
pub fn report(exps: &[(&Experiment, Vec<Row>)]) -> String {
    let charts: Vec<Chart> = exps.iter().map(|(e, rows)| chart(e, rows)).collect();
    plots::page(
        "iostack reproduce: published vs simulated",
        "One chart per experiment, one panel per metric: bars are the simulated values, \
         red ticks the published ones.",
        &charts,
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
    fn a_value_per_row_and_a_panel_row_per_four_metrics() {
        let rows = vec![
            row("a</script>", "bw", Some(10.0), 12.0),
            row("c", "bw", None, 0.0),
            row("a</script>", "seeks", Some(3.0), 4.5),
        ];
        assert_eq!(metrics(&rows), vec!["bw", "seeks"]);
        let e: Experiment = iostack_sim::experiment::parse(
            "e.toml",
            include_str!("../../../experiments/seed-000.toml"),
        )
        .unwrap();
        let c = chart(&e, &rows);
        assert_eq!(c.height, PANEL_ROW);
        let vals = c.spec["data"]["values"].as_array().unwrap();
        assert_eq!(vals.len(), 3);
        assert_eq!(vals[1]["published"], serde_json::Value::Null);
        assert_eq!(vals[0]["metric"], "bw (MB/s)");
        // A variant name cannot close the script element that holds the spec.
        let page = plots::page("t", "i", &[c]);
        assert_eq!(
            page.matches("a<\\/script>").count(),
            2,
            "escaped in both rows"
        );
    }
}
