//! A sweep's table in Arrow and Parquet: one row per point, job and metric;
//! columns `point`, the grid's parameters (int64 when every value is an
//! integer, bool when every value is a boolean, else string), `job`, `metric`,
//! `value`. The schema is the one `iostack.sweep` writes from Python.

use crate::commands::Result;
use crate::out::CliError;
use crate::sweep::{Figure, Grid, Value};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use std::path::Path;
use std::sync::Arc;

/// A parameter column: the value of key `k` for every row's point.
fn column(vals: Vec<&Value>) -> ArrayRef {
    if vals.iter().all(|v| matches!(v, Value::Bool(_))) {
        let b: BooleanArray = vals
            .iter()
            .map(|v| Some(matches!(v, Value::Bool(true))))
            .collect();
        return Arc::new(b);
    }
    if vals.iter().all(|v| matches!(v, Value::Int(_))) {
        let i: Int64Array = vals
            .iter()
            .map(|v| match v {
                Value::Int(i) => Some(*i),
                _ => None,
            })
            .collect();
        return Arc::new(i);
    }
    let s: StringArray = vals
        .iter()
        .map(|v| match v {
            Value::Bool(true) => Some("True".to_string()),
            Value::Bool(false) => Some("False".to_string()),
            v => Some(v.arg()),
        })
        .collect();
    Arc::new(s)
}

/// The table of every point's figures (`figs[i]` for point `i`).
pub fn table(grid: &Grid, figs: &[Vec<Figure>]) -> Result<RecordBatch> {
    let pts = grid.points();
    let rows: Vec<(usize, &Figure)> = figs
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.iter().map(move |r| (i, r)))
        .collect();
    let mut cols: Vec<(String, ArrayRef)> = vec![(
        "point".into(),
        Arc::new(
            rows.iter()
                .map(|(i, _)| Some(*i as i64))
                .collect::<Int64Array>(),
        ),
    )];
    for (k, (name, _)) in grid.keys.iter().enumerate() {
        cols.push((
            name.clone(),
            column(rows.iter().map(|(i, _)| &pts[*i][k]).collect()),
        ));
    }
    let strings = |f: fn(&Figure) -> &str| -> ArrayRef {
        Arc::new(
            rows.iter()
                .map(|(_, r)| Some(f(r)))
                .collect::<StringArray>(),
        )
    };
    cols.push(("job".into(), strings(|r| &r.0)));
    cols.push(("metric".into(), strings(|r| &r.1)));
    cols.push((
        "value".into(),
        Arc::new(
            rows.iter()
                .map(|(_, r)| Some(r.2))
                .collect::<Float64Array>(),
        ),
    ));
    // Nullable columns, as pyarrow makes them.
    RecordBatch::try_from_iter_with_nullable(cols.into_iter().map(|(n, a)| (n, a, true)))
        .map_err(|e| format!("sweep table: {e}").into())
}

/// Write `batch` as a Parquet file (written beside and renamed, so an
/// interrupted write leaves no half file).
pub fn write(batch: &RecordBatch, path: &Path) -> Result<()> {
    let tmp = path.with_extension("parquet.part");
    let f = std::fs::File::create(&tmp).map_err(|e| CliError::io(tmp.display(), e))?;
    let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), None)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    w.write(batch)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    w.close().map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| CliError::io(path.display(), e))
}
