"""`python -m iostack sweep GRID.toml --out DIR [--ray ADDRESS] [--duckdb FILE]`:
a grid file run as `iostack sweep` runs it, on Ray when asked (the command
line's `iostack sweep --ray ADDRESS` comes here)."""

import argparse
import sys

from ._sweep import sweep_file


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m iostack")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep", help="run a grid file (docs/sweep.md)")
    s.add_argument("grid")
    s.add_argument("--out", required=True)
    s.add_argument("--ray", metavar="ADDRESS", help="run the points on this Ray cluster")
    s.add_argument("--workers", type=int)
    s.add_argument("--duckdb", metavar="FILE", help="also write table `jobs` into FILE")
    a = ap.parse_args(argv)
    t = sweep_file(a.grid, a.out, backend="ray" if a.ray else "local", workers=a.workers,
                   address=a.ray, duckdb=a.duckdb, progress=sys.stderr.isatty())
    print(f"iostack: sweep: {t.num_rows} rows in {a.out}/jobs.parquet", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
