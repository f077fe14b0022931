//! fio's host-placement options, accepted where they change nothing the
//! simulator models and refused otherwise. The simulated machine has one
//! NUMA node (node 0) holding all its CPUs and memory, and the simulator
//! places each process on a CPU itself; so `numa_cpu_nodes` naming node 0
//! only (fio's `numa_run_on_node_mask`: every CPU), `numa_mem_policy` on
//! node 0 only (every policy places memory on node 0, and memory placement
//! is not modelled) and `cpus_allowed` naming every CPU (fio's
//! `fio_setaffinity` with the full mask) change nothing. A node the machine
//! does not have fails in libnuma's `numa_parse_nodestring` as fio's job
//! would; a CPU past the machine's fails `set_cpus_allowed` ("CPU too
//! large"); a strict subset of the CPUs is not modelled yet.

/// A libnuma node string or fio CPU list: `all`, or a comma list of `N` and
/// `N-M`. The numbers named, or None if it is not one (with `allow_all`,
/// `all` is every one of `0..all`).
fn id_list(s: &str, all: u32, allow_all: bool) -> Option<Vec<u32>> {
    if allow_all && s == "all" {
        return Some((0..all).collect());
    }
    let mut out = Vec::new();
    for item in s.split(',') {
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let n = item.trim().parse::<u32>().ok()?;
                (n, n)
            }
        };
        if lo > hi || hi - lo > 4096 {
            return None;
        }
        out.extend(lo..=hi);
    }
    Some(out)
}

/// `numa_cpu_nodes`: Err with the reason unless it names node 0 only.
pub(crate) fn numa_cpu_nodes(s: &str) -> Result<(), String> {
    let nodes = id_list(s, 1, true).ok_or_else(|| {
        format!("'{s}' is not a node list iostack reads (all, N, N-M, lists of them)")
    })?;
    match nodes.iter().find(|&&n| n > 0) {
        Some(n) => Err(format!(
            "node {n} does not exist: the simulated machine has one NUMA node (0), and \
             libnuma's numa_parse_nodestring fails as fio's job would"
        )),
        None => Ok(()),
    }
}

/// `numa_mem_policy` (fio's `str_numa_mpol_cb`: `default`, `local`,
/// `prefer:N`, `bind:LIST`, `interleave:LIST`): Err unless every node named
/// is 0.
pub(crate) fn numa_mem_policy(s: &str) -> Result<(), String> {
    let (mode, list) = s.split_once(':').unwrap_or((s, ""));
    match (mode, list.is_empty()) {
        ("default" | "local", true) => return Ok(()),
        ("prefer" | "bind" | "interleave", false) => {}
        _ => return Err(format!("'{s}' is not a memory policy iostack reads")),
    }
    numa_cpu_nodes(list)
}

/// `cpus_allowed` on a machine of `cpus` CPUs: Err unless it names every
/// CPU (fio's list syntax: `N`, `N-M`, comma lists).
pub(crate) fn cpus_allowed(s: &str, cpus: u32) -> Result<(), String> {
    let list = id_list(s, cpus, false)
        .ok_or_else(|| format!("'{s}' is not a CPU list iostack reads (N, N-M, lists of them)"))?;
    if let Some(c) = list.iter().find(|&&c| c >= cpus) {
        return Err(format!(
            "CPU {c} too large: the simulated machine has {cpus} CPUs (fio's set_cpus_allowed \
             fails the same way)"
        ));
    }
    if (0..cpus).all(|c| list.contains(&c)) {
        Ok(())
    } else {
        Err(format!(
            "a subset of the machine's {cpus} CPUs is not modelled yet (the simulator places \
             processes on CPUs itself)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_zero_and_every_cpu_change_nothing_others_are_refused() {
        assert!(numa_cpu_nodes("0").is_ok());
        assert!(numa_cpu_nodes("all").is_ok());
        assert!(numa_cpu_nodes("0-1").unwrap_err().contains("node 1"));
        assert!(numa_mem_policy("bind:0").is_ok());
        assert!(numa_mem_policy("local").is_ok());
        assert!(numa_mem_policy("interleave:0-1").is_err());
        assert!(numa_mem_policy("bind").is_err());
        assert!(cpus_allowed("0-1", 2).is_ok());
        assert!(cpus_allowed("1,0", 2).is_ok());
        assert!(cpus_allowed("0", 2).unwrap_err().contains("subset"));
        assert!(cpus_allowed("0-3", 2).unwrap_err().contains("too large"));
        assert!(cpus_allowed("x", 2).is_err());
    }
}
