//! `fio --showcmd` rendering.

use crate::jobfile::JobFile;

/// Render the parsed job file as fio 3.33's `fio --showcmd JOBFILE` prints it.
///
/// fio prints `fio ` at the first section, then per section: `--name=NAME ` for a
/// job (nothing for a global section), followed by the options fio applied, in the
/// order it applied them (priority-sorted, engine options last), as `--name=value `
/// or `--name ` for a bare option; `description` values are double-quoted. A global
/// section prints all global options seen so far (fio keeps one list for all of
/// them). The line ends with a newline. Values are printed after `${VAR}` and
/// `$pagesize` substitution, and option names in their canonical form (`bs` for
/// `blocksize`).
pub fn showcmd(jf: &JobFile) -> String {
    let mut out = String::new();
    for (i, sec) in jf.sections.iter().enumerate() {
        if i == 0 {
            out.push_str("fio ");
        }
        if !sec.global {
            out.push_str("--name=");
            out.push_str(&sec.name);
            out.push(' ');
        }
        for (name, value) in &sec.cmdline {
            out.push_str("--");
            out.push_str(name);
            match value {
                None => out.push(' '),
                Some(v) => {
                    let q = if name == "description" { "\"" } else { "" };
                    out.push('=');
                    out.push_str(q);
                    out.push_str(v);
                    out.push_str(q);
                    out.push(' ');
                }
            }
        }
    }
    out.push('\n');
    out
}
