//! FUSE passthrough, one registry for both transports: the real file of a `segments/` open is
//! registered with the kernel (FUSE_DEV_IOC_BACKING_OPEN on the connection's /dev/fuse) and
//! the kernel reads it itself. The kernel takes one backing file per inode at a time, so the
//! opens of an inode share one registration, closed (FUSE_DEV_IOC_BACKING_CLOSE) at the
//! release of the last of them.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::util::sync::MutexExt;

/// _IOW(229, 1, struct fuse_backing_map) and _IOW(229, 2, uint32_t).
const BACKING_OPEN: libc::c_ulong = 0x4010_e501;
const BACKING_CLOSE: libc::c_ulong = 0x4004_e502;

#[repr(C)]
struct BackingMap {
    fd: i32,
    flags: u32,
    padding: u64,
}

/// What an open of a file backed by a real file answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Passthrough to this backing id.
    Passthrough(u32),
    /// The daemon serves its reads.
    Daemon,
    /// Its inode's registration is of another file: the kernel is told to look it up again.
    Stale,
}

/// The passthrough registrations of one connection.
pub struct Backings {
    /// The connection's /dev/fuse, known once the session is mounted.
    dev: OnceLock<OwnedFd>,
    /// Passthrough asked for and not (yet) refused: cleared at INIT when the kernel lacks
    /// it, and at the first backing file it refuses.
    on: AtomicBool,
    registry: Mutex<Registry>,
}

impl Backings {
    /// `on`: passthrough is asked for (the kernel may still refuse it).
    pub fn new(on: bool) -> Backings {
        Backings {
            dev: OnceLock::new(),
            on: AtomicBool::new(on),
            registry: Mutex::default(),
        }
    }

    /// The mounted connection's /dev/fuse (a descriptor of its own).
    pub fn attach(&self, dev: BorrowedFd<'_>) -> std::io::Result<()> {
        let _ = self.dev.set(dev.try_clone_to_owned()?);
        Ok(())
    }

    /// Whether opens are handed to the kernel: asked for, and not refused so far.
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    /// The kernel has no passthrough (INIT): every open is the daemon's from now on.
    pub fn turn_off(&self) {
        self.on.store(false, Ordering::Release);
    }

    /// The open `fh` of inode `ino`, backed by `file`.
    pub fn open(&self, ino: u64, fh: u64, file: &File) -> Open {
        let identity = file.metadata().map(|m| (m.dev(), m.ino())).ok();
        self.registry
            .guard()
            .open(ino, fh, identity, &self.on, || self.register(file))
    }

    /// The release of `fh`: the last open of an inode closes its registration.
    pub fn release(&self, fh: u64) {
        let closed = self.registry.guard().release(fh);
        if let (Some(id), Some(dev)) = (closed, self.dev.get()) {
            // SAFETY: the ioctl reads a u32 backing id from a live u32.
            unsafe { libc::ioctl(dev.as_raw_fd(), BACKING_CLOSE, &raw const id) };
        }
    }

    fn register(&self, file: &File) -> std::io::Result<u32> {
        let dev = self
            .dev
            .get()
            .ok_or_else(|| std::io::Error::other("no FUSE connection"))?;
        let map = BackingMap {
            fd: file.as_fd().as_raw_fd(),
            flags: 0,
            padding: 0,
        };
        // SAFETY: the ioctl reads a fuse_backing_map from a live struct of that layout.
        let id = unsafe { libc::ioctl(dev.as_raw_fd(), BACKING_OPEN, &raw const map) };
        if id < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(id as u32)
    }
}

/// A registration: its id, the real file's (device, inode), the opens sharing it.
struct Shared {
    id: u32,
    file: (u64, u64),
    opens: usize,
}

/// The registrations by inode, and the inode of each passthrough open file.
#[derive(Default)]
struct Registry {
    by_ino: HashMap<u64, Shared>,
    ino_of: HashMap<u64, u64>,
}

impl Registry {
    /// The open `fh` of inode `ino`, whose real file is `identity` (None: unknown, then the
    /// daemon serves it); `register` asks the kernel for a backing id.
    fn open(
        &mut self,
        ino: u64,
        fh: u64,
        identity: Option<(u64, u64)>,
        on: &AtomicBool,
        register: impl FnOnce() -> std::io::Result<u32>,
    ) -> Open {
        if let Some(s) = self.by_ino.get_mut(&ino) {
            // The core gives another file another inode (the cleaner's rewrite of a
            // segment), so this is not expected; the kernel takes only one backing file per
            // inode, and only passthrough opens of it.
            if identity != Some(s.file) {
                return Open::Stale;
            }
            s.opens += 1;
            self.ino_of.insert(fh, ino);
            log::debug!("open file {fh}: passthrough to the real file (shared)");
            return Open::Passthrough(s.id);
        }
        let Some(file) = identity.filter(|_| on.load(Ordering::Acquire)) else {
            return Open::Daemon;
        };
        match register() {
            Ok(id) => {
                self.by_ino.insert(ino, Shared { id, file, opens: 1 });
                self.ino_of.insert(fh, ino);
                log::debug!("open file {fh}: passthrough to the real file");
                Open::Passthrough(id)
            }
            Err(e) => {
                if on.swap(false, Ordering::AcqRel) {
                    log::warn!(
                        "passthrough refused by the kernel ({e}): segments/ files are read through the daemon from now on"
                    );
                }
                Open::Daemon
            }
        }
    }

    /// The release of `fh`: the id to close when it was its inode's last open.
    fn release(&mut self, fh: u64) -> Option<u32> {
        let ino = self.ino_of.remove(&fh)?;
        let s = self.by_ino.get_mut(&ino)?;
        s.opens -= 1;
        if s.opens > 0 {
            return None;
        }
        self.by_ino.remove(&ino).map(|s| s.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Option<(u64, u64)> = Some((1, 100));
    const B: Option<(u64, u64)> = Some((1, 200));

    fn never() -> std::io::Result<u32> {
        panic!("the kernel was asked again")
    }

    /// The opens of an inode share one registration, closed at the last release; another
    /// inode gets its own.
    #[test]
    fn opens_of_an_inode_share_one_backing_until_the_last_release() {
        let on = AtomicBool::new(true);
        let mut r = Registry::default();
        assert_eq!(r.open(5, 1, A, &on, || Ok(7)), Open::Passthrough(7));
        assert_eq!(r.open(5, 2, A, &on, never), Open::Passthrough(7));
        assert_eq!(r.open(6, 3, B, &on, || Ok(8)), Open::Passthrough(8));
        assert_eq!(r.release(1), None);
        assert_eq!(r.release(99), None, "not a passthrough open");
        assert_eq!(r.release(2), Some(7));
        assert_eq!(r.release(2), None, "released once");
        assert_eq!(r.release(3), Some(8));
        // Registered again after the last release.
        assert_eq!(r.open(5, 4, A, &on, || Ok(9)), Open::Passthrough(9));
    }

    /// Another file under a registered inode is stale; a file whose identity is unknown,
    /// and every open once passthrough is off, is the daemon's.
    #[test]
    fn another_file_is_stale_and_an_off_registry_asks_nothing() {
        let on = AtomicBool::new(true);
        let mut r = Registry::default();
        assert_eq!(r.open(5, 1, A, &on, || Ok(7)), Open::Passthrough(7));
        assert_eq!(r.open(5, 2, B, &on, never), Open::Stale);
        assert_eq!(r.open(5, 2, None, &on, never), Open::Stale);
        assert_eq!(r.open(6, 3, None, &on, never), Open::Daemon);
        assert_eq!(r.release(2), None, "a stale open holds nothing");
        on.store(false, Ordering::Release);
        assert_eq!(r.open(6, 3, B, &on, never), Open::Daemon);
        // Opens of an inode already registered still share it.
        assert_eq!(r.open(5, 4, A, &on, never), Open::Passthrough(7));
    }

    /// The kernel's first refusal turns passthrough off: later opens do not ask again.
    #[test]
    fn a_refusal_turns_passthrough_off() {
        let on = AtomicBool::new(true);
        let mut r = Registry::default();
        let refused = || Err(std::io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(r.open(5, 1, A, &on, refused), Open::Daemon);
        assert!(!on.load(Ordering::Acquire));
        assert_eq!(r.open(6, 2, B, &on, never), Open::Daemon);
        assert_eq!(r.release(1), None);
    }
}
