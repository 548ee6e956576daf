//! The round-trip estimator and the retransmission timeout (Jacobson/Karels, RFC 6298).
//!
//! `srtt ← 7/8·srtt + 1/8·r`, `rttvar ← 3/4·rttvar + 1/4·|srtt − r|` (the first sample sets
//! `srtt = r`, `rttvar = r/2`), `RTO = srtt + 4·rttvar` clamped to `[min_rto, max_rto]`, in
//! integer nanoseconds. Each timeout doubles the RTO (back-off, up to `max_rto`) until a
//! sample arrives. Karn's rule, sharpened by the ack's echo: an ack gives a sample only if
//! it names the transmission it came from — a TPDU sent once, or the latest transmission
//! of a resent one (the echo says which arrived, as TCP's timestamps do); an ack of an
//! earlier transmission is ambiguous and gives none.

use natm_core::Duration;

use crate::config::Config;

#[derive(Clone, Debug)]
pub(crate) struct Rtt {
    srtt: Option<u64>,
    rttvar: u64,
    /// The smallest round trip measured: the path without a queue.
    least: Option<u64>,
    backoff: u32,
    initial: u64,
    min: u64,
    max: u64,
}

impl Rtt {
    pub(crate) fn new(c: &Config) -> Rtt {
        Rtt {
            srtt: None,
            rttvar: 0,
            least: None,
            backoff: 0,
            initial: c.initial_rto.as_nanos(),
            min: c.min_rto.as_nanos(),
            max: c.max_rto.as_nanos(),
        }
    }

    /// One round trip measured on a TPDU sent once.
    pub(crate) fn sample(&mut self, r: Duration) {
        let r = r.as_nanos();
        self.least = Some(self.least.map_or(r, |l| l.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = self.rttvar - self.rttvar / 4 + s.abs_diff(r) / 4;
                self.srtt = Some(s - s / 8 + r / 8);
            }
        }
        self.backoff = 0;
    }

    /// A round trip measured before any TPDU (the driver's handshake): the first sample,
    /// if none came yet.
    pub(crate) fn hint(&mut self, r: Duration) {
        if self.srtt.is_none() {
            self.sample(r);
        }
    }

    pub(crate) fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(32);
    }

    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_nanos)
    }

    /// The smallest round trip measured.
    pub(crate) fn least(&self) -> Option<Duration> {
        self.least.map(Duration::from_nanos)
    }

    pub(crate) fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }

    /// The timeout without back-off.
    fn base(&self) -> u64 {
        match self.srtt {
            None => self.initial,
            Some(s) => s.saturating_add(self.rttvar.saturating_mul(4)),
        }
        .clamp(self.min, self.max)
    }

    /// The retransmission timeout now, back-off included.
    pub(crate) fn rto(&self) -> Duration {
        let t = self.base().saturating_mul(1u64 << self.backoff.min(40));
        Duration::from_nanos(t.min(self.max))
    }

    /// The loss-probe timeout: max(2·srtt, floor), or the RTO before any sample.
    pub(crate) fn pto(&self, floor: Duration) -> Duration {
        match self.srtt {
            None => self.rto(),
            Some(s) => Duration::from_nanos(s.saturating_mul(2).max(floor.as_nanos())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn test_samples_and_floor() {
        let mut r = Rtt::new(&Config::default());
        assert_eq!(r.rto(), Duration::from_millis(200));
        r.sample(us(100));
        assert_eq!(r.srtt(), Some(us(100)));
        assert_eq!(r.rttvar(), us(50));
        // 100 µs + 4·50 µs = 300 µs, below the 50 ms floor.
        assert_eq!(r.rto(), Duration::from_millis(50));
        r.sample(us(180));
        assert_eq!(r.srtt(), Some(us(110)));
        assert_eq!(r.rttvar(), Duration::from_nanos(57_500));
        assert_eq!(r.pto(Duration::from_millis(1)), Duration::from_millis(1));
        assert_eq!(r.pto(us(1)), us(220));
    }

    #[test]
    fn test_back_off_doubles_to_the_ceiling_and_a_sample_resets_it() {
        let mut r = Rtt::new(&Config {
            max_rto: Duration::from_millis(300),
            ..Config::default()
        });
        r.sample(us(100));
        r.back_off();
        assert_eq!(r.rto(), Duration::from_millis(100));
        r.back_off();
        assert_eq!(r.rto(), Duration::from_millis(200));
        for _ in 0..50 {
            r.back_off();
        }
        assert_eq!(r.rto(), Duration::from_millis(300));
        r.sample(us(100));
        assert_eq!(r.rto(), Duration::from_millis(50));
    }

    #[test]
    fn test_large_samples_clamped() {
        let mut r = Rtt::new(&Config::default());
        r.sample(Duration::from_secs(1_000));
        assert_eq!(r.rto(), Duration::from_secs(60));
    }
}
