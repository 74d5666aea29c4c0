//! Readers waiting at a partition's log end. A waiter registers the offset it waits past;
//! the append that publishes a log end beyond it wakes it (after the new log end is visible),
//! and so does the partition's close (topic deleted, shutdown). Waking only signals: the
//! waiter does its reading on its own thread, never on the appender's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::base::Waker;
use crate::util::sync::MutexExt;

#[derive(Default)]
pub struct Waiters {
    list: Mutex<Inner>,
    /// How many are registered: the append path looks at this before taking the lock.
    count: AtomicUsize,
}

#[derive(Default)]
struct Inner {
    waiting: Vec<(i64, Arc<dyn Waker>)>,
    closed: bool,
}

impl Waiters {
    /// Wakes `w` once the log end passes `offset` (`log_end` reads it now), or at close.
    pub fn register(&self, offset: i64, w: Arc<dyn Waker>, log_end: impl Fn() -> i64) {
        let mut inner = self.list.guard();
        if inner.closed || log_end() > offset {
            drop(inner);
            w.wake();
            return;
        }
        inner.waiting.retain(|(_, w)| !w.is_stale());
        inner.waiting.push((offset, w));
        self.count.store(inner.waiting.len(), Ordering::Release);
    }

    /// Called after a new log end is published.
    pub fn log_end_moved(&self, log_end: i64) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let ready: Vec<Arc<dyn Waker>> = {
            let mut inner = self.list.guard();
            let (ready, waiting) = std::mem::take(&mut inner.waiting)
                .into_iter()
                .partition(|(off, _)| log_end > *off);
            inner.waiting = waiting;
            self.count.store(inner.waiting.len(), Ordering::Release);
            ready.into_iter().map(|(_, w)| w).collect()
        };
        for w in ready {
            w.wake();
        }
    }

    /// Wakes everyone, now and later: the partition is gone.
    pub fn close(&self) {
        let all = {
            let mut inner = self.list.guard();
            inner.closed = true;
            self.count.store(0, Ordering::Release);
            std::mem::take(&mut inner.waiting)
        };
        for (_, w) in all {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[derive(Default)]
    struct Flag(AtomicBool);
    impl Waker for Flag {
        fn wake(&self) {
            assert!(!self.0.swap(true, Ordering::SeqCst), "woken twice");
        }
    }

    #[test]
    fn wakes_once_the_log_end_passes_the_offset_or_at_close() {
        let w = Waiters::default();
        let (a, b, c) = (
            Arc::new(Flag::default()),
            Arc::new(Flag::default()),
            Arc::new(Flag::default()),
        );
        w.register(5, a.clone(), || 5);
        w.register(7, b.clone(), || 5);
        w.log_end_moved(6);
        assert!(a.0.load(Ordering::SeqCst) && !b.0.load(Ordering::SeqCst));
        // Already past: woken at once.
        w.register(3, c.clone(), || 6);
        assert!(c.0.load(Ordering::SeqCst));
        w.close();
        assert!(b.0.load(Ordering::SeqCst));
        let d = Arc::new(Flag::default());
        w.register(100, d.clone(), || 6);
        assert!(d.0.load(Ordering::SeqCst), "after close, at once");
    }
}
