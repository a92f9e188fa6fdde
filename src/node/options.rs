//! The one options reader: an operation's numbers (wire/nums.rs) into the
//! core's types — a lease, a retry schedule, a server timeout, a jitter,
//! option bits — each with one error for a bad value, whichever face sent
//! it. The core takes durations and schedules, never JavaScript's numbers.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::limits::{self, invalid_timeout, positive_int, whole_ms, whole_u32};
use crate::locks::replicas::Replicas;
use crate::locks::token::AcquireOptions;
use crate::locks::weblocks::{How, Mode};
use crate::node::targets::Target;
use crate::node::wire::nums::{Nums, Slot};
use crate::waiting::retry::Retries;

/// The option bits (`Flag`) of an operation.
pub(crate) fn flags(nums: &Nums) -> Result<u32> {
    whole_u32(nums.get(Slot::Flags))
        .ok_or_else(|| Error::InvalidArgument("invalid lock operation arguments".into()))
}

/// A whole count or id (`what` names it in the error), 0..=u32::MAX.
pub(crate) fn count(x: f64, what: &str) -> Result<u32> {
    whole_u32(x).ok_or_else(|| {
        Error::InvalidArgument(format!("Invalid {what} {x}: expected a whole number"))
    })
}

/// `replicas: N` and `replicaTimeout` (`Replicas`, `ReplicaTimeoutMs`):
/// none for 0 replicas, else a positive timeout.
pub(crate) fn replicas(nums: &Nums) -> Result<Option<Replicas>> {
    let (count, ms) = (nums.get(Slot::Replicas), nums.get(Slot::ReplicaTimeoutMs));
    let bad = || {
        Error::InvalidArgument(format!(
            "Invalid replicas {count} with replicaTimeout {ms}: expected a whole number of \
             replicas and a positive number of milliseconds"
        ))
    };
    match whole_u32(count).ok_or_else(bad)? {
        0 => Ok(None),
        count => Ok(Some(Replicas {
            count,
            timeout: Duration::from_millis(positive_int(ms).ok_or_else(bad)?),
        })),
    }
}

/// A lock's lease (`Time`): a whole number of ms in 1..=MAX_MS.
pub(crate) fn lease_ms(x: f64) -> Result<u64> {
    positive_int(x).ok_or_else(|| invalid_timeout(x))
}

/// redislock's retries: a whole number, or any negative one (and
/// -Infinity) for "until it is free".
pub(crate) fn retries(x: f64) -> Result<Retries> {
    let whole = x == f64::NEG_INFINITY || (x.is_finite() && x.fract() == 0.0);
    if !whole {
        return Err(Error::InvalidArgument(format!(
            "Invalid retries {x}: expected an integer (-1 retries forever)"
        )));
    }
    Ok(match x < 0.0 {
        true => Retries::Forever,
        false => Retries::Count(x.min(u64::MAX as f64) as u64),
    })
}

/// The pause between attempts: a whole number of ms.
pub(crate) fn delay(x: f64) -> Result<Duration> {
    whole_ms(x).map(Duration::from_millis).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "Invalid delay {x}: the retry delay must be a non-negative integer number of milliseconds"
        ))
    })
}

/// An acquire's lease and retry schedule from its `Time`, `Retries` and
/// `Delay` numbers.
pub(crate) fn acquire(nums: &Nums) -> Result<AcquireOptions> {
    acquire_of(
        nums.get(Slot::Time),
        nums.get(Slot::Retries),
        nums.get(Slot::Delay),
    )
}

/// [`acquire`] from the three numbers themselves (redislock's own entries
/// take them as arguments).
pub(crate) fn acquire_of(ttl: f64, retries_x: f64, delay_x: f64) -> Result<AcquireOptions> {
    Ok(AcquireOptions {
        ttl_ms: lease_ms(ttl)?,
        retries: retries(retries_x)?,
        delay: delay(delay_x)?,
    })
}

/// The server timeout of an operation on several servers: `requested` ms
/// (0: the default, `max(50, ttl / 100)`), never above any server's
/// command timeout.
pub(crate) fn server_timeout(
    requested: f64,
    ttl_ms: u64,
    targets: &[Arc<Target>],
) -> Result<Duration> {
    let cap = targets.iter().map(|t| t.endpoint.command_timeout).min();
    bounded_server_timeout(requested, ttl_ms, cap)
}

fn bounded_server_timeout(requested: f64, ttl_ms: u64, cap: Option<Duration>) -> Result<Duration> {
    let ms = if requested == 0.0 {
        (ttl_ms / 100).max(50)
    } else if requested.is_finite() && requested >= 1.0 && requested.fract() == 0.0 {
        requested.min(u32::MAX as f64) as u64
    } else {
        return Err(limits::not_positive_ms("serverTimeout", requested));
    };
    let ms = Duration::from_millis(ms);
    Ok(cap.map_or(ms, |cap| ms.min(cap)))
}

/// The most random time added to a pause between attempts (`retryJitter`).
pub(crate) fn jitter(nums: &Nums) -> Result<Duration> {
    let ms = nums.get(Slot::JitterMs);
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(Error::InvalidArgument(format!(
            "Invalid retryJitter {ms}: expected a non-negative number of milliseconds"
        )));
    }
    Ok(Duration::from_millis(ms.min(3_600_000.0) as u64))
}

/// A number in 0..1 for the retry jitter.
pub(crate) fn random() -> f64 {
    (uuid::Uuid::new_v4().as_u128() >> 75) as f64 / (1u64 << 53) as f64
}

/// A Web Locks request's mode (`Slot::Mode`: 0 exclusive, 1 shared).
pub(crate) fn web_mode(nums: &Nums) -> Result<Mode> {
    match nums.get(Slot::Mode) {
        0.0 => Ok(Mode::Exclusive),
        1.0 => Ok(Mode::Shared),
        n => Err(Error::InvalidArgument(format!(
            "unknown Web Locks mode {n}"
        ))),
    }
}

/// How a Web Locks request is made (`Slot::How`: 0 queued, 1
/// `ifAvailable`, 2 `steal`).
pub(crate) fn web_how(nums: &Nums) -> Result<How> {
    match nums.get(Slot::How) {
        0.0 => Ok(How::Queue),
        1.0 => Ok(How::IfAvailable),
        2.0 => Ok(How::Steal),
        n => Err(Error::InvalidArgument(format!(
            "unknown Web Locks request kind {n}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn acquire_options_follow_redislock_numbers() {
        let o = acquire_of(10000.0, 0.0, 50.0).unwrap();
        assert_eq!(
            (o.ttl_ms, o.retries, o.delay),
            (10000, Retries::Count(0), ms(50))
        );
        for forever in [-1.0, -7.0, f64::NEG_INFINITY] {
            assert_eq!(
                acquire_of(1.0, forever, 0.0).unwrap().retries,
                Retries::Forever
            );
        }
    }

    #[test]
    fn acquire_options_reject_bad_numbers() {
        for (t, r, d) in [
            (0.0, 0.0, 0.0),
            (-5.0, 0.0, 0.0),
            (f64::NAN, 0.0, 0.0),
            (1.5, 0.0, 0.0),
            (f64::INFINITY, 0.0, 0.0),
            (100.0, f64::NAN, 0.0),
            (100.0, 0.5, 0.0),
            (100.0, 0.0, -1.0),
            (100.0, 0.0, f64::NAN),
            (100.0, 0.0, 1e300),
        ] {
            let err = acquire_of(t, r, d).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{t} {r} {d}");
        }
        let msg = acquire_of(0.0, 0.0, 0.0).unwrap_err().to_string();
        assert!(msg.contains("timeout 0"), "{msg}");
    }

    #[test]
    fn the_server_timeout_defaults_to_a_hundredth_of_the_lease_and_never_passes_the_cap() {
        assert_eq!(bounded_server_timeout(0.0, 1_000, None).unwrap(), ms(50));
        assert_eq!(bounded_server_timeout(0.0, 30_000, None).unwrap(), ms(300));
        assert_eq!(bounded_server_timeout(120.0, 1_000, None).unwrap(), ms(120));
        assert_eq!(
            bounded_server_timeout(0.0, 30_000, Some(ms(200))).unwrap(),
            ms(200)
        );
        for bad in [-1.0, 0.5, f64::NAN, f64::INFINITY] {
            assert!(bounded_server_timeout(bad, 1_000, None).is_err(), "{bad}");
        }
    }

    /// An operation's numbers with `set` in their slots.
    fn nums(set: &[(Slot, f64)]) -> Nums {
        let mut all = [0.0; Slot::Count as usize];
        for (slot, x) in set {
            all[*slot as usize] = *x;
        }
        Nums::new(&all).unwrap()
    }

    #[test]
    fn replicas_need_a_whole_count_and_a_positive_timeout() {
        assert!(replicas(&nums(&[])).unwrap().is_none());
        let two = nums(&[(Slot::Replicas, 2.0), (Slot::ReplicaTimeoutMs, 150.0)]);
        let got = replicas(&two).unwrap().expect("two replicas");
        assert_eq!((got.count, got.timeout), (2, ms(150)));
        for (count, timeout) in [(2.0, 0.0), (1.5, 100.0), (-1.0, 100.0), (1.0, f64::NAN)] {
            let bad = nums(&[(Slot::Replicas, count), (Slot::ReplicaTimeoutMs, timeout)]);
            assert!(replicas(&bad).is_err(), "{count} {timeout}");
        }
        assert_eq!(flags(&nums(&[(Slot::Flags, 5.0)])).unwrap(), 5);
        assert!(flags(&nums(&[(Slot::Flags, -1.0)])).is_err());
    }

    #[test]
    fn random_is_in_the_unit_interval() {
        for _ in 0..1000 {
            let r = random();
            assert!((0.0..1.0).contains(&r), "{r}");
        }
    }
}
