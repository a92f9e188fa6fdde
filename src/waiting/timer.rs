//! The one thing the lock logic needs from an engine besides a connection:
//! a way to sleep. The tokio engine sleeps on tokio's timer; the JS-thread
//! engine on a libuv timer of the calling thread's loop.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

/// Sleeps for a while; what the retry loop waits on between attempts.
pub trait Timer: Send + Sync {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;

    /// The clock `sleep` runs on: the monotonic clock, unless a test's
    /// timer keeps its own.
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// The wall clock in ms since the epoch, for times other clients compare
/// (redis-semaphore's scores, Redisson's fair-lock deadlines and permit
/// expiries, which they write with `Date.now()` or
/// `System.currentTimeMillis()`); never for a wait of ours.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// [`Timer`] on tokio's clock. Must be polled inside a tokio runtime.
pub struct TokioTimer;

impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        tokio::time::sleep(duration).boxed()
    }
}
