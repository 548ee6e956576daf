//! Notification: how a consumer waits for a ring and how a producer wakes it.
//!
//! Four modes per channel ([`Notify`]). The costs are those of this machine (2 vCPUs,
//! DESIGN §6): a busy-polled shared-memory round trip is 0.45 µs; a kernel wake-up that
//! crosses to the other vCPU costs 20–45 µs, because an idle vCPU halts.
//!
//! - **busy polling**: the consumer spins on the producer's index. Fastest (the cell is seen
//!   within a cache-line transfer), but a bare spin ([`Waiter::BusyPoll`]) owns a vCPU for
//!   as long as it waits: a daemon woken on that vCPU, or a second poller on it, waits a
//!   whole time slice (8 ms per round trip on the direct path, two pollers on two vCPUs).
//!   So the polling mode applications get ([`Waiter::Poll`]) backs off
//!   ([`sched::PollBackoff`]): it yields the CPU every microsecond or so while it sees
//!   nothing, and when a wait lasts (200 µs) while this process's pollers outnumber their
//!   CPUs it sleeps on the eventfd exactly as the eventfd mode does. For a dedicated core
//!   and a busy channel.
//! - **adaptive** (*spin, then block*): spin on the ring for [`AdaptivePolicy::spin`]
//!   (30 µs by default, about one cross-vCPU wake-up), then sleep on an eventfd exactly as
//!   the eventfd mode does. A cell that comes during the spin costs no system call on
//!   either side and is seen at polling speed; a cell that comes later costs what an
//!   eventfd wake-up costs, after at most one spin of wasted CPU. That is within twice
//!   the best choice made in hindsight, whatever the gaps between cells, and the CPU
//!   spent waiting is bounded by the spin, so an idle channel costs nothing and a poller
//!   that shares its vCPU hands it over after the spin instead of after a time slice. No
//!   `sched_yield` by default ([`AdaptivePolicy::yields`]): with CPU-bound processes on
//!   the same vCPU, a yield gives the CPU away for one of their whole time slices, which
//!   is worse than blocking (the earlier spin/yield/timed-sleep design measured 3.5–7.5
//!   ms median wake-ups with 2 and 4 CPU-bound disturbers; this one measures within
//!   1.0–1.16× of a raw eventfd wake-up there, `natm perf wakeup`). A waiter whose spins
//!   keep ending empty stops spinning in full ([`Spinner`]): with more busy threads than
//!   vCPUs an empty spin starves the very producer it waits for. For a channel whose
//!   traffic comes in bursts with idle gaps: the default choice.
//! - **eventfd** (the synchronous user-level interrupt): the consumer blocks in `poll` on
//!   an eventfd (or in the application's own epoll, see [`Waiter::prepare_to_sleep`]).
//!   Every wake-up is a kernel wake-up (20–45 µs across vCPUs) plus the producer's
//!   `write`; no CPU is spent waiting. For channels that are mostly idle, or when the
//!   consumer must sleep in an epoll set with other fds.
//! - **signal** (the asynchronous one): a real-time signal sent to the consumer's thread
//!   with `rt_tgsigqueueinfo`, the channel id in `si_value`; the handler records the
//!   channel in an atomic bitmap and nothing else (async-signal-safe). It costs what the
//!   eventfd mode costs, and it interrupts a thread that is busy with something else.
//!
//! The three modes that sleep share the handshake on the ring's consumer-waiting flag, so
//! the fast path makes no system call: the producer writes the eventfd or sends the signal
//! only when the consumer announced it is about to sleep. An adaptive consumer that is
//! spinning has not announced anything, so the producer does not kick it.
//!
//! ```text
//! consumer                              producer
//! (drain the eventfd)
//! flag = 1            (Relaxed)         tail = t + n        (Release)
//! fence(SeqCst)                         fence(SeqCst)
//! if tail moved: flag = 0, run          if flag == 1: flag = 0, kick
//! else sleep until kicked
//! ```
//!
//! The fences make this a Dekker handshake: of the two stores, at least one is seen by the
//! other side's load. Either the consumer sees the new tail and does not sleep, or the
//! producer sees the flag and kicks (an eventfd count or a pending signal that is not lost
//! if it arrives before the consumer blocks).
//!
//! [`Waiter::wait`] drains the eventfd *before* it announces a sleep, not after it wakes:
//! the wake-up path is then one `poll` returning and nothing else (the count a kick leaves
//! is read away before the next sleep, off the latency path). This loses no wake-up: a
//! kick meant for a sleep is written only after the producer saw that sleep's flag, which
//! the consumer stored after its drain, so no drain can eat it. A count left over from an
//! earlier kick makes at worst one `poll` return at once (the loop re-checks the ring and
//! drains). Applications that sleep in their own epoll use [`Waiter::prepare_to_sleep`] and
//! [`Waiter::finish_sleep`], which drains after the sleep so that a level-triggered epoll
//! does not keep reporting the fd.
//!
//! An eventfd that comes from another process is checked before it is used
//! ([`check_eventfd`]: it must be an eventfd in counter mode) and made non-blocking, so a
//! hostile peer that fills or drains the counter makes a kick fail (counted) or a drain
//! find nothing, instead of blocking either side. (That is also why the sleep is a `poll`
//! with a timeout, not a blocking `read`: a peer that drains the count could otherwise
//! hold the consumer in `read` forever.)

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};

use crate::{sched, signal};

/// Why an fd handed over by another process was refused as an eventfd.
#[derive(Debug, thiserror::Error)]
pub enum EventFdError {
    /// The fd is something else (a pipe, a socket, a file, another anonymous inode).
    #[error("not an eventfd: the fd is {found:?}")]
    NotEventFd {
        /// What `/proc/self/fd/N` names it.
        found: String,
    },
    /// An eventfd in semaphore mode: a read takes 1 from the count instead of all of it,
    /// so a drain would leave it readable and a waiter would spin.
    #[error("the eventfd is in semaphore mode")]
    Semaphore,
    /// The fd could not be inspected (no `/proc` mounted, or `fcntl` failed).
    #[error("{call}: {source}")]
    Os {
        /// What was attempted.
        call: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
}

/// Checks that `fd` (handed over by another process) is an eventfd in counter mode, and
/// sets `O_NONBLOCK` on it.
///
/// How: `/proc/self/fd/N` of an eventfd is the magic link `anon_inode:[eventfd]`. Every
/// other kind of fd reads differently (`pipe:[…]`, `socket:[…]`, `anon_inode:[timerfd]`,
/// …), and a file's link is an absolute path, which always starts with `/`, so no file
/// can be named so as to pass. `fstat` alone cannot tell: every anonymous inode (eventfd,
/// timerfd, signalfd, epoll) shares one inode with no file type. Then `/proc/self/fdinfo/N`
/// is read for `eventfd-semaphore: 1` (kernels since 6.6 show the mode; older ones do not,
/// and the check passes). Last, `O_NONBLOCK` is set with `fcntl(F_SETFL)`: an eventfd
/// write blocks when the count would pass 2⁶⁴−2 and a read blocks at 0, and the peer
/// holds the same eventfd and can bring it to either state; non-blocking, a kick fails
/// with `EAGAIN` (counted in [`Waker::kick_failures`]) and a drain finds nothing.
///
/// What this cannot stop: `O_NONBLOCK` belongs to the open file description, which the
/// peer shares, so a peer can clear it again afterwards. An eventfd cannot be reopened
/// through `/proc` (the kernel refuses with `ENXIO`), so there is no private description
/// to take instead; the defence against that peer is the waiter's timeout.
pub fn check_eventfd(fd: &OwnedFd) -> Result<(), EventFdError> {
    use std::os::fd::AsRawFd;
    let n = fd.as_raw_fd();
    let link = rustix::fs::readlink(format!("/proc/self/fd/{n}"), Vec::new()).map_err(|e| {
        EventFdError::Os {
            call: "readlink /proc/self/fd",
            source: e.into(),
        }
    })?;
    let found = link.to_string_lossy();
    if found != "anon_inode:[eventfd]" {
        return Err(EventFdError::NotEventFd {
            found: found.into_owned(),
        });
    }
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{n}")).map_err(|e| {
        EventFdError::Os {
            call: "read /proc/self/fdinfo",
            source: e,
        }
    })?;
    let semaphore = info.lines().any(|l| {
        l.strip_prefix("eventfd-semaphore:")
            .is_some_and(|v| v.trim() != "0")
    });
    if semaphore {
        return Err(EventFdError::Semaphore);
    }
    let os = |call| {
        move |e: rustix::io::Errno| EventFdError::Os {
            call,
            source: e.into(),
        }
    };
    let flags = rustix::fs::fcntl_getfl(fd).map_err(os("fcntl(F_GETFL)"))?;
    if !flags.contains(rustix::fs::OFlags::NONBLOCK) {
        rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)
            .map_err(os("fcntl(F_SETFL)"))?;
    }
    Ok(())
}

/// A consumer end that can be waited on.
pub trait Wakeable {
    /// True when the ring has entries (re-reads the producer's index with Acquire), or when
    /// it is broken (so waiters do not sleep on a dead ring).
    fn ready(&mut self) -> bool;
    /// The ring's consumer-waiting flag in shared memory.
    fn waiting_flag(&self) -> &AtomicU64;
}

/// How a channel notifies its consumer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Notify {
    /// Spin on the ring.
    BusyPoll,
    /// Spin for a bounded time, then block on an eventfd.
    Adaptive(AdaptivePolicy),
    /// Block on an eventfd.
    EventFd,
    /// A real-time signal to the consumer's thread.
    Signal,
}

/// The adaptive mode's steps: spin, optionally yield, then block on the eventfd.
///
/// The spin is the whole trade-off: a cell that comes within it is seen at polling speed
/// with no system call on either side; one that comes later pays an eventfd wake-up plus
/// nothing (the spin is over by then). Spinning about as long as a blocking wake-up costs
/// (20–45 µs across vCPUs here) keeps the total within twice the best choice in hindsight.
/// Longer spins buy little and burn a CPU that a CPU-bound neighbour may want; under
/// `SCHED_OTHER` a long spin also risks being preempted mid-spin, and a cell published
/// then waits for the consumer's next time slice (no kick: it was not asleep).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AdaptivePolicy {
    /// How long to spin on the ring (with a spin-loop hint; the clock is read every few
    /// dozen checks) before blocking. Zero blocks at once, as the eventfd mode does.
    pub spin: Duration,
    /// Checks each after a `sched_yield`, between the spin and the sleep. 0 by default:
    /// when CPU-bound processes share the vCPU, a yield hands it to one of them for a
    /// whole time slice (milliseconds), far longer than the sleep it was meant to avoid.
    /// Only useful when the vCPU's other runnable threads are known to be short-lived.
    pub yields: u32,
}

impl AdaptivePolicy {
    /// The default spin: about one cross-vCPU wake-up here.
    pub const DEFAULT_SPIN: Duration = Duration::from_micros(30);
}

/// An adaptive waiter's judgement of its spin: whether spinning the policy's whole time
/// has been finding work.
///
/// An empty spin is CPU taken from whoever would have produced the work, and with more
/// busy threads than vCPUs that makes the spin's own failure: on the lab's direct path
/// (two applications and three daemons on two vCPUs) 85–94 % of the transport threads'
/// 30 µs spins ended empty under 1 % cell loss, while their sleeps lasted 15–20 µs; the
/// daemons waited behind the spinners and the round trip grew from 0.1–0.3 ms to 1.4–3.7
/// ms. So the waiter keeps a moving hit rate of its full spins; while it is below a half
/// it spins only [`SHORT_SPIN`], and every [`PROBE_EVERY`]th wait it spins in full again
/// to see whether the hits have come back. A channel whose work comes within the spin
/// keeps spinning in full. Measured on that path (2026-11-28, alternating with the
/// fixed spin): 1,500 B at 1 % loss 53–56 → 84–95 Mbit/s; the raw 8-byte round trip
/// 122–173 → 74–75 µs; lossless 8 KiB unchanged. Each µs of spin left cost there (a 3 µs
/// short spin: ~85 Mbit/s; a full probe every 8th wait: ~80).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Spinner {
    policy: AdaptivePolicy,
    /// Hits per [`RATE_ONE`] of the recent full spins (a moving average, weight 1/8).
    rate: u32,
    /// Waits since the last full spin.
    since_full: u32,
}

/// A short spin's length: a few dozen looks at the ring, for work already on its way.
pub const SHORT_SPIN: Duration = Duration::from_micros(1);
/// While the short spin is in use, one wait in this many spins in full.
pub const PROBE_EVERY: u32 = 64;
/// The hit rate's fixed-point one.
const RATE_ONE: u32 = 1024;

impl Spinner {
    /// A spinner that starts out spinning in full.
    pub fn new(policy: AdaptivePolicy) -> Spinner {
        Spinner {
            policy,
            rate: RATE_ONE,
            since_full: 0,
        }
    }

    /// The policy it follows.
    pub fn policy(&self) -> AdaptivePolicy {
        self.policy
    }

    /// Whether its next wait spins in full: the recent full spins found work at least
    /// half the time, or a probe is due.
    pub fn spins_in_full(&self) -> bool {
        self.rate * 2 >= RATE_ONE || self.since_full + 1 >= PROBE_EVERY
    }

    /// The next wait's spin, and whether it is a full one ([`Spinner::learn`] takes its
    /// outcome).
    pub(crate) fn plan(&mut self) -> (Duration, bool) {
        if self.spins_in_full() {
            self.since_full = 0;
            (self.policy.spin, true)
        } else {
            self.since_full += 1;
            (SHORT_SPIN.min(self.policy.spin), false)
        }
    }

    /// A full spin's outcome: whether it found work.
    pub(crate) fn learn(&mut self, hit: bool) {
        let sample = if hit { RATE_ONE } else { 0 };
        self.rate = (self.rate * 7 + sample) / 8;
    }
}

impl From<AdaptivePolicy> for Spinner {
    fn from(policy: AdaptivePolicy) -> Spinner {
        Spinner::new(policy)
    }
}

impl Default for AdaptivePolicy {
    /// Spin [`AdaptivePolicy::DEFAULT_SPIN`] (30 µs), no yields, then block.
    fn default() -> Self {
        AdaptivePolicy {
            spin: Self::DEFAULT_SPIN,
            yields: 0,
        }
    }
}

/// The producer's side of notification: what it does after publishing entries.
pub enum Waker {
    /// Nothing: the consumer polls.
    None,
    /// Write the eventfd when the consumer sleeps (eventfd and adaptive modes).
    EventFd(EventFdWaker),
    /// Send the signal when the consumer sleeps.
    Signal(SignalWaker),
}

impl Waker {
    /// Called after every publishing store (Release). Only the blocking modes do
    /// anything: a SeqCst fence and one load of the flag; a system call only when the
    /// consumer announced it sleeps. A failed kick is counted, not fatal: the consumer's
    /// wait is bounded by its timeout.
    #[inline]
    pub(crate) fn after_publish(&self, flag: &AtomicU64) {
        if let Waker::None = self {
            return;
        }
        self.after_publish_slow(flag);
    }

    #[inline(never)]
    fn after_publish_slow(&self, flag: &AtomicU64) {
        let kick = match self {
            Waker::None => return,
            Waker::EventFd(w) => &w.kicks,
            Waker::Signal(w) => &w.kicks,
        };
        fence(Ordering::SeqCst);
        if flag.load(Ordering::Relaxed) != 0 && flag.swap(0, Ordering::Relaxed) != 0 {
            let ok = match self {
                Waker::None => true,
                Waker::EventFd(w) => rustix::io::write(&*w.fd, &1u64.to_ne_bytes()).is_ok(),
                Waker::Signal(w) => signal::send(w.target).is_ok(),
            };
            kick.attempts.fetch_add(1, Ordering::Relaxed);
            if !ok {
                kick.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// System calls made to wake the consumer so far.
    pub fn kicks(&self) -> u64 {
        match self {
            Waker::None => 0,
            Waker::EventFd(w) => w.kicks.attempts.load(Ordering::Relaxed),
            Waker::Signal(w) => w.kicks.attempts.load(Ordering::Relaxed),
        }
    }

    /// Kicks whose system call failed.
    pub fn kick_failures(&self) -> u64 {
        match self {
            Waker::None => 0,
            Waker::EventFd(w) => w.kicks.failures.load(Ordering::Relaxed),
            Waker::Signal(w) => w.kicks.failures.load(Ordering::Relaxed),
        }
    }
}

#[derive(Default)]
struct Kicks {
    attempts: AtomicU64,
    failures: AtomicU64,
}

/// The producer's handle on an eventfd.
pub struct EventFdWaker {
    fd: Arc<OwnedFd>,
    kicks: Kicks,
}

/// The producer's target for a signal.
pub struct SignalWaker {
    target: signal::Target,
    kicks: Kicks,
}

impl SignalWaker {
    /// Wakes `target` (from [`Waiter::signal_target`]).
    pub fn new(target: signal::Target) -> Self {
        SignalWaker {
            target,
            kicks: Kicks::default(),
        }
    }
}

/// The consumer's side of notification.
pub enum Waiter {
    /// Spin until ready, and nothing else: for a thread that has a CPU of its own and a
    /// producer that never kicks. [`Waiter::Poll`] is the polling mode that shares.
    BusyPoll,
    /// Poll the ring, giving the CPU away when somebody else needs it: yield now and then,
    /// and sleep on the eventfd (the producer's waker is an eventfd waker) when this
    /// process's pollers outnumber their CPUs ([`sched::PollBackoff`]).
    Poll(Arc<OwnedFd>, sched::Poller),
    /// Spin (for as long as the [`Spinner`] judges it pays), then block in poll on the
    /// eventfd as [`Waiter::EventFd`] does; the producer's waker is an eventfd waker on the
    /// same eventfd ([`Waiter::adaptive`]).
    Adaptive(Spinner, Arc<OwnedFd>),
    /// Block in poll on an eventfd.
    EventFd(Arc<OwnedFd>),
    /// Block in ppoll with the signal unblocked.
    Signal(signal::Receiver),
}

/// Why [`Waiter::wait`] returned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WaitOutcome {
    /// The ring has entries (or is broken).
    Ready,
    /// The timeout passed first.
    TimedOut,
}

impl Waiter {
    /// An eventfd waiter and the producer's waker for it (same process; across processes
    /// the fd travels with the region's fd, and [`Waiter::eventfd_from`] takes it).
    pub fn eventfd() -> io::Result<(Waiter, Waker)> {
        let fd = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
        Ok((
            Waiter::EventFd(fd.clone()),
            Waker::EventFd(EventFdWaker {
                fd,
                kicks: Kicks::default(),
            }),
        ))
    }

    /// An adaptive waiter and the producer's waker for it: an eventfd pair as
    /// [`Waiter::eventfd`] makes, which the waiter sleeps on once its spin is over. The
    /// waker kicks only a consumer that announced its sleep, never one that spins.
    pub fn adaptive(policy: AdaptivePolicy) -> io::Result<(Waiter, Waker)> {
        let (w, waker) = Waiter::eventfd()?;
        let Waiter::EventFd(fd) = w else {
            unreachable!("Waiter::eventfd makes an eventfd waiter")
        };
        Ok((Waiter::Adaptive(Spinner::new(policy), fd), waker))
    }

    /// The waker side for an eventfd received from the consumer: checked to be an eventfd
    /// in counter mode and made non-blocking first (see [`check_eventfd`]), so a kick can
    /// never block this producer.
    pub fn eventfd_waker(fd: OwnedFd) -> Result<Waker, EventFdError> {
        check_eventfd(&fd)?;
        Ok(Waker::EventFd(EventFdWaker {
            fd: Arc::new(fd),
            kicks: Kicks::default(),
        }))
    }

    /// A polling waiter ([`Waiter::Poll`]) and the producer's waker for it: an eventfd
    /// pair as [`Waiter::eventfd`] makes, which the waiter sleeps on when it backs off.
    pub fn poll() -> io::Result<(Waiter, Waker)> {
        let (w, waker) = Waiter::eventfd()?;
        let Waiter::EventFd(fd) = w else {
            unreachable!("Waiter::eventfd makes an eventfd waiter")
        };
        Ok((Waiter::Poll(fd, sched::Pollers::register()), waker))
    }

    /// A polling waiter ([`Waiter::Poll`]) that sleeps, when it backs off, on `fd`
    /// (received from elsewhere: checked and made non-blocking first, see
    /// [`check_eventfd`]); it counts among this process's pollers while it lives.
    pub fn poll_from(fd: OwnedFd) -> Result<Waiter, EventFdError> {
        check_eventfd(&fd)?;
        Ok(Waiter::Poll(Arc::new(fd), sched::Pollers::register()))
    }

    /// The waiter side for an eventfd received from elsewhere: checked and made
    /// non-blocking first (see [`check_eventfd`]), so draining it can never block.
    pub fn eventfd_from(fd: OwnedFd) -> Result<Waiter, EventFdError> {
        check_eventfd(&fd)?;
        Ok(Waiter::EventFd(Arc::new(fd)))
    }

    /// A signal waiter for `channel` on the calling thread: installs the handler for
    /// `signo` (once per process) and blocks `signo` in this thread except while it waits,
    /// so a signal that comes early stays pending instead of being missed. Must be used
    /// on the thread that creates it.
    pub fn signal(signo: i32, channel: u32) -> io::Result<Waiter> {
        Ok(Waiter::Signal(signal::Receiver::new(signo, channel)?))
    }

    /// The mode this waiter implements.
    pub fn mode(&self) -> Notify {
        match self {
            Waiter::BusyPoll | Waiter::Poll(..) => Notify::BusyPoll,
            Waiter::Adaptive(s, _) => Notify::Adaptive(s.policy()),
            Waiter::EventFd(_) => Notify::EventFd,
            Waiter::Signal(_) => Notify::Signal,
        }
    }

    /// For a signal waiter, where the producer sends the signal.
    pub fn signal_target(&self) -> Option<signal::Target> {
        match self {
            Waiter::Signal(r) => Some(r.target()),
            _ => None,
        }
    }

    /// The fd to register in an epoll set (eventfd mode; in adaptive mode, the one it
    /// sleeps on after its spin).
    pub fn as_fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Waiter::EventFd(fd) | Waiter::Adaptive(_, fd) | Waiter::Poll(fd, _) => Some(fd.as_fd()),
            _ => None,
        }
    }

    /// For an application with its own epoll loop: announces that the consumer is about
    /// to sleep. Returns false if the ring already has entries (the flag is cleared again
    /// and the caller must not sleep); true if it may sleep, after which it calls
    /// [`Waiter::finish_sleep`].
    pub fn prepare_to_sleep(&self, ring: &mut impl Wakeable) -> bool {
        announce_sleep(ring)
    }

    /// After a sleep: clears the flag and drains the eventfd (so that the application's
    /// level-triggered epoll stops reporting it).
    pub fn finish_sleep(&self, ring: &mut impl Wakeable) {
        ring.waiting_flag().store(0, Ordering::Relaxed);
        if let Waiter::EventFd(fd) | Waiter::Adaptive(_, fd) | Waiter::Poll(fd, _) = self {
            drain(fd);
        }
    }

    /// Waits until `ring` is ready or `timeout` passes (a timeout too long for a deadline,
    /// such as `Duration::MAX`, waits a century).
    pub fn wait(&mut self, ring: &mut impl Wakeable, timeout: Duration) -> io::Result<WaitOutcome> {
        const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
        let deadline = Instant::now() + timeout.min(CENTURY);
        match self {
            Waiter::BusyPoll => loop {
                for _ in 0..64 {
                    if ring.ready() {
                        return Ok(WaitOutcome::Ready);
                    }
                    std::hint::spin_loop();
                }
                if Instant::now() >= deadline {
                    return Ok(WaitOutcome::TimedOut);
                }
            },
            Waiter::Poll(fd, poller) => poll_backing_off(fd, poller, ring, deadline),
            Waiter::Adaptive(spinner, fd) => {
                let (time, full) = spinner.plan();
                let spun = spin(ring, time, spinner.policy().yields, deadline);
                if full && spun != Spun::CutShort {
                    spinner.learn(spun == Spun::Ready);
                }
                if spun == Spun::Ready {
                    return Ok(WaitOutcome::Ready);
                }
                sleep_on_eventfd(fd, ring, deadline)
            }
            Waiter::EventFd(fd) => sleep_on_eventfd(fd, ring, deadline),
            Waiter::Signal(r) => loop {
                if !announce_sleep(ring) {
                    return Ok(WaitOutcome::Ready);
                }
                let now = Instant::now();
                if now >= deadline {
                    ring.waiting_flag().store(0, Ordering::Relaxed);
                    return Ok(WaitOutcome::TimedOut);
                }
                let slept = r.sleep(deadline - now);
                ring.waiting_flag().store(0, Ordering::Relaxed);
                slept?;
            },
        }
    }
}

/// Reads the eventfd's count away. Non-blocking (every eventfd here is): `EAGAIN` when
/// the count is already 0, which is fine.
fn drain(fd: &OwnedFd) {
    let mut buf = [0u8; 8];
    let _ = rustix::io::read(fd, &mut buf);
}

/// The consumer's half of the handshake: unless the ring is ready, stores the flag,
/// fences and re-checks. True if the caller may sleep (the flag is set), false if the ring
/// is ready (the flag is clear).
fn announce_sleep(ring: &mut impl Wakeable) -> bool {
    if ring.ready() {
        return false;
    }
    ring.waiting_flag().store(1, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    if ring.ready() {
        ring.waiting_flag().store(0, Ordering::Relaxed);
        return false;
    }
    true
}

/// Ready checks between two readings of the clock while spinning (a few µs with the
/// spin-loop hint).
const SPIN_CHECKS: u32 = 32;

/// How a spin ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Spun {
    /// The ring became ready.
    Ready,
    /// The whole spin passed with nothing.
    Empty,
    /// The deadline came before the spin's end, with nothing.
    CutShort,
}

/// The adaptive mode's first phase: spins on `ring` for `time` (or until `deadline`), then
/// yields `yields` times. The flag is never set here, so a producer publishing meanwhile
/// makes no system call.
fn spin(ring: &mut impl Wakeable, time: Duration, yields: u32, deadline: Instant) -> Spun {
    let start = Instant::now();
    let (end, cut) = match start.checked_add(time) {
        Some(e) if e <= deadline => (e, false),
        _ => (deadline, true),
    };
    loop {
        for _ in 0..SPIN_CHECKS {
            if ring.ready() {
                return Spun::Ready;
            }
            core::hint::spin_loop();
        }
        if Instant::now() >= end {
            break;
        }
    }
    for _ in 0..yields {
        if ring.ready() {
            return Spun::Ready;
        }
        std::thread::yield_now();
    }
    if cut { Spun::CutShort } else { Spun::Empty }
}

/// The longest sleep of a polling waiter that backs off: a producer that does not kick
/// (an older daemon whose waker for a polling consumer is none) costs at most this.
const POLL_SLEEP_MAX: Duration = Duration::from_millis(1);

/// The polling mode's wait ([`Waiter::Poll`]): spins on `ring`, yielding and sleeping as
/// [`sched::PollBackoff`] decides.
fn poll_backing_off(
    fd: &OwnedFd,
    poller: &sched::Poller,
    ring: &mut impl Wakeable,
    deadline: Instant,
) -> io::Result<WaitOutcome> {
    // The clock is read only once a first round of looks found nothing, the CPUs only
    // once a period passed.
    let mut backoff: Option<sched::PollBackoff> = None;
    let mut cpus: Option<Vec<usize>> = None;
    loop {
        for _ in 0..SPIN_CHECKS {
            if ring.ready() {
                return Ok(WaitOutcome::Ready);
            }
            core::hint::spin_loop();
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(WaitOutcome::TimedOut);
        }
        let b = backoff.get_or_insert_with(|| sched::PollBackoff::new(now));
        let crowded = || {
            let cpus = cpus.get_or_insert_with(|| sched::allowed_cpus().unwrap_or_default());
            poller.crowded(cpus)
        };
        match b.step(now, crowded) {
            sched::PollStep::Spin => {}
            sched::PollStep::Yield => {
                std::thread::yield_now();
                b.resumed(Instant::now());
            }
            sched::PollStep::Sleep => {
                let until = deadline.min(now + POLL_SLEEP_MAX);
                let slept = sleep_on_eventfd(fd, ring, until);
                poller.woke();
                if slept? == WaitOutcome::Ready {
                    return Ok(WaitOutcome::Ready);
                }
                b.resumed(Instant::now());
            }
        }
    }
}

/// Sleeps in `poll` on `fd` until `ring` is ready or `deadline` passes (eventfd mode, and
/// adaptive mode after its spin).
///
/// The count a kick leaves is drained before the next sleep is announced, not after the
/// wake-up: the wake-up path is `poll` returning and one look at the ring. The drain comes
/// before the flag is stored, and a kick for this sleep is written only after the producer
/// saw the flag, so no kick for this sleep can be drained: the handshake stays
/// lost-wake-up free. A stale count (a kick that raced with a timeout, or a peer's write)
/// makes one `poll` return at once; the loop then re-checks the ring and drains.
fn sleep_on_eventfd(
    fd: &OwnedFd,
    ring: &mut impl Wakeable,
    deadline: Instant,
) -> io::Result<WaitOutcome> {
    loop {
        if ring.ready() {
            return Ok(WaitOutcome::Ready);
        }
        drain(fd);
        if !announce_sleep(ring) {
            return Ok(WaitOutcome::Ready);
        }
        let now = Instant::now();
        if now >= deadline {
            ring.waiting_flag().store(0, Ordering::Relaxed);
            return Ok(WaitOutcome::TimedOut);
        }
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        let ts =
            rustix::event::Timespec::try_from(deadline - now).unwrap_or(rustix::event::Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            });
        let slept = match poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
            Err(e) => Err(io::Error::from(e)),
        };
        ring.waiting_flag().store(0, Ordering::Relaxed);
        slept?;
    }
}
