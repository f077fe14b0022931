//! Classic Bonnie's report (Tim Bray's Bonnie 1.x `report()`): three header
//! lines, then `"%-8.8s %4d "` (machine label, size in MB), `"%5d %4.1f "` for
//! putc, block write, rewrite, getc and block read (K/sec cast to int, %CPU),
//! and `"%5.1f %4.1f\n"` for the seeks. With the seed-004 patch's `-fast` the
//! seek test is skipped and Bonnie sets its elapsed time to 1 s and CPU to 0,
//! so the column prints 4000 seeks per second at 0.0 %CPU.

/// `Seeks` of Bonnie 1.x.
pub const BONNIE_SEEKS: u32 = 4000;

/// One Bonnie report line's numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct BonnieLine {
    pub machine: String,
    pub size_mb: u64,
    /// (K/sec, %CPU) of putc, block write, rewrite, getc, block read.
    pub cols: [(f64, f64); 5],
    /// (seeks per second, %CPU).
    pub seeks: (f64, f64),
}

/// The table as Bonnie prints it.
pub fn render(l: &BonnieLine) -> String {
    let mut s = String::new();
    s.push_str("              -------Sequential Output-------- ---Sequential Input-- --Random--\n");
    s.push_str("              -Per Char- --Block--- -Rewrite-- -Per Char- --Block--- --Seeks---\n");
    s.push_str("Machine    MB K/sec %CPU K/sec %CPU K/sec %CPU K/sec %CPU K/sec %CPU  /sec %CPU\n");
    let label: String = l.machine.chars().take(8).collect();
    s.push_str(&format!("{label:<8} {:>4} ", l.size_mb));
    for (kb, cpu) in l.cols {
        s.push_str(&format!("{:>5} {:>4.1} ", kb as i64, cpu));
    }
    s.push_str(&format!("{:>5.1} {:>4.1}\n", l.seeks.0, l.seeks.1));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample line of formats-and-tools.md §9.1 (the 1998 shmfs report),
    /// rebuilt from its numbers.
    #[test]
    fn the_classic_layout() {
        let l = BonnieLine {
            machine: String::new(),
            size_mb: 100,
            cols: [
                (2611.9, 90.7),
                (3924.0, 86.2),
                (3201.5, 13.3),
                (4763.0, 61.4),
                (6736.2, 24.4),
            ],
            seeks: (143.7, 4.0),
        };
        let want = "              -------Sequential Output-------- ---Sequential Input-- --Random--\n\
                    \x20             -Per Char- --Block--- -Rewrite-- -Per Char- --Block--- --Seeks---\n\
                    Machine    MB K/sec %CPU K/sec %CPU K/sec %CPU K/sec %CPU K/sec %CPU  /sec %CPU\n\
                    \x20         100  2611 90.7  3924 86.2  3201 13.3  4763 61.4  6736 24.4 143.7  4.0\n";
        assert_eq!(render(&l), want);
        let long = BonnieLine {
            machine: "a-long-label".into(),
            ..l
        };
        assert!(render(&long)
            .lines()
            .nth(3)
            .unwrap()
            .starts_with("a-long-l  100 "));
    }
}
