//! The operating system's files, made safe for a daemon that is often root: `safe_fs` (file
//! operations that never follow a symlink) and `logdir_trust` (a log dir created safely and
//! checked before use); `cpu` (where threads run: pinned, or kept off a CPU); `process`
//! (/proc's view of threads), `stat` (a file system's space, a file's data and holes) and
//! `users` (users and groups by name or id): the libc calls the tree needs.

pub mod cpu;
pub(crate) mod logdir_trust;
pub mod process;
pub mod safe_fs;
pub mod stat;
pub mod users;
