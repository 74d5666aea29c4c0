//! FUSE over io_uring (Linux 6.14+): after the INIT handshake on /dev/fuse, one ring per CPU
//! (a queue of the kernel's) carries the requests. Each queue's thread registers its ring
//! entries (a header block and a payload buffer each, `FUSE_IO_URING_CMD_REGISTER`); the kernel
//! completes an entry's command when it puts a request in it, and the thread answers it and
//! fetches the next one in one command (`FUSE_IO_URING_CMD_COMMIT_AND_FETCH`). Forgets,
//! interrupts and notifications stay on /dev/fuse, served by fuser's session as before.
//!
//! fuser has no way to hand it a request read elsewhere, so the requests that come over the
//! ring are decoded here ([`dispatch`], with the kernel's structs of `fuse/abi.rs`) and
//! answered through the same operations as the fuser adapter's (`fuse/ops.rs`).

mod dispatch;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{JoinHandle, ThreadId};

use io_uring::squeue::Entry128;
use io_uring::{IoUring, opcode, types};

use super::abi;
use super::ops::Ops;
use crate::fs::MAX_WRITE;
use crate::util::sync::MutexExt;

/// The module parameter that lets FUSE connections use io_uring.
pub const ENABLE_PARAM: &str = "/sys/module/fuse/parameters/enable_uring";

/// Ring entries per queue: requests a CPU's queue holds at once. A read that waits for
/// records keeps its entry until it is answered, so there are many (hundreds of `tail -f`
/// readers leave the tree responsive); an entry's payload pages are touched only when a
/// request that large uses it, and the kernel reuses the entry answered last first.
const DEPTH: usize = 512;
/// The user data of the eventfd read that wakes a queue's thread.
const WAKE: u64 = u64::MAX;

/// Whether the io_uring transport is to be tried, given the module parameter's value (None:
/// the kernel has no such parameter) and whether the daemon may set it: Ok(true) when the
/// daemon is to set it first, Err(why not) when /dev/fuse is to be used.
pub fn decide(param: Option<&str>, root: bool) -> Result<bool, String> {
    match param.map(str::trim) {
        None => Err("the kernel has no FUSE over io_uring (no fuse.enable_uring)".into()),
        Some("Y") | Some("1") => Ok(false),
        Some(_) if root => Ok(true),
        Some(_) => Err("fuse.enable_uring is N and only root may set it".into()),
    }
}

/// Rings made before the mount, one per possible CPU: made first so that the kernel is
/// told of io_uring at INIT only when the rings exist.
pub struct Rings(Vec<(IoUring<Entry128>, Queue)>);

impl Rings {
    /// The rings of `--io-uring`, or None (after one log line saying why) for /dev/fuse.
    pub fn prepare() -> Option<Rings> {
        let param = std::fs::read_to_string(ENABLE_PARAM).ok();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        match decide(param.as_deref(), root) {
            Err(why) => {
                log::warn!("io_uring transport not used ({why}): requests come over /dev/fuse");
                return None;
            }
            Ok(true) => match std::fs::write(ENABLE_PARAM, "Y") {
                Ok(()) => log::info!("set fuse.enable_uring to Y for the io_uring transport"),
                Err(e) => {
                    log::warn!(
                        "io_uring transport not used (cannot set fuse.enable_uring: {e}): requests come over /dev/fuse"
                    );
                    return None;
                }
            },
            Ok(false) => {}
        }
        // Everything but the threads is made here: once INIT has said io_uring, the kernel
        // holds every request until the rings are registered.
        let mut rings = Vec::new();
        for qid in 0..possible_cpus() {
            let made = IoUring::<Entry128>::builder()
                .build(DEPTH as u32 + 1)
                .map_err(|e| format!("io_uring_setup: {e}"))
                .and_then(|r| Ok((r, Queue::new(qid as u16)?)));
            match made {
                Ok(r) => rings.push(r),
                Err(e) => {
                    log::warn!("io_uring transport not used ({e}): requests come over /dev/fuse");
                    return None;
                }
            }
        }
        Some(Rings(rings))
    }

    /// Registers every queue's entries on the mounted connection `dev` (after INIT) and
    /// starts their threads. Err: see [`StartError`].
    pub fn start(
        self,
        dev: RawFd,
        ops: Ops,
        notifier: fuser::Notifier,
    ) -> Result<RingThreads, StartError> {
        // SAFETY: `dev` is the session's open /dev/fuse fd; dup gives a new fd or -1.
        let fd = unsafe { libc::dup(dev) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(StartError::ours(format!("dup: {e}")));
        }
        // SAFETY: `fd` was just made by dup and is owned by nothing else.
        let dev = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        // The threads a ring's thread starts take these back (os::cpu::as_the_process; a
        // cluster client is made as the process, see storage::cluster::Config). In remote
        // mode a request waits for the cluster and is woken several times (acknowledgements,
        // fetches, a group's join): on SCHED_IDLE it would wait for its CPU at each wake-up,
        // and the check that takes the policy back acts between requests only. The rings keep
        // their policy there.
        crate::os::cpu::remember_process();
        let step_aside = ops.state().data_is_local();
        let ctx = Arc::new(dispatch::Ctx::new(ops, notifier));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let mut queues = Vec::new();
        for (ring, q) in self.0 {
            let qid = q.qid;
            // Never freed: once a thread registers the entries, the kernel may write into
            // them until it tears the ring down, at a time of its own (even after a failed
            // start or a stop): the buffers are left to the process's exit.
            let q: &'static Queue = Box::leak(Box::new(q));
            let (dev, ctx, stop, tx) = (dev.clone(), ctx.clone(), stop.clone(), tx.clone());
            let thread = std::thread::Builder::new()
                .name(format!("fuse-ring-{qid}"))
                .spawn(move || {
                    serve_queue(q, ring, dev.as_raw_fd(), &ctx, &stop, &tx, step_aside);
                })
                .map_err(|e| StartError::ours(format!("thread: {e}")))?;
            queues.push((q, thread));
        }
        drop(tx);
        let threads = RingThreads { queues, stop };
        for _ in 0..threads.queues.len() {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(StartError::ours("a ring thread ended".into())),
            }
        }
        Ok(threads)
    }
}

/// Why the rings could not be started after an INIT that took io_uring.
#[derive(Debug)]
pub struct StartError {
    pub why: String,
    /// The kernel refused a ring's registration: it then stops holding requests for the
    /// rings and serves them over /dev/fuse. Otherwise (the daemon's own failure: no thread,
    /// no submission) the kernel still holds every request until the rings are registered.
    pub refused: bool,
}

impl StartError {
    fn ours(why: String) -> StartError {
        StartError {
            why,
            refused: false,
        }
    }
}

/// CPUs the kernel may run a task on (its queues are one per possible CPU).
fn possible_cpus() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    let last = text
        .trim()
        .rsplit(['-', ','])
        .next()
        .and_then(|n| n.parse::<usize>().ok());
    match last {
        Some(n) => n + 1,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// The running queues' threads: stopped and joined by [`RingThreads::stop`].
pub struct RingThreads {
    queues: Vec<(&'static Queue, JoinHandle<()>)>,
    stop: Arc<AtomicBool>,
}

impl RingThreads {
    /// Ends the threads (the mount is gone) and waits for them.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        for (q, _) in &self.queues {
            q.wake();
        }
        for (_, t) in self.queues {
            let _ = t.join();
        }
    }
}

/// One ring entry's buffers: the header block and the payload, the kernel's while it holds
/// the entry, the daemon's from the completion that hands it a request until its reply.
struct Entry {
    header: *mut u8,
    payload: *mut u8,
    payload_len: usize,
    iov: [libc::iovec; 2],
}

// SAFETY: the buffers are reached by one thread at a time: the queue's thread while it
// decodes a request, then the one reply (from any thread), then the kernel.
unsafe impl Send for Entry {}
// SAFETY: as above.
unsafe impl Sync for Entry {}

/// `len` zeroed bytes, None when the allocator has none (an address-space limit, strict
/// overcommit): the rings are then not used, where an infallible allocation would abort. The
/// pages are zeroed lazily by the system (not written here), so untouched ones cost nothing.
fn zeroed(len: usize) -> Option<*mut u8> {
    let layout = std::alloc::Layout::array::<u8>(len).ok()?;
    // SAFETY: the layout's size is non-zero (both buffers are).
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    (!p.is_null()).then_some(p)
}

impl Entry {
    fn new(payload_len: usize) -> Result<Entry, String> {
        let header = zeroed(abi::HEADERS_LEN);
        let payload = zeroed(payload_len);
        let (Some(header), Some(payload)) = (header, payload) else {
            let free = |p: Option<*mut u8>, len| {
                if let Some(p) = p {
                    // SAFETY: made by `zeroed` with this length (the layout Box uses).
                    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)) });
                }
            };
            free(header, abi::HEADERS_LEN);
            free(payload, payload_len);
            return Err(format!(
                "no memory for the ring entries' {payload_len}-byte buffers"
            ));
        };
        let mut e = Entry {
            header,
            payload,
            payload_len,
            iov: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; 2],
        };
        e.iov = [
            libc::iovec {
                iov_base: header.cast(),
                iov_len: abi::HEADERS_LEN,
            },
            libc::iovec {
                iov_base: payload.cast(),
                iov_len: payload_len,
            },
        ];
        Ok(e)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: both were made by `zeroed` with these lengths (the layout of a boxed
        // slice of u8), once.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.header,
                abi::HEADERS_LEN,
            )));
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.payload,
                self.payload_len,
            )));
        }
    }
}

/// A queue's entries and the replies waiting to be committed.
struct Queue {
    qid: u16,
    entries: Vec<Entry>,
    /// Entries answered (by any thread) and not yet committed.
    done: Mutex<Vec<usize>>,
    wake: OwnedFd,
    thread: std::sync::OnceLock<ThreadId>,
}

impl Queue {
    fn new(qid: u16) -> Result<Queue, String> {
        // SAFETY: eventfd has no preconditions; it returns a new fd or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: a new fd that nothing else owns.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        let payload_len = MAX_WRITE as usize + 4096;
        Ok(Queue {
            qid,
            entries: (0..DEPTH)
                .map(|_| Entry::new(payload_len))
                .collect::<Result<_, _>>()?,
            done: Mutex::new(Vec::new()),
            wake,
            thread: std::sync::OnceLock::new(),
        })
    }

    fn wake(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        let _ = unsafe { libc::write(self.wake.as_raw_fd(), (&raw const one).cast(), 8) };
    }

    /// Resets the eventfd after its poll fired.
    fn drain_wake(&self) {
        let mut n = 0u64;
        // SAFETY: reads 8 bytes into a live u64 from our eventfd (which has fired, so it
        // does not block).
        let _ = unsafe { libc::read(self.wake.as_raw_fd(), (&raw mut n).cast(), 8) };
    }

    /// Entry `idx` is answered: its thread commits it (woken if another thread answered).
    fn answered(&self, idx: usize) {
        self.done.guard().push(idx);
        if self.thread.get() != Some(&std::thread::current().id()) {
            self.wake();
        }
    }
}

fn cmd_sqe(dev: RawFd, cmd_op: u32, qid: u16, commit_id: u64, idx: usize) -> Entry128 {
    let req = abi::CmdReq {
        commit_id,
        qid,
        ..Default::default()
    };
    let mut cmd = [0u8; 80];
    cmd[..size_of::<abi::CmdReq>()].copy_from_slice(abi::bytes(&req));
    opcode::UringCmd80::new(types::Fd(dev), cmd_op)
        .cmd(cmd)
        .build()
        .user_data(idx as u64)
}

/// The REGISTER command of entry `idx`: `addr` points at its two iovecs, and the SQE's
/// `len` field (which io-uring's builder does not set) says two.
fn register_sqe(dev: RawFd, q: &Queue, idx: usize) -> Entry128 {
    let req = abi::CmdReq {
        qid: q.qid,
        ..Default::default()
    };
    let mut cmd = [0u8; 80];
    cmd[..size_of::<abi::CmdReq>()].copy_from_slice(abi::bytes(&req));
    let sqe = opcode::UringCmd80::new(types::Fd(dev), abi::CMD_REGISTER)
        .cmd(cmd)
        .addr(Some(q.entries[idx].iov.as_ptr() as u64))
        .build()
        .user_data(idx as u64);
    let mut bytes = sqe_bytes(sqe);
    // io_uring_sqe: `len` is the u32 at byte 24.
    bytes[24..28].copy_from_slice(&2u32.to_ne_bytes());
    from_sqe_bytes(bytes)
}

fn sqe_bytes(e: Entry128) -> [u8; 128] {
    // SAFETY: Entry128 is repr(C), 128 bytes: the kernel's io_uring_sqe and its command area.
    unsafe { std::mem::transmute::<Entry128, [u8; 128]>(e) }
}

fn from_sqe_bytes(b: [u8; 128]) -> Entry128 {
    // SAFETY: as in sqe_bytes; every field of the SQE is plain integers.
    unsafe { std::mem::transmute::<[u8; 128], Entry128>(b) }
}

/// The eventfd poll that wakes the queue's thread (a poll: the kernel writes no buffer of
/// ours for it).
fn wake_sqe(q: &Queue) -> Entry128 {
    Entry128::from(
        opcode::PollAdd::new(types::Fd(q.wake.as_raw_fd()), libc::POLLIN as u32)
            .build()
            .user_data(WAKE),
    )
}

/// Pushes `sqe`; the SQ has room for every entry's command and the wake read.
fn push(ring: &mut IoUring<Entry128>, sqe: &Entry128) {
    // SAFETY: the buffers an SQE names (iovecs, entry buffers, the wake buffer) live as long
    // as the queue, which outlives the ring's use.
    let pushed = unsafe { ring.submission().push(sqe) };
    if pushed.is_err() {
        log::error!("io_uring submission queue full");
    }
}

/// Answers the request in entry `idx`. A panic in the core answers EIO (the Reply's drop)
/// and the queue's thread goes on: it is the only one that serves its CPU's requests, so
/// ending it would leave every later request of that CPU unanswered.
fn serve_one(ctx: &dispatch::Ctx, q: &'static Queue, idx: usize) {
    ctx.count_request();
    let served = std::panic::catch_unwind(AssertUnwindSafe(|| dispatch::dispatch(ctx, q, idx)));
    if served.is_err() {
        log::error!(
            "io_uring queue {}: a request panicked (answered EIO)",
            q.qid
        );
    }
}

/// Registers a queue's entries and its wake-up, and says how that went on `ready`; the
/// completions already there when it went well.
fn register(
    q: &Queue,
    ring: &mut IoUring<Entry128>,
    dev: RawFd,
    ready: &mpsc::Sender<Result<(), StartError>>,
) -> Option<Vec<(u64, i32)>> {
    for idx in 0..q.entries.len() {
        push(ring, &register_sqe(dev, q, idx));
    }
    push(ring, &wake_sqe(q));
    if let Err(e) = ring.submit() {
        let _ = ready.send(Err(StartError::ours(format!("io_uring_enter: {e}"))));
        return None;
    }
    // A refused REGISTER completes at once; a request may already be in a registered entry
    // (one that waited for the ring to be ready).
    let cqes: Vec<(u64, i32)> = ring
        .completion()
        .map(|c| (c.user_data(), c.result()))
        .collect();
    if let Some(&(_, res)) = cqes.iter().find(|c| c.1 < 0) {
        let e = std::io::Error::from_raw_os_error(-res);
        let _ = ready.send(Err(StartError {
            why: format!("FUSE_IO_URING_CMD_REGISTER: {e}"),
            refused: true,
        }));
        return None;
    }
    let _ = ready.send(Ok(()));
    Some(cqes)
}

/// A queue's thread: registers the entries, then answers requests until the mount goes.
fn serve_queue(
    q: &'static Queue,
    mut ring: IoUring<Entry128>,
    dev: RawFd,
    ctx: &dispatch::Ctx,
    stop: &AtomicBool,
    ready: &mpsc::Sender<Result<(), StartError>>,
    step_aside: bool,
) {
    // The kernel puts a task's requests in its CPU's queue.
    crate::os::cpu::pin_to(q.qid as usize);
    let _ = q.thread.set(std::thread::current().id());
    let Some(cqes) = register(q, &mut ring, dev, ready) else {
        return;
    };
    // The answers wake their tasks on this CPU, and they should stay here: see StepAside.
    let mut aside = Aside(
        step_aside
            .then(crate::os::cpu::StepAside::for_this_thread)
            .flatten(),
        ctx,
    );
    if aside.0.is_some() {
        ctx.count_aside(true, false);
    } else if step_aside && q.qid == 0 {
        log::info!(
            "io_uring queue threads keep their scheduling policy: this process may not leave SCHED_IDLE again (no CAP_SYS_NICE or RLIMIT_NICE for it)"
        );
    }
    serve_requests(q, &mut ring, dev, ctx, stop, &mut aside, cqes);
}

/// A queue thread's StepAside, counted in `@metrics` while it is aside.
struct Aside<'a>(Option<crate::os::cpu::StepAside>, &'a dispatch::Ctx);

impl Aside<'_> {
    fn tick(&mut self) {
        if let Some(a) = &mut self.0 {
            let was = a.aside();
            a.tick();
            if a.aside() != was {
                self.1.count_aside(a.aside(), was);
            }
        }
    }
}

impl Drop for Aside<'_> {
    fn drop(&mut self) {
        if self
            .0
            .as_ref()
            .is_some_and(crate::os::cpu::StepAside::aside)
        {
            self.1.count_aside(false, false);
        }
    }
}

/// A queue thread's loop: answers requests until the mount goes.
fn serve_requests(
    q: &'static Queue,
    ring: &mut IoUring<Entry128>,
    dev: RawFd,
    ctx: &dispatch::Ctx,
    stop: &AtomicBool,
    aside: &mut Aside,
    mut cqes: Vec<(u64, i32)>,
) {
    let mut commit_ids = vec![0u64; q.entries.len()];
    let mut alive = q.entries.len();
    loop {
        for (ud, res) in std::mem::take(&mut cqes) {
            if ud == WAKE {
                if stop.load(Ordering::Acquire) {
                    return;
                }
                q.drain_wake();
                push(ring, &wake_sqe(q));
                continue;
            }
            let idx = ud as usize;
            if res < 0 {
                if res == -libc::EAGAIN || res == -libc::EINTR {
                    let sqe = cmd_sqe(dev, abi::CMD_COMMIT_AND_FETCH, q.qid, commit_ids[idx], idx);
                    push(ring, &sqe);
                    continue;
                }
                if res != -libc::ENOTCONN && res != -libc::ECANCELED && res != -libc::ENOENT {
                    log::warn!(
                        "io_uring queue {} entry {idx}: {}",
                        q.qid,
                        std::io::Error::from_raw_os_error(-res)
                    );
                }
                alive -= 1;
                if alive == 0 {
                    return;
                }
                continue;
            }
            // SAFETY: the completion hands the entry to this thread until it is answered.
            let header =
                unsafe { std::slice::from_raw_parts(q.entries[idx].header, abi::HEADERS_LEN) };
            commit_ids[idx] = u64::from_ne_bytes(
                header[abi::COMMIT_ID_AT..][..8]
                    .try_into()
                    .unwrap_or_default(),
            );
            serve_one(ctx, q, idx);
            aside.tick();
        }
        let answered = std::mem::take(&mut *q.done.guard());
        for idx in answered {
            let sqe = cmd_sqe(dev, abi::CMD_COMMIT_AND_FETCH, q.qid, commit_ids[idx], idx);
            push(ring, &sqe);
        }
        aside.tick();
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => {
                log::error!("io_uring queue {}: {e}", q.qid);
                return;
            }
        }
        cqes.extend(ring.completion().map(|c| (c.user_data(), c.result())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module parameter decides: Y uses the rings, N is set first by root and is a
    /// fall back to /dev/fuse for anyone else, no parameter (an older kernel) falls back.
    #[test]
    fn the_module_parameter_decides_the_transport() {
        assert_eq!(decide(Some("Y\n"), false), Ok(false));
        assert_eq!(decide(Some("Y\n"), true), Ok(false));
        assert_eq!(decide(Some("N\n"), true), Ok(true));
        let e = decide(Some("N\n"), false).unwrap_err();
        assert!(e.contains("only root"), "{e}");
        let e = decide(None, true).unwrap_err();
        assert!(e.contains("no FUSE over io_uring"), "{e}");
    }

    /// The REGISTER command names the entry's two iovecs in `addr` and `len`, and its queue
    /// in the command area (struct fuse_uring_cmd_req: flags, commit_id, qid).
    #[test]
    fn a_register_sqe_is_the_kernels() {
        let q = Queue::new(1).unwrap();
        let b = sqe_bytes(register_sqe(7, &q, 3));
        assert_eq!(b[0], opcode::UringCmd80::CODE);
        assert_eq!(i32::from_ne_bytes(b[4..8].try_into().unwrap()), 7);
        let addr = u64::from_ne_bytes(b[16..24].try_into().unwrap());
        assert_eq!(addr, q.entries[3].iov.as_ptr() as u64);
        assert_eq!(u32::from_ne_bytes(b[24..28].try_into().unwrap()), 2);
        // cmd_op is the u32 at byte 8 (off's union), user data at 32.
        assert_eq!(
            u32::from_ne_bytes(b[8..12].try_into().unwrap()),
            abi::CMD_REGISTER
        );
        assert_eq!(u64::from_ne_bytes(b[32..40].try_into().unwrap()), 3);
        // The command area starts at byte 48: qid at its byte 16.
        assert_eq!(u16::from_ne_bytes(b[64..66].try_into().unwrap()), 1);
        assert_eq!(q.entries[3].iov[1].iov_len, MAX_WRITE as usize + 4096);
    }
}
