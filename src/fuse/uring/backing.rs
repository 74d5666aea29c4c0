//! FUSE passthrough for opens that come over the ring: the real file of a `segments/` open is
//! registered with the kernel (FUSE_DEV_IOC_BACKING_OPEN on /dev/fuse) and the kernel reads
//! it itself, as the fuser adapter's opens do. One registration an inode, shared by its
//! opens and closed (FUSE_DEV_IOC_BACKING_CLOSE) at the release of the last.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

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

struct Shared {
    id: u32,
    /// The real file's (device, inode).
    file: (u64, u64),
    opens: usize,
}

/// The registrations of one connection.
pub struct Backings {
    dev: RawFd,
    on: AtomicBool,
    state: Mutex<(HashMap<u64, Shared>, HashMap<u64, u64>)>,
}

/// What an open of a backed file answers.
pub enum Open {
    /// Passthrough to this backing id.
    Passthrough(u32),
    /// The daemon serves its reads.
    Daemon,
    /// Its inode's registration is of another file: the kernel is told to look it up again.
    Stale,
}

impl Backings {
    /// `on`: passthrough was asked for (the kernel may still refuse it).
    pub fn new(dev: RawFd, on: bool) -> Backings {
        Backings {
            dev,
            on: AtomicBool::new(on),
            state: Mutex::default(),
        }
    }

    /// The open `fh` of inode `ino`, backed by `file`.
    pub fn open(&self, ino: u64, fh: u64, file: &File) -> Open {
        let key = file.metadata().map(|m| (m.dev(), m.ino())).ok();
        let mut st = self.state.guard();
        if let Some(s) = st.0.get_mut(&ino) {
            if key != Some(s.file) {
                return Open::Stale;
            }
            s.opens += 1;
            let id = s.id;
            st.1.insert(fh, ino);
            log::debug!("open file {fh}: passthrough to the real file (shared)");
            return Open::Passthrough(id);
        }
        let Some(key) = key.filter(|_| self.on.load(Ordering::Acquire)) else {
            return Open::Daemon;
        };
        let map = BackingMap {
            fd: file.as_raw_fd(),
            flags: 0,
            padding: 0,
        };
        // SAFETY: the ioctl reads a fuse_backing_map from a live struct of that layout.
        let id = unsafe { libc::ioctl(self.dev, BACKING_OPEN, &raw const map) };
        if id < 0 {
            if self.on.swap(false, Ordering::AcqRel) {
                log::warn!(
                    "passthrough refused by the kernel ({}): segments/ files are read through the daemon from now on",
                    std::io::Error::last_os_error()
                );
            }
            return Open::Daemon;
        }
        st.0.insert(
            ino,
            Shared {
                id: id as u32,
                file: key,
                opens: 1,
            },
        );
        st.1.insert(fh, ino);
        log::debug!("open file {fh}: passthrough to the real file");
        Open::Passthrough(id as u32)
    }

    /// The release of `fh`: the last open of an inode closes its registration.
    pub fn release(&self, fh: u64) {
        let mut st = self.state.guard();
        let Some(ino) = st.1.remove(&fh) else {
            return;
        };
        let Some(s) = st.0.get_mut(&ino) else {
            return;
        };
        s.opens -= 1;
        if s.opens == 0 {
            let id = s.id;
            st.0.remove(&ino);
            // SAFETY: the ioctl reads a u32 backing id from a live u32.
            unsafe { libc::ioctl(self.dev, BACKING_CLOSE, &raw const id) };
        }
    }
}
