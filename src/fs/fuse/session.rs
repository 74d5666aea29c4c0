//! The FUSE session: the tree of an [`FsState`] mounted at a mountpoint, and the loop that
//! serves the kernel's requests until it is unmounted.

use std::path::Path;
use std::sync::Arc;

use super::TopicFs;
use super::config::FuseConfig;
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
}

/// A mounted session. Dropping it before [`Session::run`] unmounts.
pub struct Session(fuser::Session<TopicFs>);

impl Session {
    /// Mounts the tree of `state` at `mountpoint`. `passthrough`: let the kernel read
    /// `segments/` files itself where it can.
    pub fn mount(
        state: Arc<FsState>,
        mountpoint: &Path,
        config: &FuseConfig,
        passthrough: bool,
    ) -> std::io::Result<Session> {
        let fs = TopicFs::new(state.clone(), passthrough);
        let session = fuser::Session::new(fs, mountpoint, &config.fuser_config())?;
        state.set_kernel_cache(Box::new(KernelAttrs(session.notifier())));
        Ok(Session(session))
    }

    /// Serves the kernel's requests until the mount goes away (Ok) or the session fails.
    pub fn run(self) -> std::io::Result<()> {
        self.0.run()
    }
}
