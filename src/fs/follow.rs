//! Reads that wait: a `follow` read at the log end keeps its reply here ("parked"), not a
//! worker thread. The partition wakes it when a record arrives (or the topic goes); one
//! thread, `topicfs-follow`, then answers it by reading its open file again
//! ([`FsState::read_parked`]). The same thread answers
//! EINTR to a parked read whose thread has a signal to take (the kernel waits for our answer
//! even when the reader is killed), and `poll` registers a wake-up of its own. It also makes
//! the periodic commits of group readers that are not reading (idle in `poll`, or busy).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::types::ReadReply;
use super::{FsState, OpenFile};
use crate::base::Waker;
use crate::util::sync::MutexExt;

/// How long a parked read waits before its thread's signals are looked at, and how often.
const SIGNAL_CHECK: Duration = Duration::from_millis(200);

/// How often the group readers' periodic commits are looked at (they are due every
/// [`crate::group::COMMIT_INTERVAL`]).
const COMMIT_SCAN: Duration = Duration::from_secs(1);

/// One read(2): of open file `fh`, `size` bytes at `offset`, by thread `pid`; `nonblock`:
/// EAGAIN where it would wait.
#[derive(Clone, Copy)]
pub(super) struct Read {
    pub fh: u64,
    pub offset: u64,
    pub size: u32,
    pub pid: u32,
    pub nonblock: bool,
}

/// A read waiting for records.
pub(super) struct Parked {
    pub fh: u64,
    /// Its open file.
    pub file: Arc<OpenFile>,
    pub offset: u64,
    pub size: u32,
    /// The thread that asked (FUSE's pid field): its signals end the wait.
    pub pid: u32,
    pub since: Instant,
    pub reply: Box<dyn ReadReply>,
    answered: Arc<AtomicBool>,
}

/// The parked reads, by id.
pub(super) struct Parking {
    parked: Mutex<HashMap<u64, Parked>>,
    next_id: AtomicU64,
    wake_tx: Mutex<Sender<u64>>,
    wake_rx: Mutex<Option<Receiver<u64>>>,
}

/// Wakes one parked read (sends its id to the follow thread).
struct ParkWaker {
    id: u64,
    tx: Sender<u64>,
    answered: Arc<AtomicBool>,
}

impl Waker for ParkWaker {
    fn wake(&self) {
        let _ = self.tx.send(self.id);
    }
    fn is_stale(&self) -> bool {
        self.answered.load(Ordering::Acquire)
    }
}

impl Parking {
    pub(super) fn new() -> Parking {
        let (tx, rx) = channel();
        Parking {
            parked: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            wake_tx: Mutex::new(tx),
            wake_rx: Mutex::new(Some(rx)),
        }
    }

    /// Keeps a read; returns the waker the storage calls when it can be answered.
    pub(super) fn park(
        &self,
        file: &Arc<OpenFile>,
        r: Read,
        reply: Box<dyn ReadReply>,
    ) -> Arc<dyn Waker> {
        let Read {
            fh,
            offset,
            size,
            pid,
            ..
        } = r;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let answered = Arc::new(AtomicBool::new(false));
        self.parked.guard().insert(
            id,
            Parked {
                fh,
                file: file.clone(),
                offset,
                size,
                pid,
                since: Instant::now(),
                reply,
                answered: answered.clone(),
            },
        );
        Arc::new(ParkWaker {
            id,
            tx: self.wake_tx.guard().clone(),
            answered,
        })
    }

    /// Takes a parked read out to answer it (None if it was answered already).
    fn take(&self, id: u64) -> Option<Parked> {
        let p = self.parked.guard().remove(&id)?;
        p.answered.store(true, Ordering::Release);
        Some(p)
    }

    /// How many reads wait now.
    pub(super) fn waiting(&self) -> usize {
        self.parked.guard().len()
    }

    /// Takes every parked read out (shutdown).
    pub(super) fn take_all(&self) -> Vec<Parked> {
        let all: Vec<Parked> = self.parked.guard().drain().map(|(_, p)| p).collect();
        for p in &all {
            p.answered.store(true, Ordering::Release);
        }
        all
    }

    /// Takes out the parked reads of `fh` (its file was released).
    pub(super) fn take_of(&self, fh: u64) -> Vec<Parked> {
        let parked = self.parked.guard();
        let ids: Vec<u64> = parked
            .iter()
            .filter(|(_, p)| p.fh == fh)
            .map(|(id, _)| *id)
            .collect();
        drop(parked);
        ids.into_iter().filter_map(|id| self.take(id)).collect()
    }

    /// The parked reads waiting longer than [`SIGNAL_CHECK`] whose thread has a signal to
    /// take (or is gone).
    fn take_interrupted(&self) -> Vec<Parked> {
        let candidates: Vec<(u64, u32)> = self
            .parked
            .guard()
            .iter()
            .filter(|(_, p)| p.since.elapsed() >= SIGNAL_CHECK)
            .map(|(id, p)| (*id, p.pid))
            .collect();
        candidates
            .into_iter()
            .filter(|(_, pid)| crate::os::process::signal_pending(*pid))
            .filter_map(|(id, _)| self.take(id))
            .collect()
    }
}

/// Starts the follow thread: it answers woken reads and interrupted ones until the state
/// is gone.
pub(super) fn start(state: &Arc<FsState>) {
    let Some(rx) = state.parking.wake_rx.guard().take() else {
        return;
    };
    let weak: Weak<FsState> = Arc::downgrade(state);
    let spawned = crate::os::cpu::spawn("topicfs-follow".into(), move || {
        let mut last_scan = Instant::now();
        let mut last_commits = Instant::now();
        loop {
            let woken = rx.recv_timeout(SIGNAL_CHECK);
            let Some(state) = weak.upgrade() else { break };
            match woken {
                Ok(id) => {
                    if let Some(p) = state.parking.take(id) {
                        state.read_parked(p);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            // The signal scan reads /proc once per parked read: at most every
            // SIGNAL_CHECK, however many wake-ups arrive meanwhile.
            if last_scan.elapsed() < SIGNAL_CHECK {
                continue;
            }
            last_scan = Instant::now();
            for p in state.parking.take_interrupted() {
                log::debug!("read of open file {}: the reader was interrupted", p.fh);
                p.reply.error(libc::EINTR);
            }
            if last_commits.elapsed() >= COMMIT_SCAN {
                last_commits = Instant::now();
                state.tend_group_readers();
                state.members.refresh(&*state);
            }
        }
    });
    if let Err(e) = spawned {
        log::error!("cannot start the follow thread: {e}; follow reads will not wait");
    }
}

/// Calls a `poll` notification once the partition has a record past the offset; stale when
/// a later poll of the same file registered another.
pub(super) struct PollWaker {
    pub notify: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    pub generation: u64,
    pub current: Arc<AtomicU64>,
}

impl Waker for PollWaker {
    fn wake(&self) {
        if let Some(f) = self.notify.guard().take() {
            f();
        }
    }
    fn is_stale(&self) -> bool {
        self.current.load(Ordering::Acquire) != self.generation || self.notify.guard().is_none()
    }
}
