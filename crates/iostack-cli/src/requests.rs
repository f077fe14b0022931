//! One row per dispatched request (blktrace's `D` events, as `blkparse` prints
//! them), built from the event stream as the run goes and written as Arrow record
//! batches into an IPC stream: memory holds the requests in flight and one batch
//! of columns, never a list of Python objects.

use arrow_array::builder::{StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, DataType, Field, Schema};
use iostack_core::{Action, TraceEvent, TraceRecord, TraceSink};
use iostack_des::Instant;
use iostack_report::blktrace::{action_word, fill_rwbs};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Rows per record batch.
const BATCH_ROWS: usize = 65_536;

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
    len: usize,
}

impl Columns {
    fn new() -> Self {
        Columns {
            q_ns: UInt64Builder::new(),
            i_ns: UInt64Builder::new(),
            d_ns: UInt64Builder::new(),
            c_ns: UInt64Builder::new(),
            major: UInt32Builder::new(),
            minor: UInt32Builder::new(),
            sector: UInt64Builder::new(),
            bytes: UInt32Builder::new(),
            rwbs: StringBuilder::new(),
            pid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            cpu: UInt32Builder::new(),
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
        self.len += 1;
    }

    fn finish(&mut self, schema: &Arc<Schema>) -> Result<RecordBatch, ArrowError> {
        self.len = 0;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.q_ns.finish()),
            Arc::new(self.i_ns.finish()),
            Arc::new(self.d_ns.finish()),
            Arc::new(self.c_ns.finish()),
            Arc::new(self.major.finish()),
            Arc::new(self.minor.finish()),
            Arc::new(self.sector.finish()),
            Arc::new(self.bytes.finish()),
            Arc::new(self.rwbs.finish()),
            Arc::new(self.pid.finish()),
            Arc::new(self.comm.finish()),
            Arc::new(self.cpu.finish()),
        ];
        RecordBatch::try_new(schema.clone(), cols)
    }
}

/// The table's schema: times in ns since the start of the run (`q_ns` the
/// request's first bio queued, `i_ns` inserted into the elevator, `d_ns`
/// dispatched to the driver, `c_ns` completed; null when the trace has no such
/// event for the request: a request left in flight by `until`, or requeued).
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
    writer: Option<StreamWriter<Vec<u8>>>,
    error: Option<ArrowError>,
    rows: u64,
}

impl RequestSink {
    pub fn new() -> Result<Self, ArrowError> {
        let schema = schema();
        Ok(RequestSink {
            comms: BTreeMap::new(),
            queued: BTreeMap::new(),
            inserted: BTreeMap::new(),
            inflight: BTreeMap::new(),
            pending: VecDeque::new(),
            base: 0,
            cols: Columns::new(),
            writer: Some(StreamWriter::try_new(Vec::new(), &schema)?),
            schema,
            error: None,
            rows: 0,
        })
    }

    /// The Arrow IPC stream of the table, and its row count.
    pub fn into_ipc(mut self) -> Result<(Vec<u8>, u64), ArrowError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut w = self.writer.take().expect("stream taken once");
        w.finish()?;
        Ok((w.into_inner()?, self.rows))
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
            if self.cols.len == BATCH_ROWS {
                self.write_batch();
            }
        }
    }

    fn write_batch(&mut self) {
        let res = self.cols.finish(&self.schema).and_then(|b| {
            self.writer
                .as_mut()
                .expect("writer until the end")
                .write(&b)
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
