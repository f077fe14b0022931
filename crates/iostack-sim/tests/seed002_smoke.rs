use iostack_core::{Profile, TraceEvent, TraceSink, Tunables};
use iostack_des::{Duration, Seed};
use iostack_sim::machine;
use iostack_sim::workload::*;
use iostack_sim::*;
use std::cell::RefCell;
use std::rc::Rc;

struct Dump(Rc<RefCell<Vec<String>>>);
impl TraceSink for Dump {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            self.0.borrow_mut().push(format!(
                "{} {} {:?} {} + {} {:?}",
                r.time,
                r.action.letter(),
                r.flags,
                r.sector,
                r.bytes / 512,
                r.pdu
            ));
        }
    }
}

#[test]
fn dd_64k_direct_read() {
    for variant in ["per-chunk", "rfc-separate-meta", "last-chunk"] {
        let m = machine::preset("s390-ess").unwrap();
        let mut t = Tunables::new(Profile::V2_6_33, &tunable_tables());
        t.set("dio/boundary", variant).unwrap();
        let spec = ProcSpec {
            comm: "dd".into(),
            name: "dd".into(),
            group: 0,
            target: Target::File {
                path: "/mnt/test/test-dd1".into(),
                size: 64 << 20,
                goal: Some(16384),
            },
            pattern: Pattern::Sequential,
            read_pct: 100,
            bs: [65536, 65536],
            offset: 0,
            region: 65536,
            io_size: 65536,
            engine: Engine::Sync,
            iodepth: 1,
            direct: true,
            runtime: None,
            time_based: false,
            startdelay: Duration::ZERO,
            stonewall: false,
            ioprio: (2, 4),
            pid: Some(910),
            cpu: Some(2),
        };
        let sim = Simulation::new(SimConfig {
            machine: m,
            tunables: t,
            scheduler: "deadline".into(),
            seed: Seed(1),
            procs: vec![spec],
            checks: true,
            time_limit: Duration::secs(10),
        })
        .unwrap();
        let lines = Rc::new(RefCell::new(Vec::new()));
        let mut sim = sim;
        sim.attach(Box::new(Dump(lines.clone())));
        sim.attach(Box::new(check::Checker::new(true)));
        let (res, _) = sim.run();
        eprintln!("== {variant}");
        for l in lines.borrow().iter() {
            eprintln!("{l}");
        }
        eprintln!("{:?}", res.queue);
    }
}
