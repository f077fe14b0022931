//! `iostack`'s command line as a library: the `iostack` binary is a thin `main`
//! over [`commands::dispatch`], and the Python binding (`iostack-py`) calls
//! [`api`] so that a run from Python goes through the same code path, and prints
//! the same figures, as `iostack run`.

pub mod api;
pub mod args;
pub mod catalog;
pub mod commands;
pub mod fio_logs;
pub mod fio_out;
pub mod html;
pub mod out;
pub mod plots;
pub mod report;
pub mod requests;
pub mod sinks;
pub mod sweep;
pub mod sweep_parquet;
mod tools;
