//! fio reports from a run's results.

use iostack_des::Seed;
use iostack_sim::stats::RunResult;

pub fn render(_r: &RunResult, _format: &str, _seed: Seed, _hash: u64) -> Result<String, String> {
    Err("fio report rendering is being wired".into())
}
