//! One row per dispatched request (blktrace's `D` events, as `blkparse` prints
//! them), built from the event stream as the run goes and written as Arrow record
//! batches, into an IPC stream (what the Python binding hands to pyarrow) or a
//! Parquet file (`iostack run --requests FILE.parquet`, a row group per batch):
//! memory holds the requests in flight and one batch of columns, never the
//! whole table.

use arrow_array::builder::{StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema};
use iostack_core::{Action, TraceEvent, TraceRecord, TraceSink};
use iostack_des::Instant;
use iostack_report::blktrace::{action_word, fill_rwbs};
use parquet::arrow::ArrowWriter;
use parquet::basic::Encoding;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::sync::Arc;

/// Rows per record batch: each column of a batch is at most 64 KiB, under
/// glibc's 128 KiB mmap threshold, so that batches freed one after another do
/// not raise the threshold and leave a heap that grows with the run.
pub const BATCH_ROWS: usize = 8_192;

/// Rows per Parquet row group: the footer keeps each group's metadata until the
/// file is closed, so groups are made of several batches (about 2 KB of
/// metadata per column per group: a million rows keep about 450 KB).
pub const GROUP_ROWS: usize = 65_536;

/// (device, start sector): what blktrace's events of one request share.
type Key = (u32, u32, u64);

/// One dispatched request; `open` while its completion may still come.
struct Row {
    q_ns: Option<u64>,
    i_ns: Option<u64>,
    d_ns: u64,
    c_ns: Option<u64>,
    key: Key,
    bytes: u32,
    rwbs: String,
    pid: u32,
    cpu: u32,
    open: bool,
}

/// The columns of the batch being filled.
struct Columns {
    q_ns: UInt64Builder,
    i_ns: UInt64Builder,
    d_ns: UInt64Builder,
    c_ns: UInt64Builder,
    major: UInt32Builder,
    minor: UInt32Builder,
    sector: UInt64Builder,
    bytes: UInt32Builder,
    rwbs: StringBuilder,
    pid: UInt32Builder,
    comm: StringBuilder,
    cpu: UInt32Builder,
    queue_ns: UInt64Builder,
    device_ns: UInt64Builder,
    len: usize,
}

impl Columns {
    /// Builders sized for a whole batch, so that each batch allocates its
    /// buffers once, at the sizes the batch before freed (builders grown by
    /// doubling leave the allocator a trail of freed sizes that it keeps as the
    /// run goes: 71 MB after a million rows instead of 28).
    fn with_capacity(rows: usize) -> Self {
        let u64b = || UInt64Builder::with_capacity(rows);
        let u32b = || UInt32Builder::with_capacity(rows);
        Columns {
            q_ns: u64b(),
            i_ns: u64b(),
            d_ns: u64b(),
            c_ns: u64b(),
            major: u32b(),
            minor: u32b(),
            sector: u64b(),
            bytes: u32b(),
            // blkparse's RWBS is at most four letters; a comm at most 16 bytes.
            rwbs: StringBuilder::with_capacity(rows, rows * 4),
            pid: u32b(),
            comm: StringBuilder::with_capacity(rows, rows * 16),
            cpu: u32b(),
            queue_ns: u64b(),
            device_ns: u64b(),
            len: 0,
        }
    }

    fn push(&mut self, r: &Row, comm: &str) {
        self.q_ns.append_option(r.q_ns);
        self.i_ns.append_option(r.i_ns);
        self.d_ns.append_value(r.d_ns);
        self.c_ns.append_option(r.c_ns);
        self.major.append_value(r.key.0);
        self.minor.append_value(r.key.1);
        self.sector.append_value(r.key.2);
        self.bytes.append_value(r.bytes);
        self.rwbs.append_value(&r.rwbs);
        self.pid.append_value(r.pid);
        self.comm.append_value(comm);
        self.cpu.append_value(r.cpu);
        self.queue_ns
            .append_option(r.i_ns.and_then(|i| r.d_ns.checked_sub(i)));
        self.device_ns
            .append_option(r.c_ns.and_then(|c| c.checked_sub(r.d_ns)));
        self.len += 1;
    }

    /// The batch, leaving fresh builders of the same capacity in place.
    fn finish(&mut self, schema: &Arc<Schema>, rows: usize) -> Result<RecordBatch, String> {
        let mut full = std::mem::replace(self, Columns::with_capacity(rows));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(full.q_ns.finish()),
            Arc::new(full.i_ns.finish()),
            Arc::new(full.d_ns.finish()),
            Arc::new(full.c_ns.finish()),
            Arc::new(full.major.finish()),
            Arc::new(full.minor.finish()),
            Arc::new(full.sector.finish()),
            Arc::new(full.bytes.finish()),
            Arc::new(full.rwbs.finish()),
            Arc::new(full.pid.finish()),
            Arc::new(full.comm.finish()),
            Arc::new(full.cpu.finish()),
            Arc::new(full.queue_ns.finish()),
            Arc::new(full.device_ns.finish()),
        ];
        RecordBatch::try_new(schema.clone(), cols).map_err(|e| format!("arrow: {e}"))
    }
}

/// The table's schema: times in ns since the start of the run (`q_ns` the
/// request's first bio queued, `i_ns` inserted into the elevator, `d_ns`
/// dispatched to the driver, `c_ns` completed; null when the trace has no such
/// event for the request: a request left in flight by `until`, or requeued);
/// then the derived `queue_ns` (D - I, in the elevator) and `device_ns` (C - D,
/// at the device: btt's D2C), null when a time is.
pub fn schema() -> Arc<Schema> {
    let u64c = |n: &str, null: bool| Field::new(n, DataType::UInt64, null);
    let u32c = |n: &str| Field::new(n, DataType::UInt32, false);
    Arc::new(Schema::new(vec![
        u64c("q_ns", true),
        u64c("i_ns", true),
        u64c("d_ns", false),
        u64c("c_ns", true),
        u32c("major"),
        u32c("minor"),
        u64c("sector", false),
        u32c("bytes"),
        Field::new("rwbs", DataType::Utf8, false),
        u32c("pid"),
        Field::new("comm", DataType::Utf8, false),
        u32c("cpu"),
        u64c("queue_ns", true),
        u64c("device_ns", true),
    ]))
}

/// The `TraceSink` that makes the request table.
pub struct RequestSink {
    comms: BTreeMap<u32, String>,
    queued: BTreeMap<Key, u64>,
    inserted: BTreeMap<Key, u64>,
    /// Dispatched requests by key: the absolute index of their row.
    inflight: BTreeMap<Key, usize>,
    /// Rows in dispatch order from absolute index `base`.
    pending: VecDeque<Row>,
    base: usize,
    cols: Columns,
    schema: Arc<Schema>,
    writer: Option<Output>,
    batch_rows: usize,
    error: Option<String>,
    rows: u64,
}

/// Where the batches go.
enum Output {
    Ipc(StreamWriter<Vec<u8>>),
    Parquet(ArrowWriter<File>),
}

impl Output {
    fn write(&mut self, b: &RecordBatch) -> Result<(), String> {
        match self {
            Output::Ipc(w) => w.write(b).map_err(|e| format!("arrow: {e}")),
            // Encoded into the open row group, written out when it is full.
            Output::Parquet(w) => w.write(b).map_err(|e| format!("parquet: {e}")),
        }
    }
}

impl RequestSink {
    fn with_output(writer: Output, batch_rows: usize) -> Self {
        RequestSink {
            comms: BTreeMap::new(),
            queued: BTreeMap::new(),
            inserted: BTreeMap::new(),
            inflight: BTreeMap::new(),
            pending: VecDeque::new(),
            base: 0,
            cols: Columns::with_capacity(batch_rows),
            writer: Some(writer),
            schema: schema(),
            batch_rows,
            error: None,
            rows: 0,
        }
    }

    /// A sink writing an Arrow IPC stream in memory ([`Self::into_ipc`]).
    pub fn new() -> Result<Self, String> {
        let w = StreamWriter::try_new(Vec::new(), &schema()).map_err(|e| format!("arrow: {e}"))?;
        Ok(Self::with_output(Output::Ipc(w), BATCH_ROWS))
    }

    /// A sink writing the Parquet file `file` as the run goes, one row group
    /// of at most `group_rows` rows at a time ([`Self::finish_parquet`]), each
    /// encoded batch by batch. Pages hold at most a batch of rows; only the two
    /// string columns (a few distinct values) are dictionary-encoded, so no
    /// dictionary of times grows to its 1 MB limit before falling back; the
    /// integer columns are delta-encoded.
    pub fn parquet(file: File, group_rows: usize) -> Result<Self, String> {
        let batch_rows = group_rows.min(BATCH_ROWS);
        let props = WriterProperties::builder()
            .set_max_row_group_size(group_rows)
            .set_data_page_row_count_limit(batch_rows)
            .set_dictionary_enabled(false)
            .set_statistics_enabled(EnabledStatistics::Chunk);
        let props = schema()
            .fields()
            .iter()
            .fold(props, |p, f| {
                let col = ColumnPath::from(f.name().as_str());
                if f.data_type() == &DataType::Utf8 {
                    p.set_column_dictionary_enabled(col, true)
                } else {
                    // Times, sectors and sizes: differences are small.
                    p.set_column_encoding(col, Encoding::DELTA_BINARY_PACKED)
                }
            })
            .build();
        let w = ArrowWriter::try_new(file, schema(), Some(props))
            .map_err(|e| format!("parquet: {e}"))?;
        Ok(Self::with_output(Output::Parquet(w), batch_rows))
    }

    /// The Arrow IPC stream of the table, and its row count.
    pub fn into_ipc(mut self) -> Result<(Vec<u8>, u64), String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some(Output::Ipc(mut w)) = self.writer.take() else {
            return Err("the request table is not an IPC stream".into());
        };
        w.finish().map_err(|e| format!("arrow: {e}"))?;
        let buf = w.into_inner().map_err(|e| format!("arrow: {e}"))?;
        Ok((buf, self.rows))
    }

    /// Close the Parquet file (its footer); the row count.
    pub fn finish_parquet(mut self) -> Result<u64, String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some(Output::Parquet(w)) = self.writer.take() else {
            return Err("the request table is not a Parquet file".into());
        };
        w.close().map_err(|e| format!("parquet: {e}"))?;
        Ok(self.rows)
    }

    fn block(&mut self, rec: &TraceRecord) {
        let key = (rec.dev.major, rec.dev.minor, rec.sector);
        let t = rec.time.as_ns();
        match rec.action {
            Action::Queue => {
                self.queued.entry(key).or_insert(t);
            }
            Action::BackMerge | Action::FrontMerge => {
                self.queued.remove(&key);
            }
            Action::Insert => {
                self.inserted.insert(key, t);
            }
            Action::Issue => self.issue(rec, key, t),
            Action::Complete => self.close(key, Some(t)),
            Action::Requeue => self.close(key, None),
            _ => {}
        }
    }

    fn issue(&mut self, rec: &TraceRecord, key: Key, t: u64) {
        // A request dispatched again after a requeue: the first row stays
        // without completion.
        self.close(key, None);
        let row = Row {
            q_ns: self.queued.remove(&key),
            i_ns: self.inserted.remove(&key),
            d_ns: t,
            c_ns: None,
            key,
            bytes: rec.bytes,
            rwbs: fill_rwbs(action_word(rec), rec.bytes),
            pid: rec.pid,
            cpu: rec.cpu,
            open: true,
        };
        self.inflight.insert(key, self.base + self.pending.len());
        self.pending.push_back(row);
    }

    fn close(&mut self, key: Key, c_ns: Option<u64>) {
        if let Some(i) = self.inflight.remove(&key) {
            let row = &mut self.pending[i - self.base];
            row.c_ns = c_ns;
            row.open = false;
            self.drain(false);
        }
    }

    /// Move finished rows at the front (all rows when `all`) into the batch.
    fn drain(&mut self, all: bool) {
        while self.pending.front().is_some_and(|r| all || !r.open) {
            let r = self.pending.pop_front().expect("front");
            self.base += 1;
            let comm = self.comms.get(&r.pid).map_or("", String::as_str);
            self.cols.push(&r, comm);
            self.rows += 1;
            if self.cols.len == self.batch_rows {
                self.write_batch();
            }
        }
    }

    fn write_batch(&mut self) {
        let res = self
            .cols
            .finish(&self.schema, self.batch_rows)
            .and_then(|b| match self.writer.as_mut() {
                Some(w) => w.write(&b),
                None => Err("request table written after its end".into()),
            });
        if let Err(e) = res {
            self.error.get_or_insert(e);
        }
    }
}

impl TraceSink for RequestSink {
    fn process(&mut self, pid: u32, comm: &str) {
        self.comms.insert(pid, comm.to_string());
    }

    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(rec) = ev {
            self.block(rec);
        }
    }

    fn finish(&mut self, _end: Instant) {
        self.inflight.clear();
        self.drain(true);
        if self.cols.len > 0 {
            self.write_batch();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{run_fio, RunInputs};
    use crate::commands::{take, JobSource};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// The Parquet table is written a row group at a time during the run: no
    /// row group holds more than a batch, and together they hold every request.
    #[test]
    fn parquet_is_written_in_row_groups_of_a_batch() {
        let dir = std::env::temp_dir().join(format!("iostack-req-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.parquet");
        let sink = RequestSink::parquet(File::create(&path).unwrap(), 16).unwrap();
        let inp = RunInputs {
            jobs: vec![JobSource::Text {
                name: "j".into(),
                text: "[j]\nrw=randread\ndirect=1\nsize=4m\nio_size=200k\nbs=4k\n\
                       filename=/dev/nullb0\n"
                    .into(),
            }],
            machine: Some("null".into()),
            ..RunInputs::default()
        };
        let mut run = run_fio(&inp, vec![Box::new(sink)]).unwrap();
        let rows = take::<RequestSink>(&mut run.sinks)
            .unwrap()
            .finish_parquet()
            .unwrap();
        assert_eq!(rows, 50);
        let r = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = r
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(groups, vec![16, 16, 16, 2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
