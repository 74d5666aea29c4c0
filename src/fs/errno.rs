//! The one place where an error becomes an errno.

use std::ffi::OsStr;
use std::fmt;

use super::inode::{self, Node};
use super::{FsError, FsState};
use crate::error::Error;

/// The errno (libc's numbering) the tree answers for a core error. Exhaustive: a new variant must be mapped.
pub fn errno(e: &Error) -> i32 {
    match e {
        Error::InvalidTopicName(_) => libc::EINVAL,
        Error::TopicExists(_) => libc::EEXIST,
        Error::TopicCollision { .. } => libc::EINVAL,
        Error::UnknownTopic(_) => libc::ENOENT,
        Error::TopicDeleted(_) => libc::ESTALE,
        Error::UnknownPartition { .. } => libc::ENOENT,
        Error::InvalidPartitionCount { .. } => libc::EINVAL,
        Error::OffsetOutOfRange { .. } => libc::ENOENT,
        Error::NoRecordAtOrAfter(_) => libc::ENOENT,
        Error::RecordTooLarge { .. } => libc::EMSGSIZE,
        Error::InvalidConfig(_) => libc::EINVAL,
        Error::InvalidRecord(_) => libc::EINVAL,
        Error::InvalidTimestamp(_) => libc::EINVAL,
        Error::Corrupt(_) => libc::EIO,
        Error::LogDirLocked(_) => libc::EBUSY,
        Error::LogDirOffline(_) => libc::EIO,
        Error::UntrustedLogDir(_) => libc::EACCES,
        Error::Cluster(_) => libc::EIO,
        Error::GroupBusy(_) => libc::EBUSY,
        Error::InternalTopic(_) => libc::EPERM,
        Error::ReadOnly => libc::EROFS,
        Error::NotWritable(_) => libc::EBADF,
        // ENOSPC, EDQUOT, EROFS of the disk... pass through as the disk reported them.
        Error::Io(io) => crate::os::safe_fs::os_error(io).unwrap_or(libc::EIO),
    }
}

/// Logs the failure once and gives the errno to reply with.
pub fn report(op: &str, what: &dyn fmt::Display, e: FsError) -> i32 {
    let errno = e.errno();
    let code = errno;
    // No such name, a topic deleted under its inode (the kernel looks the path up again),
    // the mount going away, no data or hole past an lseek offset: answers, not failures.
    // Nor is an access(2) answered no: a probe (a mail client asks whether it may write
    // a maildir), not a refusal of something a client did.
    if code == libc::ENOENT
        || code == libc::ESTALE
        || code == libc::ENOTCONN
        || code == libc::ENXIO
        || (op == "access" && code == libc::EACCES)
    {
        log::debug!(target: "topicfs::fs", "{op} {what}: {e} ({})", errno_name(code));
    } else if code == libc::EIO || matches!(e, FsError::Core(Error::Corrupt(_) | Error::Io(_))) {
        log::error!(target: "topicfs::fs", "{op} {what}: {e} ({})", errno_name(code));
    } else {
        log::info!(target: "topicfs::fs", "{op} {what}: {e} ({})", errno_name(code));
    }
    errno
}

/// A path of the tree below the mountpoint (`/t/table/k`), for log lines: resolved only when
/// written.
pub struct PathOf<'a> {
    pub(super) state: &'a FsState,
    pub(super) ino: u64,
    pub(super) name: Option<&'a OsStr>,
}

impl fmt::Display for PathOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.state.inodes.get(self.ino) {
            Some(Node::Root) => {}
            Some(node) => match super::view_of(&node).path(self.state, &node) {
                Some(path) => write!(f, "/{path}")?,
                None => write!(f, "/{node}")?,
            },
            None => write!(f, "(inode {})", self.ino)?,
        }
        match self.name {
            Some(name) => write!(f, "/{}", name.to_string_lossy()),
            None if self.ino == inode::ROOT_INO => f.write_str("/"),
            None => Ok(()),
        }
    }
}

/// `EMSGSIZE, Message too long`: the errno's name and its text, as a log line gives it.
fn errno_name(code: i32) -> String {
    const NAMES: &[(i32, &str)] = &[
        (libc::EPERM, "EPERM"),
        (libc::ENOENT, "ENOENT"),
        (libc::EINTR, "EINTR"),
        (libc::EIO, "EIO"),
        (libc::EBADF, "EBADF"),
        (libc::EAGAIN, "EAGAIN"),
        (libc::EACCES, "EACCES"),
        (libc::EBUSY, "EBUSY"),
        (libc::EEXIST, "EEXIST"),
        (libc::EXDEV, "EXDEV"),
        (libc::ENOTDIR, "ENOTDIR"),
        (libc::EISDIR, "EISDIR"),
        (libc::EINVAL, "EINVAL"),
        (libc::ENOTTY, "ENOTTY"),
        (libc::EFBIG, "EFBIG"),
        (libc::ENOSPC, "ENOSPC"),
        (libc::ESPIPE, "ESPIPE"),
        (libc::EROFS, "EROFS"),
        (libc::ENAMETOOLONG, "ENAMETOOLONG"),
        (libc::ENOSYS, "ENOSYS"),
        (libc::ENOTEMPTY, "ENOTEMPTY"),
        (libc::EMSGSIZE, "EMSGSIZE"),
        (libc::EOPNOTSUPP, "EOPNOTSUPP"),
        (libc::ENOTCONN, "ENOTCONN"),
        (libc::ETIMEDOUT, "ETIMEDOUT"),
        (libc::ESTALE, "ESTALE"),
        (libc::EDQUOT, "EDQUOT"),
    ];
    let text = std::io::Error::from_raw_os_error(code).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    match NAMES.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => format!("{name}, {text}"),
        None => format!("errno {code}, {text}"),
    }
}

/// "A to B".
pub(super) struct TwoPaths<'a>(pub(super) PathOf<'a>, pub(super) PathOf<'a>);

impl std::fmt::Display for TwoPaths<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} to {}", self.0, self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_errnos() {
        assert_eq!(errno(&Error::InvalidTopicName("a b".into())), libc::EINVAL);
        assert_eq!(errno(&Error::TopicExists("t".into())), libc::EEXIST);
        assert_eq!(
            errno(&Error::RecordTooLarge { size: 10, max: 5 }),
            libc::EMSGSIZE
        );
        assert_eq!(
            errno(&Error::OffsetOutOfRange {
                offset: 9,
                log_start: 0,
                log_end: 3
            }),
            libc::ENOENT
        );
        assert_eq!(
            errno(&std::io::Error::from_raw_os_error(libc::ENOSPC).into()),
            libc::ENOSPC
        );
        assert_eq!(errno(&std::io::Error::other("x").into()), libc::EIO);
        assert_eq!(errno(&Error::ReadOnly), libc::EROFS);
        assert_eq!(errno(&Error::NotWritable("x".into())), libc::EBADF);
    }
}
