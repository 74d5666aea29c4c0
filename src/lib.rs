//! topicfs: Kafka topics stored exactly as a Kafka broker stores them, under a mountpoint.
//!
//! The layers, data flowing down; each module imports only those of the lines below its own
//! (docs/architecture.md, "Imports one way", which tests/architecture.rs holds the code to):
//! - `cli`: the command line;
//! - `mount`: `topicfs mount` (options, daemon, `topicfs umount`, logging), the only code that
//!   touches process-wide state; `dump`: dump-log, Kafka's dump of a segment's records;
//! - `fuse`: the kernel's FUSE requests, over `/dev/fuse` (fuser) or io_uring, answered
//!   through one reply layer over the fs core (the only user of fuser: the session and the
//!   mount configuration too);
//! - `fs`: the tree, the fs core (`FsState`), which knows nothing of FUSE, and
//!   `fs/errno.rs` the one place an error becomes an errno;
//! - `group`: the consumer-group engine the fs core calls (a group's readers, their
//!   membership and rebalances, offsets files), no inodes and no FUSE;
//! - `render` (a record as a reader's line), over `jsonl`; `maildir` (a topic as a Maildir);
//! - `schemas` (a mount's schema registry, fed from `_schemas`), `table` (a topic's latest
//!   value per key);
//! - `storage`: the one interface the fs core is built on (local log, or a Kafka cluster);
//! - `consumer_offsets`: the local store of consumer-group offsets, `__consumer_offsets`;
//! - `manager`: log dirs, topics, load, the background tasks;
//! - `produce`: a write's records into batches, keyed routing;
//! - `log`: one partition's segments and indexes, shaped like Kafka's storage module;
//!   `checkpoint`;
//! - `os` (`safe_fs`: file operations that never follow a symlink; `logdir_trust`: a log dir
//!   checked before use), `config`, `addr` (the names that address records, resolved
//!   against given bounds);
//! - `base`: the shared bottom (the topic-name rule, the internal topics' names, the default
//!   log dir, a segment file, the waker, an append's answer, the rules every storage shares);
//! - `error`, `schema` (schema-encoded values, a pure library), `metrics` (counters and
//!   `@metrics`), `logtail` (`@log`);
//! - `record`: RecordBatch v2 bytes, no files; `util` (`read_window`, `sync`: the one path to
//!   a lock, `clock`).
//!
//! The modules are private; the library's face is [`main`] (the `topicfs` command) and
//! [`Error`]/[`Result`]. The `internals` feature opens the modules to the crate's own tests,
//! benches and examples.

// Without remote mode, what only the cluster storage calls (its membership reports, counter
// book...) is unused.
#![cfg_attr(not(feature = "remote"), allow(dead_code))]

// The modules are the crate's own: the library's face is the short list at the end. The
// `internals` feature (on in the crate's own tests and benches, through its dev-dependency on
// itself) opens them to tests/ and benches/. Each is declared twice, not through a macro:
// rustfmt formats only the modules it sees declared (and keeps them sorted; the layers are
// listed at the top).
#[cfg(feature = "internals")]
pub mod addr;
#[cfg(not(feature = "internals"))]
mod addr;
#[cfg(feature = "internals")]
pub mod base;
#[cfg(not(feature = "internals"))]
mod base;
#[cfg(feature = "internals")]
pub mod checkpoint;
#[cfg(not(feature = "internals"))]
mod checkpoint;
#[cfg(feature = "internals")]
pub mod cli;
#[cfg(not(feature = "internals"))]
mod cli;
#[cfg(feature = "internals")]
pub mod config;
#[cfg(not(feature = "internals"))]
mod config;
#[cfg(feature = "internals")]
pub mod consumer_offsets;
#[cfg(not(feature = "internals"))]
mod consumer_offsets;
#[cfg(feature = "internals")]
pub mod dump;
#[cfg(not(feature = "internals"))]
mod dump;
#[cfg(feature = "internals")]
pub mod error;
#[cfg(not(feature = "internals"))]
mod error;
#[cfg(feature = "internals")]
pub mod fs;
#[cfg(not(feature = "internals"))]
mod fs;
#[cfg(feature = "internals")]
pub mod fuse;
#[cfg(not(feature = "internals"))]
mod fuse;
#[cfg(feature = "internals")]
pub mod group;
#[cfg(not(feature = "internals"))]
mod group;
#[cfg(feature = "internals")]
pub mod jsonl;
#[cfg(not(feature = "internals"))]
mod jsonl;
#[cfg(feature = "internals")]
pub mod log;
#[cfg(not(feature = "internals"))]
mod log;
#[cfg(feature = "internals")]
pub mod logtail;
#[cfg(not(feature = "internals"))]
mod logtail;
#[cfg(feature = "internals")]
pub mod maildir;
#[cfg(not(feature = "internals"))]
mod maildir;
#[cfg(feature = "internals")]
pub mod manager;
#[cfg(not(feature = "internals"))]
mod manager;
#[cfg(feature = "internals")]
pub mod metrics;
#[cfg(not(feature = "internals"))]
mod metrics;
#[cfg(feature = "internals")]
pub mod mount;
#[cfg(not(feature = "internals"))]
mod mount;
#[cfg(feature = "internals")]
pub mod os;
#[cfg(not(feature = "internals"))]
mod os;
#[cfg(feature = "internals")]
pub mod produce;
#[cfg(not(feature = "internals"))]
mod produce;
#[cfg(feature = "internals")]
pub mod record;
#[cfg(not(feature = "internals"))]
mod record;
#[cfg(feature = "internals")]
pub mod render;
#[cfg(not(feature = "internals"))]
mod render;
#[cfg(feature = "internals")]
pub mod schema;
#[cfg(not(feature = "internals"))]
mod schema;
#[cfg(feature = "internals")]
pub mod schemas;
#[cfg(not(feature = "internals"))]
mod schemas;
#[cfg(feature = "internals")]
pub mod storage;
#[cfg(not(feature = "internals"))]
mod storage;
#[cfg(feature = "internals")]
pub mod table;
#[cfg(not(feature = "internals"))]
mod table;
#[cfg(feature = "internals")]
pub mod util;
#[cfg(not(feature = "internals"))]
mod util;

/// The library's face: the `topicfs` command, and its error type.
pub use cli::main;
pub use error::{Error, Result};
