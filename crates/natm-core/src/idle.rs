//! How a daemon's loop waits when it has nothing to do: the one vocabulary of hostd's and
//! switchd's `wait` settings and of a topology's `wait` key. The loop itself (spin, give
//! way, sleep) is natm-nic's `sched::Idler`.

use core::fmt;
use core::str::FromStr;

/// A daemon's idle wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum IdleWait {
    /// Spin 50 µs after the last work, yielding the CPU every 20 µs of spinning, then
    /// sleep in `poll(2)` on every descriptor.
    #[default]
    Adaptive,
    /// Never sleep: the lowest latency, one whole CPU.
    Poll,
    /// Never sleep, but `sched_yield` when idle: for more pollers than CPUs (a whole lab on
    /// a small machine), where a spinning daemon would hold a CPU the next hop needs.
    Yield,
}

impl IdleWait {
    /// Every wait, in the order the text lists them.
    pub const ALL: [IdleWait; 3] = [IdleWait::Adaptive, IdleWait::Poll, IdleWait::Yield];

    /// Its text: `adaptive`, `poll` or `yield`.
    pub const fn name(self) -> &'static str {
        match self {
            IdleWait::Adaptive => "adaptive",
            IdleWait::Poll => "poll",
            IdleWait::Yield => "yield",
        }
    }
}

impl fmt::Display for IdleWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A wait that is none of `adaptive`, `poll` and `yield`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownIdleWait;

impl fmt::Display for UnknownIdleWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("use adaptive, poll or yield")
    }
}

impl core::error::Error for UnknownIdleWait {}

impl FromStr for IdleWait {
    type Err = UnknownIdleWait;

    fn from_str(s: &str) -> Result<IdleWait, UnknownIdleWait> {
        IdleWait::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or(UnknownIdleWait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_wait_reads_back_and_others_are_refused() {
        for w in IdleWait::ALL {
            assert_eq!(w.to_string().parse(), Ok(w));
        }
        assert_eq!("spin".parse::<IdleWait>(), Err(UnknownIdleWait));
        assert_eq!("Poll".parse::<IdleWait>(), Err(UnknownIdleWait));
        assert_eq!(IdleWait::default(), IdleWait::Adaptive);
    }
}
