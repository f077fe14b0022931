//! Plugs belong to tasks: the points where a task's submissions are batched and
//! released, as the kernel places them, handed to the block queue through
//! `BlockQueue`'s per-task calls. Each era's queue acts at the points its kernel
//! has (the 2.6.28-2.6.38 single queue only at `unplug`, 2.6.39+ and blk-mq at
//! `start_plug`, `finish_plug` and the task going to sleep), so the callers here
//! say where they are, never which era runs.

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::Instant;

impl Simulation {
    /// `blk_start_plug(&plug)` in `task`: a batch of submissions begins. A
    /// nested plug only counts (`current->plug` is already set).
    pub(crate) fn start_plug(&mut self, task: TaskId) {
        let t = self.tasks.get_mut(task);
        t.plugs += 1;
        if t.plugs == 1 {
            self.queue.start_plug(task);
        }
    }

    /// `blk_finish_plug(&plug)` in `task`: the outermost plug releases what it
    /// holds.
    pub(crate) fn finish_plug(&mut self, task: TaskId, now: Instant) {
        let t = self.tasks.get_mut(task);
        assert!(t.plugs > 0, "blk_finish_plug without blk_start_plug");
        t.plugs -= 1;
        if t.plugs == 0 {
            let ctx = t.ctx();
            self.queue
                .finish_plug(now, task, ctx, &mut self.tracer, &mut self.out);
        }
    }

    /// A batch path starts: `read_pages` and, from 2.6.39, every `->writepages`
    /// (`generic_writepages`, `mpage_writepages`, `ext4_da_writepages`) take a
    /// plug around their submissions. Before 2.6.39 the queue ignores it.
    pub(crate) fn open_batch_plug(&mut self, task: TaskId) {
        if !self.tasks.get(task).batch_plug {
            self.tasks.get_mut(task).batch_plug = true;
            self.start_plug(task);
        }
    }

    /// The batch's bios are all submitted: its `blk_finish_plug`.
    pub(crate) fn close_batch_plug(&mut self, task: TaskId, now: Instant) {
        if self.tasks.get(task).batch_plug {
            self.tasks.get_mut(task).batch_plug = false;
            self.finish_plug(task, now);
        }
    }

    /// `task` will wait for its I/O and kicks the device first
    /// (`blk_run_address_space`, `blk_run_backing_dev` from `sync_page`).
    pub(crate) fn unplug(&mut self, task: TaskId, now: Instant) {
        let ctx = self.tasks.get(task).ctx();
        self.queue
            .unplug(now, task, ctx, &mut self.tracer, &mut self.out);
    }

    /// `task`'s step is over. If it went to sleep holding a plug, `schedule`
    /// flushes the plug (`sched_submit_work` → `blk_schedule_flush_plug`).
    pub(crate) fn sched_out(&mut self, task: TaskId, now: Instant) {
        let t = self.tasks.get(task);
        let asleep = matches!(
            t.blocked,
            Blocked::OnRequest | Blocked::OnIo | Blocked::OnPage | Blocked::OnCongestion
        );
        if asleep && t.plugs > 0 {
            let ctx = t.ctx();
            self.queue
                .sleep(now, task, ctx, &mut self.tracer, &mut self.out);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::machine::Machine;
    use crate::task::KThread;
    use crate::workload::ProcSpec;
    use crate::world::{SimConfig, Simulation};
    use iostack_block::{
        Bio, BlockOut, BlockQueue, BlockWork, Ctx, QueueEvent, QueueStats, Submit,
    };
    use iostack_block::{QueueConfig, RequestQueue};
    use iostack_core::{Profile, TaskId, Tracer, Tunables};
    use iostack_des::{Instant, Rng, Seed};
    use iostack_device::Device;
    use std::cell::RefCell;
    use std::rc::Rc;

    type Log = Rc<RefCell<Vec<String>>>;

    /// The real queue, with the per-task plugging calls and kblockd's work
    /// written down as they reach it.
    struct Recorder {
        q: Box<dyn BlockQueue>,
        log: Log,
    }

    impl Recorder {
        fn note(&self, s: String) {
            self.log.borrow_mut().push(s);
        }
    }

    impl BlockQueue for Recorder {
        fn submit_bio(
            &mut self,
            now: Instant,
            b: Bio,
            tr: &mut Tracer,
            o: &mut BlockOut,
        ) -> Submit {
            let r = self.q.submit_bio(now, b, tr, o);
            if r == Submit::Sleeping {
                self.note(format!("S {}", b.owner.task.0));
            }
            r
        }
        fn start_plug(&mut self, task: TaskId) {
            self.note(format!("start {}", task.0));
            self.q.start_plug(task);
        }
        fn finish_plug(
            &mut self,
            now: Instant,
            t: TaskId,
            c: Ctx,
            tr: &mut Tracer,
            o: &mut BlockOut,
        ) {
            self.note(format!("finish {}", t.0));
            self.q.finish_plug(now, t, c, tr, o);
        }
        fn unplug(&mut self, now: Instant, t: TaskId, c: Ctx, tr: &mut Tracer, o: &mut BlockOut) {
            self.note(format!("unplug {}", t.0));
            self.q.unplug(now, t, c, tr, o);
        }
        fn sleep(&mut self, now: Instant, t: TaskId, c: Ctx, tr: &mut Tracer, o: &mut BlockOut) {
            self.note(format!("sleep {}", t.0));
            self.q.sleep(now, t, c, tr, o);
        }
        fn run_queue(&mut self, now: Instant, c: Ctx, tr: &mut Tracer, o: &mut BlockOut) {
            self.q.run_queue(now, c, tr, o);
        }
        fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, o: &mut BlockOut) {
            assert!(
                !matches!(ev, QueueEvent::Work(_)),
                "kblockd's work goes to run_work"
            );
            self.q.handle(now, ev, tr, o);
        }
        fn run_work(
            &mut self,
            now: Instant,
            w: BlockWork,
            c: Ctx,
            tr: &mut Tracer,
            o: &mut BlockOut,
        ) {
            self.note(format!("work {w:?} pid {} cpu {}", c.pid, c.cpu));
            self.q.run_work(now, w, c, tr, o);
        }
        fn set_kblockd(&mut self, c: Ctx) {
            self.q.set_kblockd(c);
        }
        fn congested(&self, sync: bool) -> bool {
            self.q.congested(sync)
        }
        fn idle(&self) -> bool {
            self.q.idle()
        }
        fn busy_summary(&self) -> String {
            self.q.busy_summary()
        }
        fn stats(&self) -> &QueueStats {
            self.q.stats()
        }
        fn elevator_name(&self) -> &'static str {
            self.q.elevator_name()
        }
        fn device(&self) -> &dyn Device {
            self.q.device()
        }
        fn set_checks(&mut self, on: bool) {
            self.q.set_checks(on)
        }
    }

    /// `dd` on a machine preset, its queue wrapped in a `Recorder`.
    fn dd(
        machine: &str,
        profile: Profile,
        sched: &str,
        args: &str,
        sets: &[&str],
    ) -> (Simulation, Log) {
        let m = crate::machine::preset(machine).unwrap();
        let procs = crate::frontend::dd_procs(args, &m).unwrap();
        recorded(m, procs, profile, sched, sets)
    }

    /// A run of `procs`, its queue wrapped in a `Recorder`.
    fn recorded(
        m: Machine,
        procs: Vec<ProcSpec>,
        profile: Profile,
        sched: &str,
        sets: &[&str],
    ) -> (Simulation, Log) {
        let mut tunables = Tunables::new(profile, &crate::tunable_tables());
        for s in sets {
            tunables.set_str(s).unwrap();
        }
        let mut sim = Simulation::new(SimConfig {
            scheduler: sched.into(),
            machine: m,
            tunables,
            seed: Seed(1),
            procs,
            checks: true,
            until: None,
        })
        .unwrap();
        let log = Log::default();
        let hold = placeholder(&sim);
        let q = std::mem::replace(&mut sim.queue, hold);
        sim.queue = Box::new(Recorder {
            q,
            log: log.clone(),
        });
        (sim, log)
    }

    /// A queue to hold the place while the real one is wrapped.
    fn placeholder(sim: &Simulation) -> Box<dyn BlockQueue> {
        let m = &sim.cfg.machine;
        let t = &sim.cfg.tunables;
        let dev = m.device.build(Rng::stream(Seed(1), "device"));
        let cfg = QueueConfig::from_tunables(t, m.disk, Vec::new(), &*dev);
        let elv = iostack_iosched::by_name("noop", t).unwrap();
        Box::new(RequestQueue::new(cfg, elv, dev))
    }

    /// Each O_DIRECT read is submitted under the task's plug, kicked with
    /// `blk_run_address_space` and its plug finished before the task sleeps
    /// for it: no plug is held across the sleep.
    #[test]
    fn a_direct_io_is_plugged_unplugged_and_finished_before_the_wait() {
        let (sim, log) = dd(
            "null",
            Profile::V2_6_33,
            "noop",
            "if=/dev/nullb0 of=/dev/null iflag=direct bs=4k count=8",
            &[],
        );
        let (r, _) = sim.run();
        assert!(r.ending.is_complete(), "{:?}", r.ending);
        let want: Vec<String> = (0..8)
            .flat_map(|_| ["start 0", "unplug 0", "finish 0"])
            .map(String::from)
            .collect();
        assert_eq!(*log.borrow(), want);
    }

    /// A submitter that must sleep in `get_request_wait` in the middle of its
    /// direct I/O holds its plug: `schedule` is told (`sleep`), and the plug
    /// is finished only once, after the last bio.
    #[test]
    fn a_submitter_sleeping_for_a_request_sleeps_with_its_plug() {
        let sets = ["queue/nr_requests=4", "queue/max_sectors_kb=4"];
        let args = "if=/dev/sda of=/dev/null iflag=direct bs=64k count=2";
        let (sim, log) = dd("sata-2009", Profile::V2_6_33, "noop", args, &sets);
        let (r, _) = sim.run();
        assert!(r.ending.is_complete(), "{:?}", r.ending);
        let log = log.borrow();
        let sleeps = log.iter().filter(|s| *s == "sleep 0").count();
        let slept = log.iter().filter(|s| *s == "S 0").count();
        assert!(sleeps > 0 && sleeps == slept, "{log:?}");
        let plugs: Vec<&String> = log
            .iter()
            .filter(|s| !s.starts_with('S') && !s.starts_with("sleep"))
            .collect();
        assert_eq!(
            plugs,
            ["start 0", "unplug 0", "finish 0", "start 0", "unplug 0", "finish 0"]
        );
    }

    /// kblockd is a task of the table: the work the queue defers (CFQ's
    /// `cfq_schedule_dispatch` between two readers) runs as it, with its pid
    /// and CPU.
    #[test]
    fn deferred_work_runs_as_the_kblockd_task() {
        let job = "[global]\nfilename=/dev/sda\nsize=8m\ndirect=1\n\
                   [a]\nrw=randread\nioengine=libaio\niodepth=8\nruntime=1\ntime_based\n\
                   [s]\nrw=read\nbs=128k\n";
        let m = crate::machine::preset("sata-2009").unwrap();
        let procs = crate::frontend::fio_procs_from_text("j.fio", job, &m)
            .unwrap()
            .procs;
        let (sim, log) = recorded(m, procs, Profile::V2_6_32, "cfq", &[]);
        let k = sim.tasks.get(sim.tasks.kthread(KThread::KBlockd));
        let want = format!("pid {} cpu {}", k.pid, k.cpu);
        assert_eq!(k.pid, 40);
        let (r, _) = sim.run();
        assert!(r.ending.is_complete(), "{:?}", r.ending);
        let log = log.borrow();
        let work: Vec<&String> = log.iter().filter(|s| s.starts_with("work")).collect();
        assert!(!work.is_empty(), "{log:?}");
        assert!(work.iter().all(|s| s.ends_with(&want)), "{work:?}");
    }
}
