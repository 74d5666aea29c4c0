//! topicfs: Kafka topics stored exactly as a Kafka broker stores them, under a mountpoint.
//!
//! The layers, data flowing down (docs/architecture.md describes each file):
//! - `mount`: `topicfs mount` (options, daemon, `topicfs umount`, logging), the only code that
//!   touches process-wide state;
//! - `fs`: the tree, the fs core (`FsState`) with `fs/fuse/` its thin FUSE adapter (the only
//!   user of fuser: the session and the mount configuration too), and
//!   `fs/errno.rs` the one place an error becomes an errno; `addr`: the names that address
//!   records, resolved against given bounds;
//! - `storage`: the one interface the fs core is built on (local log, or a Kafka cluster);
//! - `table` (a topic's latest value per key), `maildir` (a topic as a Maildir), `metrics`
//!   (counters and `@metrics`), `produce`
//!   (a write's records into batches, keyed routing);
//! - `manager` (log dirs, topics, load, the background tasks) and `consumer_offsets` (the
//!   local store of consumer-group offsets, `__consumer_offsets`);
//! - `log`: one partition's segments and indexes, shaped like Kafka's storage module;
//! - `record`: RecordBatch v2 bytes, no files.
//!
//! Beside them: `dump` (dump-log over `record`), `os` (`safe_fs`: file operations that never
//! follow a symlink; `logdir_trust`: a log dir checked before use), `checkpoint`, `config`,
//! `jsonl`, `util` (`read_window`, `sync`: the one path to a lock, `clock`), `error`.

// The layers, top down (`cli`: the command line, over `mount`).
pub mod cli;
pub mod mount;

pub(crate) mod addr;
pub mod fs;

pub mod storage;

pub mod maildir;
pub(crate) mod metrics;
pub mod produce;
pub mod table;

pub mod consumer_offsets;
pub mod manager;

pub mod log;

pub mod record;

// Beside them.
pub(crate) mod checkpoint;
pub mod config;
pub mod dump;
pub(crate) mod error;
pub mod group;
pub(crate) mod jsonl;
pub mod logtail;
pub mod os;
pub mod render;
pub mod util;

pub use error::{Error, Result};
