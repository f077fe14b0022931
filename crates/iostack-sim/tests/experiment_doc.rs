//! docs/experiments.md against the experiment parser: every key the parser
//! accepts is documented under its table and every documented key is
//! accepted; every measurement is documented; the page's example parses.

use iostack_sim::experiment;
use std::collections::BTreeSet;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/experiments.md");
    std::fs::read_to_string(path).expect("docs/experiments.md")
}

/// The first column of each `## HEADING` section's table: heading -> keys.
fn documented(doc: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), BTreeSet::new()));
        } else if let (Some(rest), Some(last)) = (line.strip_prefix("| `"), out.last_mut()) {
            let key = rest.split('`').next().unwrap_or_default();
            last.1.insert(key.to_string());
        }
    }
    out
}

fn section<'a>(docs: &'a [(String, BTreeSet<String>)], heading: &str) -> &'a BTreeSet<String> {
    &docs
        .iter()
        .find(|(h, _)| h == heading)
        .unwrap_or_else(|| panic!("docs/experiments.md has no section '## {heading}'"))
        .1
}

#[test]
fn every_accepted_key_is_documented_and_no_other() {
    let text = doc();
    let docs = documented(&text);
    for (table, fields) in experiment::accepted_keys() {
        let heading = if table == "top" { "Top level" } else { table };
        let want: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
        let got = section(&docs, heading);
        let missing: Vec<_> = want.difference(got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "docs/experiments.md, {heading}: the parser accepts {missing:?} not documented; \
             documented {extra:?} that the parser refuses"
        );
        assert!(want.len() >= 3, "{table}: {want:?}");
    }
}

#[test]
fn every_measurement_is_documented() {
    let docs = documented(&doc());
    let want: BTreeSet<String> = experiment::METRICS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    assert_eq!(section(&docs, "Measurements"), &want);
}

#[test]
fn the_example_parses_and_an_unknown_key_is_refused() {
    let text = doc();
    let example = text
        .split("```toml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a toml example");
    let e = experiment::parse("example.toml", example).expect("the documented example parses");
    assert_eq!(e.variants.len(), 2);
    // The parser's own refusal lists the keys the probe found.
    let err = experiment::parse("x.toml", &format!("bogus = 1\n{example}")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("x.toml:1"), "{msg}");
    for key in experiment::accepted_keys()[0].1 {
        assert!(msg.contains(&format!("`{key}`")), "{key} not in: {msg}");
    }
}
