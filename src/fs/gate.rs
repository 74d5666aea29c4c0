//! The core's gate: a callback enters the core (the read side of the shutdown lock), a
//! shutdown waits for every callback inside; a thread already inside enters again freely.

use std::sync::RwLockReadGuard;

use super::{FsResult, FsState, tree};
use crate::util::sync::RwLockExt;

thread_local! {
    /// The cores (by address) this thread is inside of, once per entry.
    static INSIDE: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A thread's entry to the core ([`FsState::gate`]): the read side of the shutdown lock for
/// the first entry, nothing for the ones inside it.
pub(super) struct Gate<'a> {
    state: usize,
    _guard: Option<RwLockReadGuard<'a, bool>>,
}

impl Drop for Gate<'_> {
    fn drop(&mut self) {
        INSIDE.with(|i| {
            let mut i = i.borrow_mut();
            if let Some(at) = i.iter().rposition(|s| *s == self.state) {
                i.remove(at);
            }
        });
    }
}

/// Entry to the core for one callback: ENOTCONN once the shutdown began; until the
/// guard drops, the shutdown waits. A thread already inside (a callback that calls
/// another: a parked read answered again) enters again without taking the lock: a second
/// read lock behind a waiting writer would wait for ever.
pub(super) fn enter(fs: &FsState) -> FsResult<Gate<'_>> {
    let me = fs as *const FsState as usize;
    if INSIDE.with(|i| i.borrow().contains(&me)) {
        INSIDE.with(|i| i.borrow_mut().push(me));
        return Ok(Gate {
            state: me,
            _guard: None,
        });
    }
    let g = fs.closed.read_guard();
    if *g {
        return tree(libc::ENOTCONN, "the filesystem is shutting down");
    }
    INSIDE.with(|i| i.borrow_mut().push(me));
    Ok(Gate {
        state: me,
        _guard: Some(g),
    })
}
