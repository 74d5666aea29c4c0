//! The operating system's files, made safe for a daemon that is often root: `safe_fs` (file
//! operations that never follow a symlink) and `logdir_trust` (a log dir created safely and
//! checked before use).

pub(crate) mod logdir_trust;
pub mod safe_fs;
