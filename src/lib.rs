//! topicfs: Kafka topics stored exactly as a Kafka broker stores them, under a mountpoint.

pub mod record;
