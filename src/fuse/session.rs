//! The FUSE session: the tree of an [`FsState`] mounted at a mountpoint, and the loop that
//! serves the kernel's requests until it is unmounted.

use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::TopicFs;
use super::backing::Backings;
use super::config::FuseConfig;
use super::ops::Ops;
use super::uring::Rings;
use crate::fs::FsState;

/// Log target of fuser's own records.
pub const FUSER_LOG_TARGET: &str = "fuser";

/// A record of fuser's about a reply the kernel no longer waits for: the process that asked
/// was killed or interrupted while it waited (ENOENT from /dev/fuse). Normal, so not an error.
pub fn unanswered_reply(record: &log::Record<'_>) -> bool {
    record.target().starts_with("fuser::reply") && record.args().to_string().contains("os error 2)")
}

/// The kernel's attribute cache of the session, told to forget through /dev/fuse.
struct KernelAttrs(fuser::Notifier);

impl crate::fs::KernelCache for KernelAttrs {
    fn forget_attrs(&self, ino: u64) {
        // Attributes only (a negative offset): no page of the inode's is dropped. ENOENT:
        // the kernel no longer holds the inode, so nothing to forget.
        if let Err(e) = self.0.inval_inode(fuser::INodeNo(ino), -1, 0)
            && e.raw_os_error() != Some(libc::ENOENT)
        {
            log::debug!("attributes of inode {ino} not forgotten: {e}");
        }
    }

    fn forget_entry(&self, parent: u64, name: &str) {
        let name = std::ffi::OsString::from(name);
        self.later(format!("entry {name:?} of inode {parent}"), move |n| {
            n.inval_entry(fuser::INodeNo(parent), &name)
        });
    }

    /// Sent from a thread of its own and waited for a while only: the kernel drops a page
    /// once no read of it is under way, and such a read may be queued behind the request
    /// this thread serves (then the size is shown at a later request).
    fn forget_pages(&self, ino: u64, from: u64) -> bool {
        let notifier = self.0.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let sent = std::thread::Builder::new()
            .name("forget-pages".into())
            .spawn(move || {
                let _ = tx.send(notifier.inval_inode(fuser::INodeNo(ino), from as i64, 0));
            });
        if let Err(e) = sent {
            log::warn!("pages of inode {ino} not dropped: no thread ({e})");
            return false;
        }
        match rx.recv_timeout(FORGET_PAGES_WAIT) {
            // ENOENT: the kernel holds no such inode, so no page of it either.
            Ok(Ok(())) => true,
            Ok(Err(e)) if e.raw_os_error() == Some(libc::ENOENT) => true,
            Ok(Err(e)) => {
                log::warn!("pages of inode {ino} not dropped: {e}");
                false
            }
            Err(_) => {
                log::debug!("pages of inode {ino} not dropped yet: a read of them is under way");
                false
            }
        }
    }
}

impl KernelAttrs {
    /// Sends `notify` from a thread of its own, not waited for: a notification about an
    /// entry must not come from the request the kernel serves it under (it may hold the
    /// directory's lock).
    fn later(
        &self,
        what: String,
        notify: impl FnOnce(&fuser::Notifier) -> std::io::Result<()> + Send + 'static,
    ) {
        let notifier = self.0.clone();
        let about = what.clone();
        let spawned = std::thread::Builder::new()
            .name("forget-entry".into())
            .spawn(move || {
                if let Err(e) = notify(&notifier)
                    && e.raw_os_error() != Some(libc::ENOENT)
                {
                    log::debug!("{about} not forgotten: {e}");
                }
            });
        if let Err(e) = spawned {
            log::warn!("{what} not forgotten: no thread ({e})");
        }
    }
}

/// How long a request waits for the kernel to drop pages (see `forget_pages`).
const FORGET_PAGES_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// A mounted session. Dropping it before [`Session::run`] unmounts.
pub struct Session {
    fuser: fuser::Session<TopicFs>,
    /// What both transports answer with: the core and the passthrough registrations.
    ops: Ops,
    /// The rings of `--io-uring`, when the kernel took the io_uring transport at INIT.
    rings: Option<Rings>,
}

impl Session {
    /// Mounts the tree of `state` at `mountpoint`. `passthrough`: let the kernel read
    /// `segments/` files itself where it can.
    pub fn mount(
        state: Arc<FsState>,
        mountpoint: &Path,
        config: &FuseConfig,
        passthrough: bool,
    ) -> std::io::Result<Session> {
        let rings = if config.io_uring {
            Rings::prepare()
        } else {
            None
        };
        let uring = Arc::new(AtomicBool::new(rings.is_some()));
        let ops = Ops::new(state.clone(), Arc::new(Backings::new(passthrough)));
        let fs = TopicFs::new(ops.clone(), uring.clone());
        let fuser = fuser::Session::new(fs, mountpoint, &config.fuser_config())?;
        // The INIT handshake is done (the kernel said whether it has passthrough); the first
        // open comes once the session runs.
        ops.backings().attach(fuser.as_fd())?;
        state.set_kernel_cache(Box::new(KernelAttrs(fuser.notifier())));
        // The kernel took the io_uring transport at INIT (else TopicFs::init said why not).
        let rings = rings.filter(|_| uring.load(Ordering::Acquire));
        Ok(Session { fuser, ops, rings })
    }

    /// Serves the kernel's requests until the mount goes away (Ok) or the session fails.
    pub fn run(self) -> std::io::Result<()> {
        let threads = match self.rings {
            None => None,
            Some(rings) => {
                let dev = self.fuser.as_fd().as_raw_fd();
                // Set first: the kernel holds every request until the rings are ready, and
                // the first may be a read of @metrics.
                self.ops.state().transport().set_io_uring(true);
                match rings.start(dev, self.ops.clone(), self.fuser.notifier()) {
                    Ok(t) => {
                        log::info!("FUSE requests come over io_uring (one ring per CPU)");
                        Some(t)
                    }
                    // A refused registration: the kernel goes on with /dev/fuse.
                    Err(e) if e.refused => {
                        self.ops.state().transport().set_io_uring(false);
                        log::warn!(
                            "io_uring transport not used (the kernel refused the rings: {}): requests come over /dev/fuse",
                            e.why
                        );
                        None
                    }
                    // INIT said io_uring and no ring was refused: the kernel holds every
                    // request until the rings are registered, so the mount would hang every
                    // caller. It ends instead (dropping the fuser session unmounts).
                    Err(e) => {
                        self.ops.state().transport().set_io_uring(false);
                        return Err(std::io::Error::other(format!(
                            "the io_uring rings could not be started ({}), and after an INIT that took io_uring the kernel serves no request until they are",
                            e.why
                        )));
                    }
                }
            }
        };
        let r = self.fuser.run();
        if let Some(t) = threads {
            t.stop();
        }
        r
    }
}
