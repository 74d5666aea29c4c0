//! What the kernel holds of attributes that change behind it: a topic's directories (and the
//! files cached like them) show the time of the topic's or a partition's last change, and the
//! kernel keeps them for up to [`super::DIR_TTL`]. A change made through the mount (an append,
//! a config write, a delivery) makes the kernel ask again for those it was shown, so that a
//! tree walk right after it (`tar`, which compares a directory's ctime before and after
//! reading it) sees one time throughout, not a cached one and then the new one.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use super::inode::TopicName;
use super::{FsState, OpenFile};
use crate::util::sync::MutexExt;

/// The kernel's attribute cache, as the fs core may ask it to forget.
pub trait KernelCache: Send + Sync {
    /// The kernel is to ask for inode `ino`'s attributes again.
    fn forget_attrs(&self, ino: u64);
    /// The kernel is to drop the pages it caches of inode `ino` from byte `from` on (and
    /// ask for its attributes again): whether it did (false: not yet, try again later).
    fn forget_pages(&self, ino: u64, from: u64) -> bool;
    /// The kernel is to forget which inode the entry `name` of directory `parent` is (it
    /// looks the name up again at its next use). Sent later, not waited for.
    fn forget_entry(&self, parent: u64, name: &str);
}

/// A topic's time when the kernel was first shown attributes of it, and those inodes.
type Shown = (Option<SystemTime>, HashSet<u64>);

#[derive(Default)]
pub(super) struct Cached {
    kernel: OnceLock<Box<dyn KernelCache>>,
    /// Per topic, its time when the kernel was first shown attributes that depend on it since
    /// it last changed through the mount, and the inodes whose attributes those were.
    shown: Mutex<HashMap<TopicName, Shown>>,
    /// `shown` holds an inode: a change has something to make the kernel forget.
    any: AtomicBool,
}

impl Cached {
    /// Who forgets: set once the kernel's session exists (never in the core's own tests).
    pub(super) fn set_kernel(&self, kernel: Box<dyn KernelCache>) {
        let _ = self.kernel.set(kernel);
    }

    /// The kernel was shown inode `ino`'s attributes, which depend on topic `t`'s times, to
    /// be kept for a while; `at` tells the topic's time, asked only for the first inode shown
    /// since the topic last changed (a lookup of a known topic asks nothing more).
    pub(super) fn shown(&self, t: &TopicName, ino: u64, at: impl FnOnce() -> Option<SystemTime>) {
        if self.kernel.get().is_none() || ino == 0 {
            return;
        }
        if let Some((_, inodes)) = self.shown.guard().get_mut(t) {
            inodes.insert(ino);
            return;
        }
        // The topic's time is asked with no lock of ours held.
        let at = at();
        let mut shown = self.shown.guard();
        shown
            .entry(t.clone())
            .or_insert((at, HashSet::new()))
            .1
            .insert(ino);
        self.any.store(true, Ordering::Release);
    }

    /// The kernel drops its pages of inode `ino` from byte `from` on (see
    /// [`KernelCache::forget_pages`]); without a kernel (the core's own tests), done.
    pub(super) fn forget_pages(&self, ino: u64, from: u64) -> bool {
        self.kernel.get().is_none_or(|k| k.forget_pages(ino, from))
    }

    /// The kernel forgets entry `name` of directory `parent` (see
    /// [`KernelCache::forget_entry`]).
    pub(super) fn forget_entry(&self, parent: u64, name: &str) {
        if let Some(k) = self.kernel.get() {
            k.forget_entry(parent, name);
        }
    }

    /// Whether any attributes are held that a change could make stale.
    pub(super) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// A call that may have changed topic `t` ended, the topic's time now `now`: when it
    /// moved since the kernel was shown attributes of it, the kernel forgets them. (A call
    /// that changed nothing, such as a write into a maildir's `tmp/`, costs no request.)
    pub(super) fn changed(&self, t: &TopicName, now: Option<SystemTime>) {
        if !self.any() {
            return;
        }
        let inodes = {
            let mut shown = self.shown.guard();
            if shown.get(t).is_none_or(|(at, _)| *at == now) {
                return;
            }
            let inodes = shown.remove(t).map(|(_, inodes)| inodes);
            self.any.store(!shown.is_empty(), Ordering::Release);
            inodes
        };
        if let Some(kernel) = self.kernel.get() {
            for ino in inodes.into_iter().flatten() {
                kernel.forget_attrs(ino);
            }
        }
    }
}

/// On drop, the kernel forgets the attributes it holds of a topic that a call may have
/// changed (see [`Cached`]), whichever way the call returns.
pub(super) struct Changes<'a>(pub(super) &'a FsState, pub(super) Option<TopicName>);

impl Drop for Changes<'_> {
    fn drop(&mut self) {
        if let Some(t) = &self.1
            && self.0.cached.any()
        {
            self.0.cached.changed(t, self.0.topic_time(t));
        }
    }
}

impl OpenFile {
    pub(super) fn topic_name(&self) -> Option<TopicName> {
        let t = self.topic.as_deref()?;
        Some(TopicName::new(t.name(), t.incarnation()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct Record(Arc<Mutex<Vec<u64>>>);

    impl KernelCache for Record {
        fn forget_attrs(&self, ino: u64) {
            self.0.guard().push(ino);
        }
        fn forget_pages(&self, _: u64, _: u64) -> bool {
            true
        }
        fn forget_entry(&self, _: u64, _: &str) {}
    }

    #[test]
    fn a_change_makes_the_kernel_forget_what_it_was_shown_of_that_topic_once() {
        let c = Cached::default();
        let (t, u) = (TopicName::new("t", 1), TopicName::new("u", 1));
        // No kernel yet: nothing is kept.
        let (t0, t1) = (Some(SystemTime::UNIX_EPOCH), Some(SystemTime::now()));
        c.shown(&t, 5, || t0);
        assert!(!c.any());
        let forgot = Arc::new(Mutex::new(Vec::new()));
        c.set_kernel(Box::new(Record(forgot.clone())));
        c.shown(&t, 5, || t0);
        c.shown(&t, 6, || t0);
        c.shown(&u, 7, || t0);
        // A call that did not move the topic's time: nothing is forgotten.
        c.changed(&t, t0);
        assert!(forgot.guard().is_empty());
        c.changed(&t, t1);
        let mut got = forgot.guard().clone();
        got.sort();
        assert_eq!(got, vec![5, 6]);
        // Once: the kernel asks again before it holds them again.
        c.changed(&t, t1);
        assert_eq!(forgot.guard().len(), 2);
        c.changed(&u, t1);
        assert_eq!(forgot.guard().len(), 3);
        assert!(!c.any());
    }
}
