//! The one place where an error becomes an errno.

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
