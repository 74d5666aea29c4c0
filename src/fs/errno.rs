//! The one place where an error becomes an errno.

use fuser::Errno;

use crate::error::Error;

/// The errno the FUSE layer replies for a core error. Exhaustive: a new variant must be mapped.
pub fn errno(e: &Error) -> Errno {
    match e {
        Error::InvalidTopicName(_) => Errno::EINVAL,
        Error::TopicExists(_) => Errno::EEXIST,
        Error::TopicCollision { .. } => Errno::EINVAL,
        Error::UnknownTopic(_) => Errno::ENOENT,
        Error::TopicDeleted(_) => Errno::ESTALE,
        Error::UnknownPartition { .. } => Errno::ENOENT,
        Error::InvalidPartitionCount { .. } => Errno::EINVAL,
        Error::OffsetOutOfRange { .. } => Errno::ENOENT,
        Error::NoRecordAtOrAfter(_) => Errno::ENOENT,
        Error::RecordTooLarge { .. } => Errno::EMSGSIZE,
        Error::InvalidConfig(_) => Errno::EINVAL,
        Error::InvalidRecord(_) => Errno::EINVAL,
        Error::InvalidTimestamp(_) => Errno::EINVAL,
        Error::Corrupt(_) => Errno::EIO,
        Error::LogDirLocked(_) => Errno::EBUSY,
        Error::LogDirOffline(_) => Errno::EIO,
        Error::UntrustedLogDir(_) => Errno::EACCES,
        // ENOSPC, EDQUOT, EROFS... pass through as the disk reported them.
        Error::Io(io) => crate::safe_fs::os_error(io)
            .map(Errno::from_i32)
            .unwrap_or(Errno::EIO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_errnos() {
        assert_eq!(errno(&Error::InvalidTopicName("a b".into())), Errno::EINVAL);
        assert_eq!(errno(&Error::TopicExists("t".into())), Errno::EEXIST);
        assert_eq!(
            errno(&Error::RecordTooLarge { size: 10, max: 5 }),
            Errno::EMSGSIZE
        );
        assert_eq!(
            errno(&Error::OffsetOutOfRange {
                offset: 9,
                log_start: 0,
                log_end: 3
            }),
            Errno::ENOENT
        );
        assert_eq!(
            errno(&Error::Io(std::io::Error::from_raw_os_error(libc::ENOSPC))),
            Errno::ENOSPC
        );
        assert_eq!(errno(&Error::Io(std::io::Error::other("x"))), Errno::EIO);
    }
}
