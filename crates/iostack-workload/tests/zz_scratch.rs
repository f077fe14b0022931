use iostack_workload::*;
#[test]
#[ignore]
fn scratch_dump() {
    let dir = std::env::var("SCRATCH_DIR").unwrap();
    let sub = std::env::var("SCRATCH_SUB").unwrap_or_default();
    let mut env = ParseEnv::host();
    env.vars.clear();
    env.vars.insert("SIZE".into(), "64m".into());
    env.vars.insert("BS".into(), "8k".into());
    env.vars.insert("DESC".into(), "from env".into());
    env.cwd = std::path::PathBuf::from(&dir);
    let mut names: Vec<_> = std::fs::read_dir(std::path::Path::new(&dir).join(&sub)).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().to_string()).filter(|n| n.ends_with(".fio")).collect();
    names.sort();
    for n in names {
        let p = if sub.is_empty() { n.clone() } else { format!("{sub}/{n}") };
        match parse_job_file(&p, &env) {
            Ok(jf) => println!("OK {p} :: {}", jf.showcmd().trim()),
            Err(e) => println!("ERR {p} :: {e}"),
        }
    }
}
