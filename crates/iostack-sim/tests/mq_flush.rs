//! blk-mq's flush machinery (`block/mq/flush.rs`, 6.x `blk-flush.c`) on a
//! device with a volatile write cache: the commands the device sees for
//! PREFLUSH and FUA writes, one flush shared by every request waiting for it,
//! the double completion of a sequenced request, under none and mq-deadline,
//! with the trace checker attached.

use iostack_block::{Bio, BlockOut, BlockQueue, Ctx, MqConfig, MqQueue, QueueConfig, QueueEvent};
use iostack_core::{
    Action, BioOwner, DevT, EndIo, Profile, ReqFlags, TaskId, TraceEvent, TraceRecord, TraceSink,
    Tracer, Tunables,
};
use iostack_des::{EventQueue, Instant};
use iostack_device::{Device, DeviceCmd, HwLimits};
use iostack_sim::check::Checker;
use std::sync::{Arc, Mutex};

const DISK: DevT = DevT::new(8, 0);
const MS: u64 = 1_000_000;

type Cmds = Arc<Mutex<Vec<(u64, &'static str)>>>;

/// One command at a time: 1 ms per data command, 5 ms per flush; logs what
/// it is sent.
struct Dev {
    fua: bool,
    busy_until: u64,
    queue: Vec<(u64, u64)>,
    log: Cmds,
}

impl Device for Dev {
    fn write_cache(&self) -> bool {
        true
    }
    fn fua(&self) -> bool {
        self.fua
    }
    fn queue_depth(&self) -> u32 {
        8
    }
    fn rotational(&self) -> bool {
        false
    }
    fn capacity_sectors(&self) -> u64 {
        1 << 30
    }
    fn hw_limits(&self) -> HwLimits {
        HwLimits {
            max_hw_sectors: 1024,
            max_segments: 128,
            logical_block_size: 512,
        }
    }
    fn submit(&mut self, now: Instant, cmd: DeviceCmd) {
        let start = self.busy_until.max(now.0);
        self.busy_until = start + if cmd.flush { 5 * MS } else { MS };
        let what = match (cmd.flush, cmd.fua) {
            (true, _) => "flush",
            (false, true) => "fua-write",
            (false, false) if cmd.write => "write",
            _ => "read",
        };
        self.log.lock().unwrap().push((cmd.sector, what));
        self.queue.push((self.busy_until, cmd.id));
    }
    fn poll(&mut self, _now: Instant, out: &mut Vec<(Instant, u64)>) {
        out.extend(self.queue.drain(..).map(|(at, id)| (Instant(at), id)));
    }
    fn complete(&mut self, _now: Instant, _id: u64) {}
}

struct Collect(Arc<Mutex<Vec<TraceRecord>>>);
impl TraceSink for Collect {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            self.0.lock().unwrap().push(*r);
        }
    }
}

struct H {
    q: MqQueue,
    tr: Tracer,
    out: BlockOut,
    evq: EventQueue<QueueEvent>,
    cmds: Cmds,
    trace: Arc<Mutex<Vec<TraceRecord>>>,
    done: usize,
}

fn h(sched: &str, fua: bool) -> H {
    let mut tables = vec![iostack_block::TUNABLES];
    tables.extend(iostack_iosched::tunable_tables());
    let t = Tunables::new(Profile::V6, &tables);
    let cmds = Cmds::default();
    let dev = Dev {
        fua,
        busy_until: 0,
        queue: Vec::new(),
        log: cmds.clone(),
    };
    let cfg = QueueConfig::from_tunables(&t, DISK, vec![], &dev);
    let elv = iostack_iosched::mq_by_name(sched, &t).unwrap();
    let mut q = MqQueue::new(
        MqConfig::from_queue_config(&cfg, 2, None),
        elv,
        Box::new(dev),
    );
    q.set_checks(true);
    q.set_kblockd(Ctx { pid: 40, cpu: 0 });
    let mut tr = Tracer::new();
    let trace = Arc::new(Mutex::new(Vec::new()));
    tr.attach(Box::new(Checker::new(true)));
    tr.attach(Box::new(Collect(trace.clone())));
    H {
        q,
        tr,
        out: BlockOut::default(),
        evq: EventQueue::new(),
        cmds,
        trace,
        done: 0,
    }
}

impl H {
    fn bio(&mut self, at: u64, owner: u32, sector: u64, sectors: u32, flags: ReqFlags) {
        self.run_until(at);
        let b = Bio {
            dev: DISK,
            sector,
            sectors,
            segments: sectors.div_ceil(8),
            flags,
            pid: 100 + owner,
            cpu: 0,
            owner: BioOwner {
                task: TaskId(owner),
                end_io: EndIo::DirectIo { slot: 0 },
            },
            ioprio: (2, 4),
            submitted_at: Instant(at),
            run: iostack_block::BioRun::ONE,
            next: None,
        };
        self.q
            .submit_bio(Instant(at), b, &mut self.tr, &mut self.out);
        self.sched();
    }
    fn sched(&mut self) {
        self.done += self.out.completed.len();
        self.out.completed.clear();
        for (at, e) in self.out.events.drain(..) {
            self.evq.schedule(at, e);
        }
    }
    fn run_until(&mut self, t: u64) {
        while self.evq.peek_time().is_some_and(|x| x.0 <= t) {
            let s = self.evq.pop().unwrap();
            match s.event {
                QueueEvent::Work(w) => {
                    let k = Ctx { pid: 40, cpu: 0 };
                    self.q.run_work(s.at, w, k, &mut self.tr, &mut self.out)
                }
                e => self.q.handle(s.at, e, &mut self.tr, &mut self.out),
            }
            self.sched();
        }
    }
    fn finish(mut self) -> (Vec<(u64, &'static str)>, Vec<TraceRecord>, usize) {
        self.run_until(u64::MAX);
        assert!(BlockQueue::idle(&self.q));
        self.tr.finish(Instant(u64::MAX / 2));
        let c = self.cmds.lock().unwrap().clone();
        let t = self.trace.lock().unwrap().clone();
        (c, t, self.done)
    }
}

const W: ReqFlags = ReqFlags::WRITE;

/// A PREFLUSH|FUA write on a device without FUA: flush, the data, flush
/// (`REQ_FSEQ_PREFLUSH | DATA | POSTFLUSH`); the request completes twice, the
/// second time with no bytes, and its bio ends once.
#[test]
fn preflush_fua_write_without_fua_is_flush_data_flush() {
    for sched in ["none", "mq-deadline"] {
        let mut h = h(sched, false);
        h.bio(
            0,
            0,
            800,
            8,
            W | ReqFlags::SYNC | ReqFlags::FLUSH | ReqFlags::FUA,
        );
        let (cmds, t, done) = h.finish();
        assert_eq!(
            cmds,
            [(0, "flush"), (800, "write"), (0, "flush")],
            "{sched}"
        );
        let c: Vec<u32> = t
            .iter()
            .filter(|r| r.action == Action::Complete && r.sector == 800)
            .map(|r| r.bytes)
            .collect();
        assert_eq!(c, [4096, 0], "{sched}");
        assert_eq!(done, 1);
    }
}

/// With FUA the data goes as a FUA write after the preflush; a FUA write with
/// no preflush goes straight through the normal path.
#[test]
fn fua_devices_get_fua_writes() {
    let mut h = h("none", true);
    h.bio(
        0,
        0,
        800,
        8,
        W | ReqFlags::SYNC | ReqFlags::FLUSH | ReqFlags::FUA,
    );
    h.bio(20 * MS, 1, 1600, 8, W | ReqFlags::SYNC | ReqFlags::FUA);
    let (cmds, _, done) = h.finish();
    assert_eq!(
        cmds,
        [(0, "flush"), (800, "fua-write"), (1600, "fua-write")]
    );
    assert_eq!(done, 2);
}

/// Requests that wait for a flush while one runs share the next one: three
/// empty flushes while the first runs make two flush commands, not three.
#[test]
fn waiting_requests_share_one_flush() {
    let mut h = h("none", false);
    let f = W | ReqFlags::SYNC | ReqFlags::FLUSH;
    h.bio(0, 0, 0, 0, f);
    h.bio(MS, 1, 0, 0, f);
    h.bio(MS, 2, 0, 0, f);
    let (cmds, _, done) = h.finish();
    assert_eq!(cmds, [(0, "flush"), (0, "flush")]);
    assert_eq!(done, 3);
}
