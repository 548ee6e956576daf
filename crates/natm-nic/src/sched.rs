//! Thread placement for measurements: the calling thread's CPU affinity and scheduling
//! policy (`SCHED_OTHER`, `SCHED_FIFO` or `SCHED_IDLE`).
//!
//! Every function but [`set_process_policy`] acts on the calling thread only (Linux
//! schedules threads, not processes), so a measurement pins and raises its producer and
//! consumer threads and leaves the rest of the process alone. [`set_process_policy`] lowers
//! a whole helper process, such as a lab daemon that stands for a machine of its own.
//!
//! ```no_run
//! use natm_nic::sched::{self, FifoPriority, Policy};
//!
//! sched::pin_current_thread(1)?;
//! match sched::set_current_thread_policy(Policy::Fifo(FifoPriority::new(10)?)) {
//!     Ok(()) => {}
//!     Err(e @ sched::SchedError::NotPermitted { .. }) => eprintln!("{e}"),
//!     Err(e) => return Err(e),
//! }
//! # Ok::<(), sched::SchedError>(())
//! ```
//!
//! A `SCHED_FIFO` thread runs until it blocks or yields to another of the same priority:
//! one that busy-polls starves every `SCHED_OTHER` thread of its CPU until the kernel's
//! real-time throttling (`/proc/sys/kernel/sched_rt_runtime_us`, 95% by default) steps in.

use std::io;
use std::mem::MaybeUninit;

use natm_core::IdleWait;
use rustix::thread::CpuSet;

/// Why a placement call failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    /// The CPU does not exist, is offline, or is outside the CPUs this process may use.
    #[error("cpu {cpu} is not one this thread may run on")]
    CpuNotAllowed {
        /// The CPU asked for.
        cpu: usize,
    },
    /// A `SCHED_FIFO` priority outside 1..=99.
    #[error(
        "SCHED_FIFO priority {priority} is outside {}..={}",
        FifoPriority::MIN,
        FifoPriority::MAX
    )]
    PriorityOutOfRange {
        /// The priority asked for.
        priority: i64,
    },
    /// The kernel refused (EPERM).
    #[error(
        "{what} refused: not permitted (needs CAP_SYS_NICE, or a RLIMIT_RTPRIO of at least \
         the priority: ulimit -r)"
    )]
    NotPermitted {
        /// What was asked.
        what: &'static str,
    },
    /// Another system error.
    #[error("{call}: {source}")]
    Os {
        /// The call.
        call: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
}

impl SchedError {
    /// Maps an errno from `call` (doing `what`) to its error.
    fn from_errno(call: &'static str, what: &'static str, errno: i32) -> Self {
        if errno == libc::EPERM {
            SchedError::NotPermitted { what }
        } else {
            SchedError::Os {
                call,
                source: io::Error::from_raw_os_error(errno),
            }
        }
    }
}

/// The CPUs the calling thread may run on now, in increasing order.
pub fn allowed_cpus() -> Result<Vec<usize>, SchedError> {
    let set = rustix::thread::sched_getaffinity(None).map_err(|e| SchedError::Os {
        call: "sched_getaffinity",
        source: e.into(),
    })?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Pins the calling thread to `cpu`. On return the thread runs on it (the kernel migrates
/// it before `sched_setaffinity` returns).
pub fn pin_current_thread(cpu: usize) -> Result<(), SchedError> {
    if cpu >= CpuSet::MAX_CPU {
        return Err(SchedError::CpuNotAllowed { cpu });
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| {
        if e == rustix::io::Errno::INVAL {
            SchedError::CpuNotAllowed { cpu }
        } else {
            SchedError::from_errno("sched_setaffinity", "pinning a thread", e.raw_os_error())
        }
    })
}

/// The CPU the calling thread is running on (it may move right after, unless pinned).
pub fn current_cpu() -> usize {
    rustix::thread::sched_getcpu()
}

/// A `SCHED_FIFO` priority, 1 (lowest) to 99 (highest) on Linux.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct FifoPriority(u8);

impl FifoPriority {
    /// Lowest real-time priority.
    pub const MIN: u8 = 1;
    /// Highest real-time priority.
    pub const MAX: u8 = 99;

    /// A priority in `MIN..=MAX`.
    pub fn new(priority: i64) -> Result<Self, SchedError> {
        match u8::try_from(priority) {
            Ok(p) if (Self::MIN..=Self::MAX).contains(&p) => Ok(FifoPriority(p)),
            _ => Err(SchedError::PriorityOutOfRange { priority }),
        }
    }

    /// Its value.
    pub fn get(self) -> u8 {
        self.0
    }
}

/// A scheduling policy a thread can be given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Policy {
    /// `SCHED_OTHER`: the default time-sharing policy (CFS/EEVDF), nice value unchanged.
    Other,
    /// `SCHED_FIFO` at a priority: runs before every `SCHED_OTHER` thread of its CPU until
    /// it blocks.
    Fifo(FifoPriority),
    /// `SCHED_IDLE`: runs only when no `SCHED_OTHER` or `SCHED_FIFO` thread of its CPU
    /// wants it, and is preempted as soon as one wakes.
    Idle,
}

impl Policy {
    /// The raw policy and parameter, and the name errors use.
    fn raw(self) -> (libc::c_int, libc::sched_param, &'static str) {
        let mut param = zeroed_param();
        match self {
            Policy::Other => (libc::SCHED_OTHER, param, "SCHED_OTHER"),
            Policy::Fifo(p) => {
                param.sched_priority = i32::from(p.get());
                (libc::SCHED_FIFO, param, "SCHED_FIFO")
            }
            Policy::Idle => (libc::SCHED_IDLE, param, "SCHED_IDLE"),
        }
    }
}

fn zeroed_param() -> libc::sched_param {
    // SAFETY: sched_param is plain integers (just sched_priority on glibc; musl adds more
    // integer fields), for which all-zero bytes are a valid value.
    unsafe { MaybeUninit::<libc::sched_param>::zeroed().assume_init() }
}

/// Gives the calling thread `policy`. `SCHED_FIFO` needs `CAP_SYS_NICE` or a
/// `RLIMIT_RTPRIO` at least as high as the priority, otherwise
/// [`SchedError::NotPermitted`]; `SCHED_IDLE` is always allowed, and so is going back to
/// `SCHED_OTHER`.
pub fn set_current_thread_policy(policy: Policy) -> Result<(), SchedError> {
    let (raw, param, what) = policy.raw();
    // SAFETY: pthread_self() is the calling thread, alive for the whole call; param is an
    // initialized sched_param that the call only reads.
    let r = unsafe { libc::pthread_setschedparam(libc::pthread_self(), raw, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(SchedError::from_errno("pthread_setschedparam", what, r))
    }
}

/// Gives every thread of process `pid` (as listed in `/proc/PID/task` now) `policy`;
/// threads it starts later inherit their creator's. Lowering another process of the same
/// user to `SCHED_IDLE` is allowed; returns how many threads were set. A thread that ends
/// meanwhile is skipped.
pub fn set_process_policy(pid: i32, policy: Policy) -> Result<usize, SchedError> {
    let (raw, param, what) = policy.raw();
    let tasks =
        std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|source| SchedError::Os {
            call: "reading /proc/PID/task",
            source,
        })?;
    let mut set = 0;
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: sched_setscheduler takes a thread id and reads the initialized param
        // through a pointer valid for the call.
        if unsafe { libc::sched_setscheduler(tid, raw, &param) } == 0 {
            set += 1;
        } else {
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if errno != libc::ESRCH {
                return Err(SchedError::from_errno("sched_setscheduler", what, errno));
            }
        }
    }
    Ok(set)
}

/// A busy loop's courtesy to the threads that share its CPU: [`GiveWay::tick`] yields the
/// CPU (`sched_yield`) after every pass that found nothing to do, and once every
/// [`GIVE_WAY_EVERY`] of passes that did.
///
/// Why: a daemon that spins never blocks, and a thread woken on its CPU may wait for the
/// spinner's whole time slice (milliseconds under EEVDF) before it runs. On a machine with
/// more spinners than CPUs that thread is often the next hop of the very cell the spinner
/// is waiting for (the peer daemon, the application), so a pass that found nothing gives
/// way at once: a yield with nothing else runnable returns at once and costs one system
/// call, less than a pass. Busy passes give way only once a period, so a loaded daemon
/// keeps its throughput and its neighbours still wait at most about [`GIVE_WAY_EVERY`].
#[derive(Clone, Copy, Debug)]
pub struct GiveWay {
    last: std::time::Instant,
}

/// How long a [`GiveWay`] spinner that keeps finding work runs between two yields.
pub const GIVE_WAY_EVERY: std::time::Duration = std::time::Duration::from_micros(20);

impl GiveWay {
    /// A spinner that last gave way at `now`.
    pub fn new(now: std::time::Instant) -> GiveWay {
        GiveWay { last: now }
    }

    /// Whether a pass that ended at `now` and was `idle` (found nothing) should yield.
    pub fn due(&self, now: std::time::Instant, idle: bool) -> bool {
        idle || now.saturating_duration_since(self.last) >= GIVE_WAY_EVERY
    }

    /// Called after every pass with the time just read: yields if [`GiveWay::due`];
    /// returns whether it did.
    #[inline]
    pub fn tick(&mut self, now: std::time::Instant, idle: bool) -> bool {
        if !self.due(now, idle) {
            return false;
        }
        std::thread::yield_now();
        self.last = std::time::Instant::now();
        true
    }

    /// The loop slept (gave the CPU away itself) at `now`.
    pub fn slept(&mut self, now: std::time::Instant) {
        self.last = now;
    }
}

/// How long a poller spins between two yields while it sees nothing ([`PollBackoff`]).
///
/// A daemon woken on a polling CPU waits at most about this long for it, instead of the
/// poller's whole time slice; on the direct path every cell crosses three daemons, so the
/// round trip pays it six times. Measured with `natm perf rr --mode poll` (unlimited lab,
/// the two pollers on two vCPUs, daemons giving way after idle passes): 10 µs gave a p50
/// of ~79 µs (1.9× UDP), 1 µs ~40 µs (0.9–1.0×). A yield with nothing else runnable
/// costs about a system call, so a poller with a CPU of its own loses little.
pub const POLL_YIELD_EVERY: std::time::Duration = std::time::Duration::from_micros(1);

/// How long a crowded poller ([`Poller::crowded`]) keeps yielding before it sleeps.
///
/// Yielding, not sleeping, is what hands a CPU over fastest here, even between two pollers
/// on one CPU: `natm perf rr --mode poll --same-core` on the direct path measured p50
/// ~29 µs yielding only against ~55 µs sleeping as soon as crowded (eventfd wake-ups), on
/// a loaded 2-vCPU machine. The sleep is for the wait that yielding does not end: a peer
/// that needs far longer than a round trip is not getting a CPU, and a poller that spins
/// on meanwhile only takes CPU time from it.
pub const CROWDED_PATIENCE: std::time::Duration = std::time::Duration::from_micros(200);

/// What a polling wait does next ([`PollBackoff::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollStep {
    /// Look at the ring again (after a spin-loop hint).
    Spin,
    /// Yield the CPU (`sched_yield`), then look again.
    Yield,
    /// Sleep until the producer kicks (the caller's eventfd), then look again.
    Sleep,
}

/// The back-off of one polling wait, as a decision on the time passed in.
///
/// Why: a poller that never gives its CPU away starves whoever else needs that CPU, and
/// those are exactly the threads it waits for: the daemon that moves its cells (woken on
/// the poller's CPU, it waits for the poller's whole time slice: 8 ms per round trip on
/// the direct path with two pollers on two vCPUs) or, with two pollers on one CPU, its
/// peer. So a wait that has seen nothing yields every [`POLL_YIELD_EVERY`], which hands
/// the CPU to a daemon that has just woken and costs one system call per period when
/// nobody else wants it. Yielding may not be enough when pollers share a CPU (under EEVDF
/// `sched_yield` does not hand the CPU over while the other has had more than its share),
/// so once a wait has lasted [`CROWDED_PATIENCE`] it asks at each yield whether its CPUs
/// are crowded (more pollers awake than CPUs, see [`Poller::crowded`]) and if so sleeps on
/// its eventfd, woken by the producer's kick as an eventfd waiter is. A poller with a CPU
/// of its own never sleeps; of two on one CPU, the one that asks first sleeps and the
/// other keeps polling.
#[derive(Clone, Copy, Debug)]
pub struct PollBackoff {
    start: std::time::Instant,
    last_yield: std::time::Instant,
}

impl PollBackoff {
    /// A wait that began (found nothing) at `now`.
    pub fn new(now: std::time::Instant) -> PollBackoff {
        PollBackoff {
            start: now,
            last_yield: now,
        }
    }

    /// The step after a look that found nothing at `now`. `crowded` tells whether this
    /// poller's CPUs have more pollers awake than CPUs ([`Poller::crowded`]); it is asked
    /// only at a yield once the wait has lasted [`CROWDED_PATIENCE`], so a wait that ends
    /// sooner costs no lock and no system call for it.
    pub fn step(&mut self, now: std::time::Instant, crowded: impl FnOnce() -> bool) -> PollStep {
        if now.saturating_duration_since(self.last_yield) < POLL_YIELD_EVERY {
            return PollStep::Spin;
        }
        self.last_yield = now;
        if now.saturating_duration_since(self.start) >= CROWDED_PATIENCE && crowded() {
            PollStep::Sleep
        } else {
            PollStep::Yield
        }
    }

    /// The caller yielded or slept, and this is the time after it.
    pub fn resumed(&mut self, now: std::time::Instant) {
        self.last_yield = now;
    }
}

/// The polling waiters of this process, the CPUs each may run on and whether each is
/// asleep: what a poller needs to know whether it has a CPU of its own
/// ([`Poller::crowded`]).
///
/// A poller is registered for as long as it exists (a VC that waits by polling) and
/// counts as awake unless it sleeps in a back-off: busy or polling, it wants a CPU.
/// Pollers of other processes (a daemon with `wait = "poll"`, another application) are not
/// seen; `natm perf` warns about those.
pub struct Pollers;

/// One registered poller; dropping it unregisters it.
#[derive(Debug)]
pub struct Poller {
    id: u64,
}

#[derive(Default)]
struct PollerEntry {
    /// Empty until the poller's first [`Poller::crowded`].
    cpus: Vec<usize>,
    asleep: bool,
}

type PollerTable = std::collections::BTreeMap<u64, PollerEntry>;

fn poller_table() -> std::sync::MutexGuard<'static, PollerTable> {
    static TABLE: std::sync::Mutex<PollerTable> = std::sync::Mutex::new(PollerTable::new());
    // A panic while the table was held leaves it consistent (one field written).
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pollers {
    /// Registers a poller, awake; its CPUs are unknown until its first
    /// [`Poller::crowded`].
    pub fn register() -> Poller {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        poller_table().insert(id, PollerEntry::default());
        Poller { id }
    }

    /// Pollers registered now.
    pub fn count() -> usize {
        poller_table().len()
    }
}

impl Poller {
    /// Records `cpus` (the calling thread's, [`allowed_cpus`]) as this poller's, and
    /// tells whether the pollers awake whose CPUs overlap them outnumber the CPUs they may
    /// use between them. If so, this poller is marked asleep (the caller sleeps next) until
    /// [`Poller::woke`], so that the others see one poller fewer.
    pub fn crowded(&self, cpus: &[usize]) -> bool {
        let mut table = poller_table();
        let others: Vec<&[usize]> = table
            .iter()
            .filter(|(id, e)| **id != self.id && !e.asleep)
            .map(|(_, e)| e.cpus.as_slice())
            .collect();
        let crowded = outnumbered(cpus, &others);
        let me = table.entry(self.id).or_default();
        if me.cpus != cpus {
            me.cpus = cpus.to_vec();
        }
        me.asleep = crowded;
        crowded
    }

    /// The poller is back from its sleep: it counts as awake again.
    pub fn woke(&self) {
        if let Some(e) = poller_table().get_mut(&self.id) {
            e.asleep = false;
        }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        poller_table().remove(&self.id);
    }
}

/// Whether a poller on `mine` and the `others` that share a CPU with it are more than the
/// CPUs those pollers may use between them. Pollers whose CPUs are not known yet (empty)
/// are left out; so is `mine` when empty (nothing to compare).
pub fn outnumbered(mine: &[usize], others: &[&[usize]]) -> bool {
    if mine.is_empty() {
        return false;
    }
    let mut cpus: std::collections::BTreeSet<usize> = mine.iter().copied().collect();
    let mut pollers = 1;
    for o in others {
        if o.iter().any(|c| mine.contains(c)) {
            pollers += 1;
            cpus.extend(o.iter().copied());
        }
    }
    pollers > cpus.len()
}

/// How long an adaptive loop spins after its last work before it may sleep.
pub const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// What a daemon's loop does after a pass ([`Idler::after_pass`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Run another pass now.
    Again,
    /// Sleep until something has work (the loop's own `poll(2)`), then call
    /// [`Idler::slept`].
    Sleep,
}

/// The one idle policy of natm's daemon loops (hostd's and switchd's): after each pass,
/// whether to go again or sleep, as their [`IdleWait`] says.
///
/// * [`IdleWait::Poll`]: never sleeps; gives way ([`GiveWay`]) unless the daemon was
///   pinned to its own CPU (a spin hint after an idle pass instead). It cannot sleep: a
///   polling daemon's links announce no sleep, so no peer would wake it.
/// * [`IdleWait::Yield`]: never sleeps, and yields the CPU after every pass, so that pollers
///   sharing a CPU each get their turn.
/// * [`IdleWait::Adaptive`]: sleeps only after a pass that moved nothing, once [`SPIN`] has
///   passed since the last one that moved something; while it spins it gives way
///   ([`GiveWay`]) unless the daemon was pinned to its own CPU.
///
/// Why only after a pass that moved nothing: a shared-memory link's descriptor turns
/// readable only for a reader that announced its sleep, which `recv_cells` does when it
/// finds the ring empty. A pass that received cells left that announcement off, so a sleep
/// right after it (a busy pass that took longer than the spin, on a loaded CPU) could not
/// be woken by the peer and would last the loop's longest sleep. A pass that moved nothing
/// has found every receive ring empty, so every peer kicks.
#[derive(Clone, Copy, Debug)]
pub struct Idler {
    wait: IdleWait,
    last_busy: std::time::Instant,
    last_pass_idle: bool,
    give_way: Option<GiveWay>,
}

impl Idler {
    /// A loop waiting as `wait`, whose last work was at `now`; `give_way`: whether it
    /// yields now and then while it spins (not when it has a CPU of its own).
    pub fn new(wait: IdleWait, now: std::time::Instant, give_way: bool) -> Idler {
        Idler {
            wait,
            last_busy: now,
            last_pass_idle: false,
            give_way: give_way.then(|| GiveWay::new(now)),
        }
    }

    /// Records work done outside a pass (a management request, a new link) at `now`.
    pub fn busy(&mut self, now: std::time::Instant) {
        self.last_pass_idle = false;
        self.last_busy = now;
    }

    /// After a pass that ended at `now` and did (`moved`) or did not move anything: what the
    /// loop does next.
    pub fn after_pass(&mut self, moved: bool, now: std::time::Instant) -> Next {
        if moved {
            self.busy(now);
        } else {
            self.last_pass_idle = true;
        }
        match self.wait {
            IdleWait::Poll => {
                match &mut self.give_way {
                    Some(g) => {
                        g.tick(now, !moved);
                    }
                    None if !moved => std::hint::spin_loop(),
                    None => {}
                }
                Next::Again
            }
            IdleWait::Yield => {
                std::thread::yield_now();
                Next::Again
            }
            IdleWait::Adaptive => {
                if self.may_sleep(now) {
                    return Next::Sleep;
                }
                if let Some(g) = &mut self.give_way {
                    g.tick(now, !moved);
                }
                Next::Again
            }
        }
    }

    /// Whether an adaptive loop may sleep at `now`.
    pub fn may_sleep(&self, now: std::time::Instant) -> bool {
        self.last_pass_idle && now.saturating_duration_since(self.last_busy) >= SPIN
    }

    /// The loop slept until `now`.
    pub fn slept(&mut self, now: std::time::Instant) {
        if let Some(g) = &mut self.give_way {
            g.slept(now);
        }
    }
}

/// The calling thread's policy: `None` when it is none of `SCHED_OTHER`, `SCHED_FIFO` and
/// `SCHED_IDLE` (`SCHED_RR`, `SCHED_BATCH`, `SCHED_DEADLINE`).
pub fn current_thread_policy() -> Result<Option<Policy>, SchedError> {
    let mut param = zeroed_param();
    let mut raw: libc::c_int = 0;
    // SAFETY: pthread_self() is the calling thread; raw and param are initialized locals
    // that the call writes through the two pointers, which are valid for the call.
    let r = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut raw, &mut param) };
    if r != 0 {
        return Err(SchedError::from_errno(
            "pthread_getschedparam",
            "reading the scheduling policy",
            r,
        ));
    }
    Ok(match raw {
        libc::SCHED_OTHER => Some(Policy::Other),
        libc::SCHED_FIFO => FifoPriority::new(i64::from(param.sched_priority))
            .ok()
            .map(Policy::Fifo),
        libc::SCHED_IDLE => Some(Policy::Idle),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a fresh thread, so that pinning and policy changes die with it.
    fn on_own_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().expect("test thread")
    }

    #[test]
    fn sched_pin_to_each_allowed_cpu() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        for cpu in cpus {
            let (now, allowed) = on_own_thread(move || {
                pin_current_thread(cpu).unwrap();
                (current_cpu(), allowed_cpus().unwrap())
            });
            assert_eq!(now, cpu);
            assert_eq!(allowed, vec![cpu]);
        }
    }

    #[test]
    fn sched_pin_refuses_impossible_cpus() {
        let allowed = allowed_cpus().unwrap();
        let outside = (0..CpuSet::MAX_CPU)
            .rev()
            .find(|c| !allowed.contains(c))
            .expect("not every one of 1024 cpus is allowed");
        for cpu in [outside, CpuSet::MAX_CPU, usize::MAX] {
            let r = on_own_thread(move || pin_current_thread(cpu));
            assert!(
                matches!(r, Err(SchedError::CpuNotAllowed { cpu: c }) if c == cpu),
                "{cpu}: {r:?}"
            );
        }
        // The failed calls left the thread where it was allowed to be.
        let still = on_own_thread(|| {
            let _ = pin_current_thread(usize::MAX);
            allowed_cpus().unwrap()
        });
        assert_eq!(still, allowed);
    }

    #[test]
    fn sched_fifo_priorities_are_range_checked() {
        for bad in [0, 100, -1, 256, i64::MAX] {
            assert!(
                matches!(FifoPriority::new(bad), Err(SchedError::PriorityOutOfRange { priority }) if priority == bad)
            );
        }
        assert_eq!(FifoPriority::new(1).unwrap().get(), 1);
        assert_eq!(FifoPriority::new(99).unwrap().get(), 99);
        let msg = FifoPriority::new(0).unwrap_err().to_string();
        assert!(msg.contains("1..=99"), "{msg}");
    }

    #[test]
    fn sched_fifo_and_back_or_a_clear_refusal() {
        let (set, during, after) = on_own_thread(|| {
            assert_eq!(current_thread_policy().unwrap(), Some(Policy::Other));
            let fifo = Policy::Fifo(FifoPriority::new(3).unwrap());
            let set = set_current_thread_policy(fifo);
            let during = current_thread_policy().unwrap();
            set_current_thread_policy(Policy::Other).unwrap();
            (set, during, current_thread_policy().unwrap())
        });
        match set {
            Ok(()) => assert_eq!(during, Some(Policy::Fifo(FifoPriority(3)))),
            Err(SchedError::NotPermitted { what }) => {
                assert_eq!(what, "SCHED_FIFO");
                assert_eq!(during, Some(Policy::Other));
            }
            Err(e) => panic!("unexpected error {e}"),
        }
        assert_eq!(after, Some(Policy::Other));
        // The test thread itself was not touched.
        assert_eq!(current_thread_policy().unwrap(), Some(Policy::Other));
    }

    #[test]
    fn sched_idle_is_allowed_for_a_thread_and_a_whole_process() {
        let (set, during) = on_own_thread(|| {
            let set = set_current_thread_policy(Policy::Idle);
            (set, current_thread_policy().unwrap())
        });
        set.unwrap();
        assert_eq!(during, Some(Policy::Idle));
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let n = set_process_policy(pid, Policy::Idle);
        // SAFETY: sched_getscheduler only reads a thread id.
        let policy = unsafe { libc::sched_getscheduler(pid) };
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(n.unwrap(), 1);
        assert_eq!(policy, libc::SCHED_IDLE);
        // A process that is not there is an error that names the call.
        let e = set_process_policy(pid, Policy::Idle).unwrap_err();
        assert!(e.to_string().starts_with("reading /proc/PID/task"), "{e}");
    }

    #[test]
    fn give_way_yields_once_per_busy_period_and_after_every_idle_pass() {
        let t0 = std::time::Instant::now();
        let mut g = GiveWay::new(t0);
        assert!(!g.tick(t0, false));
        assert!(!g.tick(t0 + GIVE_WAY_EVERY / 2, false));
        assert!(g.tick(t0 + GIVE_WAY_EVERY, false));
        let later = std::time::Instant::now() + 3 * GIVE_WAY_EVERY;
        g.slept(later);
        assert!(!g.due(later + GIVE_WAY_EVERY / 2, false));
        assert!(g.due(later + GIVE_WAY_EVERY, false));
        // A pass that found nothing gives way at once, however recent the last yield.
        assert!(g.due(later, true));
        assert!(g.tick(later + GIVE_WAY_EVERY / 4, true));
    }

    #[test]
    fn a_poller_yields_each_period_and_sleeps_only_when_crowded() {
        let t0 = std::time::Instant::now();
        let asked = std::cell::Cell::new(0);
        let ask = |answer: bool| {
            let asked = &asked;
            move || {
                asked.set(asked.get() + 1);
                answer
            }
        };
        let mut b = PollBackoff::new(t0);
        // Within a period: spin, and the CPUs are not even looked at.
        assert_eq!(b.step(t0, ask(true)), PollStep::Spin);
        assert_eq!(b.step(t0 + POLL_YIELD_EVERY / 2, ask(true)), PollStep::Spin);
        assert_eq!(asked.get(), 0);
        // A CPU of its own: yield once a period, for ever (asked once the patience is over).
        for k in 1..1000u32 {
            let now = t0 + POLL_YIELD_EVERY * k;
            assert_eq!(b.step(now, ask(false)), PollStep::Yield, "period {k}");
            b.resumed(now);
            assert_eq!(b.step(now, ask(false)), PollStep::Spin);
        }
        let patience = (CROWDED_PATIENCE.as_nanos() / POLL_YIELD_EVERY.as_nanos()) as usize;
        assert_eq!(asked.get(), 1000 - patience);
        let before = asked.get();
        // Crowded: still yields until the patience is over, then sleeps at the next period.
        let mut b = PollBackoff::new(t0);
        let mut now = t0;
        while now + POLL_YIELD_EVERY < t0 + CROWDED_PATIENCE {
            now += POLL_YIELD_EVERY;
            assert_eq!(b.step(now, ask(true)), PollStep::Yield, "{:?}", now - t0);
        }
        assert_eq!(asked.get(), before, "not asked during the patience");
        let t1 = t0 + CROWDED_PATIENCE;
        b.resumed(t1);
        assert_eq!(b.step(t1, ask(true)), PollStep::Spin);
        assert_eq!(b.step(t1 + POLL_YIELD_EVERY, ask(true)), PollStep::Sleep);
        // Back from the sleep, no longer crowded (the other poller sleeps now).
        b.resumed(t1 + POLL_YIELD_EVERY * 500);
        assert_eq!(
            b.step(t1 + POLL_YIELD_EVERY * 501, ask(false)),
            PollStep::Yield
        );
    }

    #[test]
    fn pollers_outnumber_their_cpus_only_when_they_share_them() {
        /// This poller's CPUs, the others', and whether they are outnumbered.
        type Case<'a> = (&'a [usize], &'a [&'a [usize]], bool);
        let cases: [Case; 9] = [
            (&[0], &[], false),
            (&[0], &[&[1]], false),
            (&[0], &[&[0]], true),
            (&[0, 1], &[&[0, 1]], false),
            (&[0, 1], &[&[0, 1], &[0, 1]], true),
            (&[0, 1], &[&[0], &[1]], true),
            // The others' own CPUs count for them.
            (&[0], &[&[0, 1]], false),
            // Unknown CPUs (a poller that never asked yet) are left out.
            (&[0], &[&[]], false),
            (&[], &[&[0], &[0]], false),
        ];
        for (mine, others, want) in cases {
            assert_eq!(outnumbered(mine, others), want, "{mine:?} with {others:?}");
        }
    }

    #[test]
    fn a_poller_that_sleeps_leaves_the_cpu_to_the_others() {
        // CPUs no machine here has: no other test's poller shares them.
        const CPU: usize = 4093;
        let a = Pollers::register();
        let b = Pollers::register();
        assert!(!a.crowded(&[CPU]), "b's CPUs are not known yet");
        assert!(b.crowded(&[CPU]), "two awake on one CPU");
        // b is asleep now: a has the CPU to itself and keeps polling.
        assert!(!a.crowded(&[CPU]));
        assert!(!a.crowded(&[CPU]));
        b.woke();
        assert!(a.crowded(&[CPU]), "b is back");
        b.woke();
        a.woke();
        assert!(!a.crowded(&[CPU, CPU + 1]), "two CPUs for two");
        drop(b);
        assert!(!a.crowded(&[CPU]), "b is gone");
    }

    #[test]
    fn sched_eperm_is_named_and_explained() {
        let e = SchedError::from_errno("pthread_setschedparam", "SCHED_FIFO", libc::EPERM);
        assert!(matches!(e, SchedError::NotPermitted { what: "SCHED_FIFO" }));
        let msg = e.to_string();
        assert!(
            msg.starts_with("SCHED_FIFO refused: not permitted"),
            "{msg}"
        );
        assert!(
            msg.contains("CAP_SYS_NICE") && msg.contains("ulimit -r"),
            "{msg}"
        );
        let e = SchedError::from_errno("pthread_setschedparam", "SCHED_FIFO", libc::ESRCH);
        assert!(matches!(
            e,
            SchedError::Os {
                call: "pthread_setschedparam",
                ..
            }
        ));
    }

    #[test]
    fn an_adaptive_loop_sleeps_only_after_a_pass_that_moved_nothing() {
        let t0 = std::time::Instant::now();
        let mut idle = Idler::new(IdleWait::Adaptive, t0, false);
        assert!(!idle.may_sleep(t0 + SPIN * 400), "no pass yet");
        // A busy pass that ended long after the last one (a loaded CPU): its receive
        // rings were not found empty, so no peer would wake a sleep now.
        assert_eq!(idle.after_pass(true, t0 + SPIN * 3), Next::Again);
        assert!(!idle.may_sleep(t0 + SPIN * 10));
        // An idle pass: every ring was found empty, but the spin is not over yet.
        assert_eq!(
            idle.after_pass(false, t0 + SPIN * 3 + SPIN / 2),
            Next::Again
        );
        assert!(idle.may_sleep(t0 + SPIN * 4));
        assert_eq!(idle.after_pass(false, t0 + SPIN * 4), Next::Sleep);
        // Work again (a management request, a new link): no sleep until the next idle pass.
        idle.busy(t0 + SPIN * 5);
        assert!(!idle.may_sleep(t0 + SPIN * 20));
        assert_eq!(idle.after_pass(false, t0 + SPIN * 20), Next::Sleep);
    }

    #[test]
    fn polling_and_yielding_loops_never_sleep() {
        let t0 = std::time::Instant::now();
        for wait in [IdleWait::Poll, IdleWait::Yield] {
            let mut idle = Idler::new(wait, t0, true);
            for k in 1..10 {
                assert_eq!(idle.after_pass(false, t0 + SPIN * k * 100), Next::Again);
            }
        }
    }
}
