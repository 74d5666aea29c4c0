//! Consumer groups on the storage side: committed offsets stored in `__consumer_offsets`
//! exactly as a Kafka broker stores them, and Kafka's range assignor.
//!
//! - [`codec`]: the record key and value bytes (OffsetCommit, GroupMetadata key), Java's
//!   `String.hashCode` and the group -> partition function.
//! - `coordinator`: [`GroupOffsets`], the committed offsets of every group: loaded at
//!   mount from every partition of `__consumer_offsets`, appended to on commit.
//! - `assignor`: [`range_assign`], which member of a group reads which partitions.

pub(crate) mod assignor;
pub mod codec;
pub(crate) mod coordinator;

pub use assignor::range_assign;
#[cfg(feature = "internals")]
pub use codec::{OffsetCommitKey, OffsetCommitValue, partition_for};
pub use coordinator::GroupOffsets;
#[cfg(feature = "internals")]
pub use coordinator::{LoadStats, OffsetsStorage};

#[cfg(test)]
mod tests {
    use crate::config::BrokerConfig;

    #[test]
    fn offsets_topic_num_partitions_key() {
        let mut c = BrokerConfig::default();
        assert_eq!(c.offsets_topic_num_partitions, 50);
        c.set("offsets.topic.num.partitions", "3").unwrap();
        assert_eq!(c.offsets_topic_num_partitions, 3);
        // Kafka's INT atLeast(1).
        assert!(c.set("offsets.topic.num.partitions", "0").is_err());
        assert!(c.set("offsets.topic.num.partitions", "x").is_err());
        assert_eq!(c.offsets_topic_num_partitions, 3);
    }
}
