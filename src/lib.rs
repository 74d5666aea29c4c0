//! topicfs: Kafka topics stored exactly as a Kafka broker stores them, under a mountpoint.
//!
//! The modules are private; the library's face is [`main`] (the `topicfs` command) and
//! [`Error`]/[`Result`]. The `internals` feature (on in the crate's own tests, benches and
//! examples, through its dev-dependency on itself) makes them public, so a plain build holds
//! each to dead code.

// Without remote mode, what only the cluster storage calls (its membership reports, counter
// book...) is unused.
#![cfg_attr(not(feature = "remote"), allow(dead_code))]

/// `pub_if!` declares each module `pub` where the `cfg` holds and private elsewhere. It is
/// called as `cfg_if::pub_if!` in `cfg_if`'s syntax because rustfmt follows (and formats) the
/// modules declared in a `cfg_if` call, and in no other macro's.
mod cfg_if {
    macro_rules! pub_if {
        (if #[cfg($c:meta)] { $(mod $m:ident;)* }) => {$(
            #[cfg($c)]
            pub mod $m;
            #[cfg(not($c))]
            mod $m;
        )*};
    }
    pub(crate) use pub_if;
}

// The layers, highest first, data flowing down: each module imports only modules of the rows
// below its own in docs/architecture.md's "Imports one way", which tests/architecture.rs holds
// this list and the code to.
cfg_if::pub_if! {
    if #[cfg(feature = "internals")] {
        mod cli; // the command line
        mod mount; // `topicfs mount` (options, daemon, umount, logging): process-wide state
        mod dump; // dump-log, Kafka's dump of a segment's records
        mod fuse; // the kernel's FUSE requests (/dev/fuse or io_uring), one reply layer over fs
        mod fs; // the tree: the fs core (`FsState`)
        mod group; // the consumer-group engine the fs core calls
        mod render; // a record as a reader's line, a writer's line as records
        mod jsonl; // JSON lines: what `append.jsonl` takes, `by-offset/N.jsonl` shows
        mod maildir; // a topic as a Maildir
        mod schemas; // a mount's schema registry, fed from `_schemas`
        mod table; // a topic's latest value per key
        mod storage; // the one interface the fs core is built on (local log or a cluster)
        mod consumer_offsets; // the local store of consumer-group offsets
        mod manager; // log dirs, topics, load, the background tasks
        mod produce; // a write's records into batches, keyed routing
        mod checkpoint; // Kafka's checkpoint text files
        mod log; // one partition's segments and indexes
        mod addr; // the names that address records (offsets, times), resolved against bounds
        mod config; // broker and topic configuration
        mod os; // `safe_fs` (no symlink followed), `logdir_trust` (a log dir checked), users
        mod base; // the shared bottom: the topic-name rule, a segment file, the waker...
        mod error; // the core's error type
        mod logtail; // the daemon's last log lines, for `@log`
        mod metrics; // counters and `@metrics`
        mod schema; // schema-encoded values, a pure library
        mod record; // RecordBatch v2 bytes, no files
        mod util; // `read_window`, `sync` (the one path to a lock), `clock`
    }
}

/// The library's face: the `topicfs` command, and its error type.
pub use cli::main;
pub use error::{Error, Result};
