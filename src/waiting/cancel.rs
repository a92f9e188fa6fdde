//! Cancelling a wait from another thread or task: an acquire whose
//! `AbortSignal` fired stops retrying at once, whichever engine runs it.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// A one-way switch: once cancelled, always cancelled.
#[derive(Default)]
pub struct Cancel {
    flag: AtomicBool,
    notify: Notify,
}

impl Cancel {
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Resolves once [`cancel`](Self::cancel) has been called (at once if it
    /// already was).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn wakes_a_waiter_from_another_thread() {
        let c = Arc::new(Cancel::default());
        let c2 = Arc::clone(&c);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            c2.cancel();
        });
        tokio::time::timeout(Duration::from_secs(5), c.cancelled())
            .await
            .expect("woken");
        assert!(c.is_cancelled());
        // Already cancelled: resolves at once.
        tokio::time::timeout(Duration::from_millis(50), c.cancelled())
            .await
            .expect("at once");
    }
}
