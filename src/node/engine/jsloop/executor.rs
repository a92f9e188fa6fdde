//! The JS-thread engine's executor: operation futures polled on the
//! engine's thread, first when spawned and then whenever their waker is
//! woken — on this thread (a reply, a timer) or from another (name
//! resolution), through [`Remote`], the one part other threads may touch.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;

use super::uv::{self, Handle};

/// An operation's future, as the engine runs it (its outcome is recorded
/// by the future itself: reactor.rs `spawn_op`).
pub(crate) type Task = Pin<Box<dyn Future<Output = ()>>>;

/// The part of the engine other threads may touch: task ids to poll, and
/// the async handle that wakes the loop for them.
pub(crate) struct Remote {
    ready: Mutex<Vec<u32>>,
    owner: ThreadId,
    /// The engine is draining its ready queue right now, so an on-thread
    /// wake needs no loop wake-up.
    pub(super) processing: AtomicBool,
    wake: Mutex<Option<AsyncPtr>>,
}

/// The engine's async handle, for `uv_async_send` from any thread.
struct AsyncPtr(*mut Handle);

// Only used for `uv_async_send` (thread-safe, per libuv) while it sits in `Remote::wake`;
// SAFETY: shut-down takes it out under that mutex (`set_wake(None)`) before `uv_close`: no send on a closed handle.
unsafe impl Send for AsyncPtr {}

impl Remote {
    /// Nothing is waiting to be polled.
    pub(super) fn idle(&self) -> bool {
        self.lock_ready().is_empty()
    }

    /// The async handle that wakes the loop: set once it is made, taken out
    /// (`None`) before it is closed, so no thread sends on a closed handle.
    pub(super) fn set_wake(&self, handle: Option<*mut Handle>) {
        *self.wake.lock().unwrap_or_else(|p| p.into_inner()) = handle.map(AsyncPtr);
    }

    fn lock_ready(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.ready.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the loop (its async handle), from any thread.
    pub(super) fn notify(&self) {
        let guard = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(handle), Some(uv)) = (guard.as_ref(), uv::uv()) {
            // SAFETY: see `AsyncPtr`: the handle is live while in `wake`.
            unsafe { uv.async_send(handle.0) };
        }
    }
}

struct TaskWaker {
    id: u32,
    remote: Arc<Remote>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.remote.lock_ready().push(self.id);
        let on_thread = std::thread::current().id() == self.remote.owner;
        if !on_thread || !self.remote.processing.load(Ordering::Acquire) {
            self.remote.notify();
        }
    }
}

/// The live tasks by id, each with its waker (made once per task), the ids
/// free for reuse, and the ready queue.
pub(crate) struct Executor {
    remote: Arc<Remote>,
    tasks: RefCell<Vec<Option<(Task, Waker)>>>,
    free_ids: RefCell<Vec<u32>>,
}

impl Executor {
    /// An executor owned by this thread.
    pub(crate) fn new() -> Executor {
        Executor {
            remote: Arc::new(Remote {
                ready: Mutex::new(Vec::new()),
                owner: std::thread::current().id(),
                processing: AtomicBool::new(false),
                wake: Mutex::new(None),
            }),
            tasks: RefCell::new(Vec::new()),
            free_ids: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn remote(&self) -> &Arc<Remote> {
        &self.remote
    }

    /// Runs `task` on this thread: polled once now, then on wake-ups.
    pub(crate) fn spawn(&self, task: Task) {
        let id = match self.free_ids.borrow_mut().pop() {
            Some(id) => id,
            None => {
                let mut tasks = self.tasks.borrow_mut();
                tasks.push(None);
                (tasks.len() - 1) as u32
            }
        };
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            remote: Arc::clone(&self.remote),
        }));
        self.tasks.borrow_mut()[id as usize] = Some((task, waker));
        // Finished already (bad arguments): delivered on the next loop turn,
        // never inside the JavaScript call. Inside a turn, the turn does it.
        if self.poll_task(id) && !self.remote.processing.load(Ordering::Acquire) {
            self.remote.notify();
        }
    }

    /// Polls task `id`; `true` when it finished.
    fn poll_task(&self, id: u32) -> bool {
        let Some((mut task, waker)) = self
            .tasks
            .borrow_mut()
            .get_mut(id as usize)
            .and_then(Option::take)
        else {
            return false; // finished already: a stale wake-up
        };
        let mut cx = Context::from_waker(&waker);
        match task.as_mut().poll(&mut cx) {
            Poll::Ready(()) => {
                self.free_ids.borrow_mut().push(id);
                true
            }
            Poll::Pending => {
                if let Some(slot) = self.tasks.borrow_mut().get_mut(id as usize) {
                    *slot = Some((task, waker));
                }
                false
            }
        }
    }

    pub(crate) fn run_ready(&self) {
        // Bounded: a task that wakes itself forever cannot starve the loop.
        for _ in 0..64 {
            let ids = std::mem::take(&mut *self.remote.lock_ready());
            if ids.is_empty() {
                break;
            }
            for id in ids {
                self.poll_task(id);
            }
        }
    }

    /// How many tasks are live.
    pub(crate) fn live(&self) -> usize {
        self.tasks.borrow().iter().filter(|t| t.is_some()).count()
    }

    /// Drops every task (the engine shuts down). Their destructors may look
    /// for the engine: it is already gone from the thread-local.
    pub(crate) fn drop_tasks(&self) {
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        drop(tasks);
    }
}

#[cfg(test)]
mod tests {
    //! Without libuv: the loop wake-up (`notify`) does nothing while no
    //! async handle is set, and what it would wake is driven here by hand.
    use std::sync::atomic::AtomicUsize;

    use futures_util::future::poll_fn;

    use super::*;

    #[test]
    fn a_task_is_polled_at_once_then_when_woken_from_another_thread() {
        let ex = Executor::new();
        let done = Arc::new(AtomicUsize::new(0));
        let d = Arc::clone(&done);
        ex.spawn(Box::pin(async move {
            d.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(
            (done.load(Ordering::SeqCst), ex.live()),
            (1, 0),
            "ran at once"
        );

        let open = Arc::new(AtomicBool::new(false));
        let slot: Arc<Mutex<Option<Waker>>> = Arc::default();
        let (o, s, d) = (Arc::clone(&open), Arc::clone(&slot), Arc::clone(&done));
        ex.spawn(Box::pin(async move {
            poll_fn(|cx| match o.load(Ordering::SeqCst) {
                true => Poll::Ready(()),
                false => {
                    *s.lock().unwrap() = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await;
            d.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(ex.live(), 1);
        assert!(ex.remote().idle(), "nothing woken yet");
        ex.run_ready();
        assert_eq!(ex.live(), 1, "not polled without a wake-up");

        open.store(true, Ordering::SeqCst);
        let waker = slot.lock().unwrap().take().expect("the task's waker");
        std::thread::spawn(move || waker.wake()).join().unwrap();
        assert!(!ex.remote().idle(), "the wake-up is queued for this thread");
        ex.run_ready();
        assert_eq!((done.load(Ordering::SeqCst), ex.live()), (2, 0));
        assert!(ex.remote().idle());
    }

    #[test]
    fn a_stale_wake_up_of_a_finished_task_is_ignored_and_its_id_reused() {
        let ex = Executor::new();
        let slot: Arc<Mutex<Option<Waker>>> = Arc::default();
        let s = Arc::clone(&slot);
        ex.spawn(Box::pin(poll_fn(move |cx| {
            *s.lock().unwrap() = Some(cx.waker().clone());
            Poll::Ready(())
        })));
        let stale = slot.lock().unwrap().take().expect("a waker");
        stale.wake_by_ref();
        ex.run_ready();
        assert_eq!(ex.live(), 0);
        ex.spawn(Box::pin(std::future::pending()));
        assert_eq!((ex.live(), ex.tasks.borrow().len()), (1, 1), "id 0 reused");
        ex.drop_tasks();
        assert_eq!(ex.live(), 0);
    }
}
