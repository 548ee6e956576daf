//! The asynchronous user-level interrupt: a real-time signal that carries the channel id.
//!
//! The producer sends the signal to one thread of the consumer's process with
//! `rt_tgsigqueueinfo` (process-directed `sigqueue` could land on any thread), `si_code`
//! `SI_QUEUE` and the channel id in `si_value`. Real-time signals queue, so several
//! channels signalled at once are all delivered. The handler, installed with `sigaction`
//! and `SA_SIGINFO`, only sets the channel's bit in a static bitmap of atomics and bumps a
//! counter: atomics are async-signal-safe, nothing else is touched.
//!
//! A thread that waits ([`Receiver`]) keeps the signal blocked and unblocks it only inside
//! `ppoll`, atomically (the `sigsuspend` pattern): a signal sent between its last look at
//! the ring and the call stays pending and interrupts the call at once.

use std::io;
use std::mem::MaybeUninit;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Channels the handler can record (ids `0..MAX_CHANNELS`).
pub const MAX_CHANNELS: u32 = 1024;

static PENDING: [AtomicU64; (MAX_CHANNELS / 64) as usize] =
    [const { AtomicU64::new(0) }; (MAX_CHANNELS / 64) as usize];
static DELIVERED: AtomicU64 = AtomicU64::new(0);
static STRAY: AtomicU64 = AtomicU64::new(0);
/// Signals whose handler is installed (bit `signo`; SIGRTMAX is 64, so 65 bits).
static INSTALLED: Mutex<u128> = Mutex::new(0);

/// The first real-time signal free for applications, plus `n`.
pub fn rt_signal(n: i32) -> Option<i32> {
    let s = libc::SIGRTMIN() + n;
    (s <= libc::SIGRTMAX()).then_some(s)
}

/// Whether `signo` is a real-time signal free for applications (`SIGRTMIN..=SIGRTMAX` as
/// the C library counts them; glibc keeps the first two for itself).
pub fn is_rt_signal(signo: i32) -> bool {
    (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&signo)
}

/// Where a signal goes: a thread of a process, a signal number, a channel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Target {
    /// Process (thread group) id.
    pub pid: i32,
    /// Thread id within it.
    pub tid: i32,
    /// Real-time signal number.
    pub signo: i32,
    /// Channel id carried in `si_value`.
    pub channel: u32,
}

/// The part of the kernel's `siginfo_t` that `rt_tgsigqueueinfo` reads for `SI_QUEUE`
/// (64-bit Linux): `si_signo`, `si_errno`, `si_code`, padding to the 8-aligned union, then
/// `_rt { pid, uid, sigval }`; the rest of the 128 bytes zero.
#[repr(C)]
struct QueueInfo {
    signo: i32,
    errno: i32,
    code: i32,
    pad: i32,
    pid: i32,
    uid: u32,
    value: usize,
    rest: [u8; 96],
}

const _: () = assert!(core::mem::size_of::<QueueInfo>() == 128);
const _: () = assert!(core::mem::size_of::<libc::siginfo_t>() == 128);
#[cfg(not(target_pointer_width = "64"))]
compile_error!("natm-nic's signal notification lays out siginfo for 64-bit Linux");

/// Sends the signal (`SI_QUEUE`, channel in `si_value`).
pub fn send(t: Target) -> io::Result<()> {
    let info = QueueInfo {
        signo: t.signo,
        errno: 0,
        code: libc::SI_QUEUE,
        pad: 0,
        pid: rustix::process::getpid().as_raw_nonzero().get(),
        uid: rustix::process::getuid().as_raw(),
        value: t.channel as usize,
        rest: [0; 96],
    };
    // SAFETY: rt_tgsigqueueinfo reads a 128-byte siginfo from the pointer, which points
    // to a live, initialized 128-byte repr(C) QueueInfo laid out as the kernel's siginfo
    // for SI_QUEUE (size asserted above); the call writes no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            t.pid as libc::c_long,
            t.tid as libc::c_long,
            t.signo as libc::c_long,
            &info as *const QueueInfo,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

extern "C" fn on_signal(_signo: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    DELIVERED.fetch_add(1, Ordering::Relaxed);
    if info.is_null() {
        STRAY.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: the kernel passes a valid siginfo for the duration of the handler
    // (SA_SIGINFO); si_value reads the sigval of the union, which is plain data (any bits
    // are a valid pointer-sized value; it is never dereferenced).
    let value = unsafe { (*info).si_value().sival_ptr } as usize;
    match u32::try_from(value) {
        Ok(ch) if ch < MAX_CHANNELS => {
            PENDING[(ch / 64) as usize].fetch_or(1 << (ch % 64), Ordering::Release);
        }
        _ => {
            STRAY.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Installs the handler for `signo` (idempotent).
pub fn install(signo: i32) -> io::Result<()> {
    if !is_rt_signal(signo) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if *installed & (1u128 << signo) != 0 {
        return Ok(());
    }
    // SAFETY: sigaction is plain data, zero is a valid initial value (empty mask, no flags).
    let mut sa: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
    sa.sa_sigaction = on_signal as *const () as usize;
    sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: sa is initialized; the handler has the SA_SIGINFO signature and is
    // async-signal-safe (atomics only); the old action is not asked for (null).
    let r = unsafe { libc::sigaction(signo, &sa, core::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    *installed |= 1u128 << signo;
    Ok(())
}

/// Takes the pending mark of `channel`: true if a signal for it arrived since the last take.
pub fn take_pending(channel: u32) -> bool {
    if channel >= MAX_CHANNELS {
        return false;
    }
    let bit = 1u64 << (channel % 64);
    PENDING[(channel / 64) as usize].fetch_and(!bit, Ordering::Acquire) & bit != 0
}

/// Signals handled so far in this process, and those with no valid channel.
pub fn delivered() -> (u64, u64) {
    (
        DELIVERED.load(Ordering::Relaxed),
        STRAY.load(Ordering::Relaxed),
    )
}

fn sigset_with(signo: i32) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initializes it fully before sigaddset.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed().assume_init();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo);
        set
    }
}

/// Changes the calling thread's mask for `signo`.
pub fn set_blocked(signo: i32, blocked: bool) -> io::Result<()> {
    let set = sigset_with(signo);
    let how = if blocked {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    // SAFETY: set is an initialized sigset_t; the old mask is not asked for (null).
    let r = unsafe { libc::pthread_sigmask(how, &set, core::ptr::null_mut()) };
    if r != 0 {
        Err(io::Error::from_raw_os_error(r))
    } else {
        Ok(())
    }
}

/// A thread that sleeps until its channel's signal comes.
pub struct Receiver {
    target: Target,
    /// The thread's mask with the signal removed, for ppoll.
    wait_mask: libc::sigset_t,
}

impl Receiver {
    /// Installs the handler and blocks `signo` in the calling thread.
    pub fn new(signo: i32, channel: u32) -> io::Result<Self> {
        if channel >= MAX_CHANNELS {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        install(signo)?;
        set_blocked(signo, true)?;
        // SAFETY: sigset_t is plain data; pthread_sigmask fills it with the current mask.
        let mut mask = unsafe { MaybeUninit::<libc::sigset_t>::zeroed().assume_init() };
        // SAFETY: a null new set only reads the current mask into `mask`.
        let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, core::ptr::null(), &mut mask) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        // SAFETY: mask is initialized; sigdelset only clears one bit of it.
        unsafe { libc::sigdelset(&mut mask, signo) };
        let target = Target {
            pid: rustix::process::getpid().as_raw_nonzero().get(),
            tid: rustix::thread::gettid().as_raw_nonzero().get(),
            signo,
            channel,
        };
        Ok(Receiver {
            target,
            wait_mask: mask,
        })
    }

    /// Where the producer sends the signal.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Sleeps until the channel's signal arrives (its handler ran), another signal
    /// interrupts, or `timeout` passes. Called on the thread that made the receiver.
    pub fn sleep(&self, timeout: Duration) -> io::Result<()> {
        if rustix::thread::gettid().as_raw_nonzero().get() != self.target.tid {
            // The mask and the target belong to the thread that made the receiver.
            return Err(io::Error::other("signal receiver used on another thread"));
        }
        if take_pending(self.target.channel) {
            return Ok(());
        }
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: no fds (null, 0); ts and wait_mask are initialized and outlive the call.
        // ppoll swaps in wait_mask (our mask with the signal unblocked) for its duration
        // only, so the handler runs inside the call and it returns EINTR.
        let r = unsafe { libc::ppoll(core::ptr::null_mut(), 0, &ts, &self.wait_mask) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
        take_pending(self.target.channel);
        Ok(())
    }
}

/// Gives SIGPIPE back its default action (terminate quietly), as a command-line tool
/// expects: Rust's runtime ignores it, so `natm stat | head` would otherwise end in a
/// failed write to a closed pipe instead of the silent exit every Unix filter makes.
pub fn default_sigpipe() -> io::Result<()> {
    // SAFETY: SIG_DFL for SIGPIPE installs no handler code; `signal` has no other effect.
    let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if old == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
