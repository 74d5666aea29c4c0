//! Every test that mounts topicfs, in one test binary (one link instead of one per file): a
//! module per part of the contract, each with its own doc. They share `tests/common` (real
//! mounts, decoders, background readers). Run one part with `cargo test --test mount <module>::`.

#[path = "../common/mod.rs"]
mod common;

mod addressing;
mod append;
mod append_kv;
mod cache;
mod compaction;
mod config;
mod consume_trust;
mod dovecot;
mod editors;
mod errors;
mod exact;
mod files;
mod follow;
mod groups;
mod install;
mod integrity;
mod jsonl;
mod lifecycle;
mod log_file;
mod mail_clients;
mod maildir;
mod metrics;
mod mmap;
mod passthrough;
mod read;
mod readme;
mod readonly;
mod refusals;
mod reliability;
mod rsyslog;
mod schemas;
mod segments;
mod service_user;
mod symlinks;
mod table;
mod tree;
mod trust;
mod walks;
