//! The replies a read-ahead prepares for a sequential reader, ahead of its requests: a
//! stream's read-ahead job decodes one reply's bytes (a window) after the other while its
//! reader is served, up to [`WINDOWS_AHEAD`] of them, instead of one per request. The job
//! keeps the core it runs on instead of sleeping until the next request hands it the next
//! window; the reader's thread takes each window when its request comes, and sleeps only
//! when the decoding is behind.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

use crate::util::sync::{CondvarExt, MutexExt};

/// Windows a read-ahead prepares at most before it stops (and hands its cursor back).
pub const WINDOWS_AHEAD: usize = 2;

/// Buffers kept for the windows to come (those the replies gave back).
const SPARE_BUFFERS: usize = 2;

/// One reply's bytes, `buf[start..start + len]`, at file offset `pos`.
#[derive(Default)]
pub struct Window {
    pub pos: u64,
    pub buf: Vec<u8>,
    pub start: usize,
    pub len: usize,
}

impl Window {
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

#[derive(Default)]
struct State {
    /// Prepared, in file order, contiguous: each starts where the one before ended.
    ready: VecDeque<Window>,
    spare: Vec<Vec<u8>>,
    /// A job that prepares windows was handed the cursor and has not finished.
    running: bool,
    /// The reader wants the cursor back: the job prepares no further window.
    stop: bool,
}

/// What a stream and its read-ahead job share.
#[derive(Default)]
pub struct Windows {
    state: Mutex<State>,
    changed: Condvar,
}

/// Ends a job's turn when dropped (also when the job panics): the reader waiting for a
/// window is told there will be no more.
pub struct Running<'a>(&'a Windows);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.state.guard().running = false;
        self.0.changed.notify_all();
    }
}

impl Windows {
    /// A job is handed the cursor: it prepares windows until [`Windows::wants_more`] says no.
    pub fn start(&self) {
        let mut st = self.state.guard();
        st.running = true;
        st.stop = false;
    }

    /// Held by the job while it runs.
    pub fn running(&self) -> Running<'_> {
        Running(self)
    }

    /// Whether the job should prepare another window.
    pub fn wants_more(&self) -> bool {
        let st = self.state.guard();
        !st.stop && st.ready.len() < WINDOWS_AHEAD
    }

    /// A buffer for the next window (a reused one when there is one).
    pub fn buffer(&self) -> Vec<u8> {
        self.state.guard().spare.pop().unwrap_or_default()
    }

    /// A reply's buffer, once sent, for a later window.
    pub fn give_back(&self, mut buf: Vec<u8>) {
        let mut st = self.state.guard();
        if st.spare.len() < SPARE_BUFFERS && buf.capacity() > 0 {
            buf.clear();
            st.spare.push(buf);
        }
    }

    pub fn push(&self, w: Window) {
        self.state.guard().ready.push_back(w);
        self.changed.notify_all();
    }

    /// The window a read of `size` bytes at `pos` gets, waiting for it while a job that
    /// `started` prepares it. None when the next window is not that read's (another offset
    /// or size), or none is ready and none will be.
    pub fn take(&self, pos: u64, size: usize, started: impl Fn() -> bool) -> Option<Window> {
        let mut st = self.state.guard();
        loop {
            if let Some(w) = st.ready.front() {
                if w.pos != pos || w.len != size {
                    return None;
                }
                return st.ready.pop_front();
            }
            // A job no pool thread has started yet is the reader's to take back (see
            // `Ahead::wait`): it does not wait for a busy pool.
            if !st.running || !started() {
                return None;
            }
            st = self.changed.wait_guard(st);
        }
    }

    /// Whether a job is still running.
    pub fn is_running(&self) -> bool {
        self.state.guard().running
    }

    /// Asks a running job to stop after the window it is preparing.
    pub fn stop(&self) {
        self.state.guard().stop = true;
    }

    /// The windows prepared and not taken, in order (the job stopped: no more come).
    pub fn drain(&self) -> VecDeque<Window> {
        std::mem::take(&mut self.state.guard().ready)
    }

    pub fn is_empty(&self) -> bool {
        self.state.guard().ready.is_empty()
    }
}
