//! Where a sink's output goes while the run goes: kept in memory (tests, and the
//! traces `iostack reproduce` prints beside its table), or written through a
//! `BufWriter` to a file or stdout as events arrive, so that a sink holds only
//! its buffer and never the trace.

use std::io::{self, BufWriter, Write};

/// A byte destination. Write errors cannot stop the event stream, so the first one
/// is kept and returned by [`Out::finish`]; later writes are dropped.
pub enum Out {
    Memory(Vec<u8>),
    Stream {
        w: BufWriter<Box<dyn Write + Send>>,
        err: Option<io::Error>,
    },
}

impl Default for Out {
    fn default() -> Self {
        Out::Memory(Vec::new())
    }
}

impl Out {
    /// Stream through a buffer to `w`.
    pub fn stream(w: Box<dyn Write + Send>) -> Out {
        Out::Stream {
            w: BufWriter::with_capacity(64 << 10, w),
            err: None,
        }
    }

    pub fn write(&mut self, bytes: &[u8]) {
        match self {
            Out::Memory(v) => v.extend_from_slice(bytes),
            Out::Stream { w, err } => {
                if err.is_none() {
                    if let Err(e) = w.write_all(bytes) {
                        *err = Some(e);
                    }
                }
            }
        }
    }

    /// The bytes kept in memory (empty when streaming).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Out::Memory(v) => v,
            Out::Stream { .. } => &[],
        }
    }

    pub fn is_streaming(&self) -> bool {
        matches!(self, Out::Stream { .. })
    }

    /// Flush a stream; the first write error, if any.
    pub fn finish(&mut self) -> io::Result<()> {
        match self {
            Out::Memory(_) => Ok(()),
            Out::Stream { w, err } => match err.take() {
                Some(e) => Err(e),
                None => w.flush(),
            },
        }
    }
}
