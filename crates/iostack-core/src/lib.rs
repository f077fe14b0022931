//! Shared storage vocabulary, like `include/linux/blk_types.h` and
//! `include/linux/blktrace_api.h`: sectors, operation flags, device numbers, the
//! blktrace event type every layer emits, the sink trait every output implements,
//! kernel profiles and the tunable table machinery.

pub mod profile;
pub mod slab;
pub mod trace;
pub mod tunable;
pub mod types;

pub use profile::Profile;
pub use slab::Slab;
pub use trace::{Action, Pdu, TraceEvent, TraceMask, TraceRecord, TraceSink, Tracer};
pub use tunable::{TunableDef, TunableError, Tunables, Unit};
pub use types::{BioOwner, DevT, EndIo, ReqFlags, Sector, TaskId, SECTOR_SHIFT, SECTOR_SIZE};
