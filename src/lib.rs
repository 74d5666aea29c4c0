//! topicfs: Kafka topics stored exactly as a Kafka broker stores them, under a mountpoint.

pub mod config;
pub mod dump;
pub mod error;
pub mod log;
pub mod record;

pub use error::{Error, Result};
pub mod checkpoint;
pub mod manager;
pub mod fs;
pub mod partitioner;
pub mod jsonl;
