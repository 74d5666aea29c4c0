//! topicfs: Kafka topics stored exactly as a Kafka broker stores them, under a mountpoint.
//!
//! The layers, data flowing down (docs/architecture.md describes each file):
//! - `mount`: `topicfs mount` (options, daemon, `topicfs umount`, logging), the only code that
//!   touches process-wide state;
//! - `fs`: the tree, the fs core (`FsState`) with `fs/fuse/` its thin FUSE adapter (the only
//!   user of fuser: the session and the mount configuration too), and
//!   `fs/errno.rs` the one place an error becomes an errno; `addr`: the names that address
//!   records, resolved against given bounds;
//! - `group`: the consumer-group engine the fs core calls (a group's readers, their
//!   membership and rebalances, offsets files), no inodes and no FUSE;
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
//! `jsonl`, `render` (a record as a reader's line), `logtail` (`@log`), `util` (`read_window`,
//! `sync`: the one path to a lock, `clock`), `error`.
//!
//! The modules are private; the library's face is [`main`] (the `topicfs` command) and
//! [`Error`]/[`Result`]. The `internals` feature opens the modules to the crate's own tests,
//! benches and examples.

// Without remote mode, what only the cluster storage calls (its membership reports, counter
// book...) is unused.
#![cfg_attr(not(feature = "remote"), allow(dead_code))]

// The modules are the crate's own: the library's face is the short list at the end. The
// `internals` feature (on in the crate's own tests and benches, through its dev-dependency on
// itself) opens them to tests/ and benches/.
macro_rules! modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        mod $name;
    )*};
}

// The layers, top down (`cli`: the command line, over `mount`), then beside them.
modules!(
    cli,
    mount,
    addr,
    fs,
    storage,
    maildir,
    metrics,
    produce,
    table,
    consumer_offsets,
    manager,
    checkpoint,
    config,
    dump,
    error,
    group,
    jsonl,
    logtail,
    os,
    render,
    util,
    log,
    record,
);

/// The library's face: the `topicfs` command, and its error type.
pub use cli::main;
pub use error::{Error, Result};
