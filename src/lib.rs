//! topicfs: Kafka topics stored exactly as a Kafka broker stores them, under a mountpoint.
//!
//! Layers, data flowing down: `fs` (the FUSE adapter) over `manager` (log dirs, topics) over
//! `log` (one partition's segments and indexes) over `record` (RecordBatch v2 bytes).

pub mod addr;
pub mod checkpoint;
pub mod config;
pub mod dump;
pub mod error;
pub mod fs;
pub mod group;
pub mod jsonl;
pub mod log;
pub mod logdir_trust;
pub mod manager;
pub mod metrics;
pub mod mount;
pub mod produce;
pub mod read_window;
pub mod record;
pub mod safe_fs;
pub mod storage;
pub mod sync;
pub mod table;

pub use error::{Error, Result};
