//! Output formats. Every output here is either a `TraceSink` over the one event
//! stream or a printer of statistics computed from it. This is the only crate that
//! knows output formats.

pub mod blkparse;
pub mod blktrace;
pub mod bonnie;
pub mod dd;
pub mod filefrag;
pub mod fio;
pub mod fs_mark;
pub mod ftrace;
pub mod iozone;
pub mod out;

pub use out::Out;
