//! Lock poisoning is handled one way throughout: a panic while a lock was held (a bug, logged
//! by the panic hook) does not take every later caller down with it. The data a lock guards is
//! kept consistent by each critical section (state is updated after the fallible work), so the
//! guard is recovered and used.

//!
//! The only place that calls `Mutex::lock`, `RwLock::read`, `RwLock::write` and the waits of
//! `Condvar`: clippy's `disallowed-methods` (clippy.toml) refuses them everywhere else.

// The one path to the raw lock calls.
#![allow(clippy::disallowed_methods)]

use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

pub trait MutexExt<T> {
    /// The guard, recovered if a holder panicked.
    fn guard(&self) -> MutexGuard<'_, T>;
}

impl<T> MutexExt<T> for Mutex<T> {
    fn guard(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub trait RwLockExt<T> {
    /// The read guard, recovered if a writer panicked.
    fn read_guard(&self) -> RwLockReadGuard<'_, T>;
    /// The write guard, recovered if a holder panicked.
    fn write_guard(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T> RwLockExt<T> for RwLock<T> {
    fn read_guard(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|e| e.into_inner())
    }
    fn write_guard(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|e| e.into_inner())
    }
}

pub trait CondvarExt {
    /// Waits for a notification; the guard recovered if a holder panicked meanwhile.
    fn wait_guard<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T>;
    /// Waits for a notification, at most `dur`; the guard recovered if a holder panicked.
    fn wait_timeout_guard<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> MutexGuard<'a, T>;
    /// Waits while `cond` holds, at most `dur`; the guard recovered if a holder panicked.
    fn wait_timeout_while_guard<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
        cond: impl FnMut(&mut T) -> bool,
    ) -> MutexGuard<'a, T>;
}

impl CondvarExt for Condvar {
    fn wait_guard<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.wait(guard).unwrap_or_else(|e| e.into_inner())
    }
    fn wait_timeout_guard<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> MutexGuard<'a, T> {
        self.wait_timeout(guard, dur)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }
    fn wait_timeout_while_guard<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
        cond: impl FnMut(&mut T) -> bool,
    ) -> MutexGuard<'a, T> {
        self.wait_timeout_while(guard, dur, cond)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_holder_does_not_poison_later_callers() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let l = std::sync::Arc::new(RwLock::new(2));
        let (m2, l2) = (m.clone(), l.clone());
        let r = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            let _w = l2.write().unwrap();
            panic!("holder panics");
        })
        .join();
        assert!(r.is_err());
        assert!(m.is_poisoned() && l.is_poisoned());
        *m.guard() += 1;
        assert_eq!(*m.guard(), 2);
        *l.write_guard() += 1;
        assert_eq!(*l.read_guard(), 3);
    }

    #[test]
    fn a_wait_on_a_poisoned_lock_goes_on() {
        let m = std::sync::Arc::new(Mutex::new(false));
        let m2 = m.clone();
        let r = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("holder panics");
        })
        .join();
        assert!(r.is_err() && m.is_poisoned());
        let cv = Condvar::new();
        let g = cv.wait_timeout_while_guard(m.guard(), Duration::from_millis(10), |s| !*s);
        assert!(!*g);
    }
}
