//! The few libuv functions the JS-thread engine needs, resolved at run
//! time from the host process (Node exports libuv's symbols), the way
//! napi-sys resolves Node-API: nothing is linked, so no second libuv is
//! loaded, and a host without them (Deno) is detected, not crashed.
//!
//! Handles are allocated by `uv_handle_size`, never from a Rust struct
//! guessed from a header; their `data` is set and read through
//! `uv_handle_set_data` / `uv_handle_get_data`.
//!
//! Every function here must be called on the thread that runs the loop the
//! handle belongs to, except `async_send`, which libuv makes thread-safe.

use std::alloc::Layout;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

pub type Loop = c_void;
pub type Handle = c_void;

pub type PollCb = unsafe extern "C" fn(*mut Handle, c_int, c_int);
pub type PlainCb = unsafe extern "C" fn(*mut Handle);
pub type CloseCb = unsafe extern "C" fn(*mut Handle);

/// `uv_handle_type` values; fixed by libuv 1.x's `UV_HANDLE_TYPE_MAP`.
pub const ASYNC: c_int = 1;
pub const POLL: c_int = 8;
pub const PREPARE: c_int = 9;
pub const TIMER: c_int = 13;

/// `uv_poll_event` bits.
pub const READABLE: c_int = 1;
pub const WRITABLE: c_int = 2;

/// Plain fn pointers into the host's libuv.
pub struct Uv {
    handle_size: unsafe extern "C" fn(c_int) -> usize,
    set_data: unsafe extern "C" fn(*mut Handle, *mut c_void),
    get_data: unsafe extern "C" fn(*const Handle) -> *mut c_void,
    close: unsafe extern "C" fn(*mut Handle, Option<CloseCb>),
    unref: unsafe extern "C" fn(*mut Handle),
    poll_init: unsafe extern "C" fn(*mut Loop, *mut Handle, c_int) -> c_int,
    poll_start: unsafe extern "C" fn(*mut Handle, c_int, PollCb) -> c_int,
    timer_init: unsafe extern "C" fn(*mut Loop, *mut Handle) -> c_int,
    timer_start: unsafe extern "C" fn(*mut Handle, PlainCb, u64, u64) -> c_int,
    async_init: unsafe extern "C" fn(*mut Loop, *mut Handle, PlainCb) -> c_int,
    async_send: unsafe extern "C" fn(*mut Handle) -> c_int,
    prepare_init: unsafe extern "C" fn(*mut Loop, *mut Handle) -> c_int,
    prepare_start: unsafe extern "C" fn(*mut Handle, PlainCb) -> c_int,
    prepare_stop: unsafe extern "C" fn(*mut Handle) -> c_int,
}

/// libuv of the host process, or `None` where it cannot be found.
pub fn uv() -> Option<&'static Uv> {
    static UV: OnceLock<Option<Uv>> = OnceLock::new();
    UV.get_or_init(load).as_ref()
}

fn load() -> Option<Uv> {
    // The engine is built for Unix only (see node/mod.rs).
    let lib: libloading::Library = libloading::os::unix::Library::this().into();
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: looked up by its libuv name, typed as uv.h (libuv 1.x) declares it;
            // the library is the host process itself, which outlives this addon.
            unsafe { *lib.get(concat!($name, "\0").as_bytes()).ok()? }
        };
    }
    let uv = Uv {
        handle_size: sym!("uv_handle_size"),
        set_data: sym!("uv_handle_set_data"),
        get_data: sym!("uv_handle_get_data"),
        close: sym!("uv_close"),
        unref: sym!("uv_unref"),
        poll_init: sym!("uv_poll_init"),
        poll_start: sym!("uv_poll_start"),
        timer_init: sym!("uv_timer_init"),
        timer_start: sym!("uv_timer_start"),
        async_init: sym!("uv_async_init"),
        async_send: sym!("uv_async_send"),
        prepare_init: sym!("uv_prepare_init"),
        prepare_start: sym!("uv_prepare_start"),
        prepare_stop: sym!("uv_prepare_stop"),
    };
    // The process image is never unloaded; keep the library open for good.
    std::mem::forget(lib);
    Some(uv)
}

const ALIGN: usize = 16;

/// Status codes below zero are libuv errors.
fn check(what: &str, rc: c_int) -> Result<(), String> {
    if rc < 0 {
        Err(format!("{what} failed (libuv error {rc})"))
    } else {
        Ok(())
    }
}

impl Uv {
    /// Zeroed memory for a handle of `kind`, from libuv's own size. Freed
    /// by [`Uv::free`] in the handle's close callback.
    fn alloc(&self, kind: c_int) -> Result<*mut Handle, String> {
        // SAFETY: uv_handle_size only reads its argument.
        let size = unsafe { (self.handle_size)(kind) };
        let layout = Layout::from_size_align(size.max(1), ALIGN).map_err(|e| e.to_string())?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err("out of memory for a libuv handle".into());
        }
        Ok(ptr.cast())
    }

    /// Frees a handle allocated by [`Uv::alloc`] for `kind`.
    ///
    /// # Safety
    /// SAFETY (caller): `handle` came from `alloc(kind)`, is closed (its close callback is
    /// running, or it was never initialised) and is not used again.
    pub unsafe fn free(&self, handle: *mut Handle, kind: c_int) {
        // SAFETY: uv_handle_size only reads its argument.
        let size = unsafe { (self.handle_size)(kind) };
        if let Ok(layout) = Layout::from_size_align(size.max(1), ALIGN) {
            // SAFETY: `alloc(kind)` allocated `handle` with this very layout (same
            // size from libuv, same alignment), and the caller says nobody uses it.
            unsafe { std::alloc::dealloc(handle.cast(), layout) };
        }
    }

    /// A new, unref'd handle of `kind` on `lp`, with `data` attached;
    /// `init` is the matching `uv_*_init`, which the caller's closure calls
    /// on this thread's loop.
    ///
    /// # Safety
    /// SAFETY (caller): `init` initialises a handle of `kind` on the calling thread's loop.
    unsafe fn new_handle(
        &self,
        kind: c_int,
        data: *mut c_void,
        init: impl FnOnce(*mut Handle) -> c_int,
    ) -> Result<*mut Handle, String> {
        let handle = self.alloc(kind)?;
        if let Err(e) = check("uv init", init(handle)) {
            // SAFETY: not initialised, so never seen by the loop: freeing is fine.
            unsafe { self.free(handle, kind) };
            return Err(e);
        }
        // SAFETY: `handle` is initialised and live; both calls only touch it.
        unsafe {
            (self.set_data)(handle, data);
            (self.unref)(handle);
        }
        Ok(handle)
    }

    /// # Safety
    /// SAFETY (caller): `lp` is the calling thread's loop.
    pub unsafe fn new_timer(
        &self,
        lp: *mut Loop,
        data: *mut c_void,
    ) -> Result<*mut Handle, String> {
        // SAFETY: `h` is fresh zeroed memory of the timer size; `lp` is ours (caller).
        unsafe { self.new_handle(TIMER, data, |h| (self.timer_init)(lp, h)) }
    }

    /// # Safety
    /// SAFETY (caller): `lp` is the calling thread's loop.
    pub unsafe fn new_prepare(
        &self,
        lp: *mut Loop,
        data: *mut c_void,
    ) -> Result<*mut Handle, String> {
        // SAFETY: as `new_timer`, for a prepare handle.
        unsafe { self.new_handle(PREPARE, data, |h| (self.prepare_init)(lp, h)) }
    }

    /// # Safety
    /// SAFETY (caller): `lp` is the calling thread's loop.
    pub unsafe fn new_async(
        &self,
        lp: *mut Loop,
        data: *mut c_void,
        cb: PlainCb,
    ) -> Result<*mut Handle, String> {
        // SAFETY: as `new_timer`, for an async handle; `cb` is a plain extern fn.
        unsafe { self.new_handle(ASYNC, data, |h| (self.async_init)(lp, h, cb)) }
    }

    /// # Safety
    /// SAFETY (caller): `lp` is the calling thread's loop; `fd` is an open socket that stays
    /// open until this handle is closed.
    pub unsafe fn new_poll(
        &self,
        lp: *mut Loop,
        fd: c_int,
        data: *mut c_void,
    ) -> Result<*mut Handle, String> {
        // SAFETY: as `new_timer`, for a poll handle on `fd`, open as the caller says.
        unsafe { self.new_handle(POLL, data, |h| (self.poll_init)(lp, h, fd)) }
    }

    /// # Safety
    /// SAFETY (caller): `h` is a live handle.
    pub unsafe fn data(&self, h: *const Handle) -> *mut c_void {
        // SAFETY: reads the data field of a live handle (caller).
        unsafe { (self.get_data)(h) }
    }

    /// # Safety
    /// SAFETY (caller): `h` is a live poll handle of this thread's loop.
    pub unsafe fn poll_start(
        &self,
        h: *mut Handle,
        events: c_int,
        cb: PollCb,
    ) -> Result<(), String> {
        // SAFETY: a live poll handle (caller); `cb` is a plain extern fn.
        check("uv_poll_start", unsafe { (self.poll_start)(h, events, cb) })
    }

    /// # Safety
    /// SAFETY (caller): `h` is a live timer handle of this thread's loop.
    pub unsafe fn timer_start(&self, h: *mut Handle, cb: PlainCb, ms: u64) {
        // SAFETY: a live timer handle (caller); `cb` is a plain extern fn.
        unsafe { (self.timer_start)(h, cb, ms, 0) };
    }

    /// # Safety
    /// SAFETY (caller): `h` is a live prepare handle of this thread's loop.
    pub unsafe fn prepare_start(&self, h: *mut Handle, cb: PlainCb) {
        // SAFETY: a live prepare handle (caller); `cb` is a plain extern fn.
        unsafe { (self.prepare_start)(h, cb) };
    }

    /// # Safety
    /// SAFETY (caller): `h` is a live prepare handle of this thread's loop.
    pub unsafe fn prepare_stop(&self, h: *mut Handle) {
        // SAFETY: a live prepare handle (caller).
        unsafe { (self.prepare_stop)(h) };
    }

    /// Thread-safe wake-up of the loop that owns `h`.
    ///
    /// # Safety
    /// SAFETY (caller): `h` is a live async handle (not yet closed).
    pub unsafe fn async_send(&self, h: *mut Handle) {
        // SAFETY: libuv makes uv_async_send safe from any thread on a live async
        // handle, which the caller guarantees.
        unsafe { (self.async_send)(h) };
    }

    /// Starts closing `h`; `cb` runs on a later loop turn and must free it.
    ///
    /// # Safety
    /// SAFETY (caller): `h` is a live handle of this thread's loop, not already closing.
    pub unsafe fn close(&self, h: *mut Handle, cb: CloseCb) {
        // SAFETY: a live handle not yet closing (caller); `cb` frees it, once.
        unsafe { (self.close)(h, Some(cb)) };
    }
}
