//! Notification: how a consumer waits for a ring and how a producer wakes it.
//!
//! Four modes per channel ([`Notify`]):
//! - **busy polling**: the consumer spins on the producer's index. Fastest (a shared-memory
//!   round trip costs 0.45 µs across cores here), but it owns a vCPU.
//! - **adaptive**: spin `spins` times, then `sched_yield` `yields` times, then sleep with
//!   an exponential back-off bounded by `sleep_max`. On a 2-vCPU machine two busy pollers
//!   that land on one vCPU take 8 ms per round trip, because each burns its whole time
//!   slice before the other runs; yielding hands the vCPU over (1.3 µs round trip), and
//!   the bounded sleep stops an idle channel from costing CPU at all.
//! - **eventfd** (the synchronous user-level interrupt): the consumer blocks in `poll` on
//!   an eventfd (or in the application's own epoll, see [`Waiter::prepare_to_sleep`]).
//! - **signal** (the asynchronous one): a real-time signal sent to the consumer's thread
//!   with `rt_tgsigqueueinfo`, the channel id in `si_value`; the handler records the
//!   channel in an atomic bitmap and nothing else (async-signal-safe).
//!
//! The two blocking modes share the handshake on the ring's consumer-waiting flag, so the
//! fast path makes no system call: the producer writes the eventfd or sends the signal
//! only when the consumer announced it is about to sleep.
//!
//! ```text
//! consumer                              producer
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
//! An eventfd that comes from another process is checked before it is used
//! ([`check_eventfd`]: it must be an eventfd in counter mode) and made non-blocking, so a
//! hostile peer that fills or drains the counter makes a kick fail (counted) or a drain
//! find nothing, instead of blocking either side.
//!
//! Cost: wake-ups across vCPUs take 20–45 µs here (DESIGN §6), which is why the blocking
//! modes are for idle channels and the polling modes for busy ones.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};

use crate::signal;

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
    /// Spin, then yield, then sleep.
    Adaptive(AdaptivePolicy),
    /// Block on an eventfd.
    EventFd,
    /// A real-time signal to the consumer's thread.
    Signal,
}

/// The adaptive mode's steps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AdaptivePolicy {
    /// Checks with a spin-loop hint before yielding.
    pub spins: u32,
    /// Checks each after a `sched_yield` before sleeping.
    pub yields: u32,
    /// First sleep; doubled each time up to `sleep_max`.
    pub sleep_min: Duration,
    /// Longest single sleep: the bound on the latency an idle channel adds.
    pub sleep_max: Duration,
}

impl Default for AdaptivePolicy {
    /// 2000 spins (a few µs, more than a cross-core round trip), 100 yields, then sleeps
    /// of 10 µs up to 1 ms.
    fn default() -> Self {
        AdaptivePolicy {
            spins: 2000,
            yields: 100,
            sleep_min: Duration::from_micros(10),
            sleep_max: Duration::from_millis(1),
        }
    }
}

/// The producer's side of notification: what it does after publishing entries.
pub enum Waker {
    /// Nothing: the consumer polls.
    None,
    /// Write the eventfd when the consumer sleeps.
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
    /// Spin until ready.
    BusyPoll,
    /// Spin, yield, sleep.
    Adaptive(AdaptivePolicy),
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
            Waiter::BusyPoll => Notify::BusyPoll,
            Waiter::Adaptive(p) => Notify::Adaptive(*p),
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

    /// The fd to register in an epoll set (eventfd mode).
    pub fn as_fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Waiter::EventFd(fd) => Some(fd.as_fd()),
            _ => None,
        }
    }

    /// For an application with its own epoll loop: announces that the consumer is about
    /// to sleep. Returns false if the ring already has entries (the flag is cleared again
    /// and the caller must not sleep); true if it may sleep, after which it calls
    /// [`Waiter::finish_sleep`].
    pub fn prepare_to_sleep(&self, ring: &mut impl Wakeable) -> bool {
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

    /// After a sleep: clears the flag and drains the eventfd.
    pub fn finish_sleep(&self, ring: &mut impl Wakeable) {
        ring.waiting_flag().store(0, Ordering::Relaxed);
        if let Waiter::EventFd(fd) = self {
            let mut buf = [0u8; 8];
            // Non-blocking: EAGAIN when the count was already drained, which is fine.
            let _ = rustix::io::read(&**fd, &mut buf);
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
            Waiter::Adaptive(p) => {
                let p = *p;
                for _ in 0..p.spins {
                    if ring.ready() {
                        return Ok(WaitOutcome::Ready);
                    }
                    std::hint::spin_loop();
                }
                for _ in 0..p.yields {
                    if ring.ready() {
                        return Ok(WaitOutcome::Ready);
                    }
                    std::thread::yield_now();
                }
                let mut nap = p.sleep_min;
                loop {
                    if ring.ready() {
                        return Ok(WaitOutcome::Ready);
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        return Ok(WaitOutcome::TimedOut);
                    }
                    std::thread::sleep(nap.min(deadline - now));
                    nap = nap.saturating_mul(2).min(p.sleep_max);
                }
            }
            Waiter::EventFd(_) | Waiter::Signal(_) => loop {
                if !self.prepare_to_sleep(ring) {
                    return Ok(WaitOutcome::Ready);
                }
                let now = Instant::now();
                if now >= deadline {
                    ring.waiting_flag().store(0, Ordering::Relaxed);
                    return Ok(WaitOutcome::TimedOut);
                }
                let left = deadline - now;
                let slept = match self {
                    Waiter::EventFd(fd) => {
                        let mut fds = [PollFd::new(&**fd, PollFlags::IN)];
                        let ts = rustix::event::Timespec::try_from(left).unwrap_or(
                            rustix::event::Timespec {
                                tv_sec: i64::MAX,
                                tv_nsec: 0,
                            },
                        );
                        match poll(&mut fds, Some(&ts)) {
                            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
                            Err(e) => Err(io::Error::from(e)),
                        }
                    }
                    Waiter::Signal(r) => r.sleep(left),
                    _ => Ok(()),
                };
                self.finish_sleep(ring);
                slept?;
            },
        }
    }
}
