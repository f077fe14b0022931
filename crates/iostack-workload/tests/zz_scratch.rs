use iostack_workload::*;
#[test]
#[ignore]
fn scratch_dump() {
    let dir = std::env::var("SCRATCH_DIR").unwrap();
    let mut env = ParseEnv::host();
    env.vars.clear();
    env.vars.insert("SIZE".into(), "64m".into());
    env.vars.insert("BS".into(), "8k".into());
    env.cwd = std::path::PathBuf::from(&dir);
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().to_string()).filter(|n| n.ends_with(".fio")).collect();
    names.sort();
    for n in names {
        match parse_job_file(&n, &env) {
            Ok(jf) => println!("OK {n} :: {}", jf.showcmd().trim()),
            Err(e) => println!("ERR {n} :: {e}"),
        }
    }
}
