//! The one thing the lock logic needs from an engine besides a connection:
//! a way to sleep. The tokio engine sleeps on tokio's timer; the JS-thread
//! engine on a libuv timer of the calling thread's loop.

use std::time::{Duration, Instant};

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

/// [`Timer`] on tokio's clock. Must be polled inside a tokio runtime.
pub struct TokioTimer;

impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        tokio::time::sleep(duration).boxed()
    }
}
