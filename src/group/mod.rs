//! The consumer-group engine below the tree: a topic read as a group's member (cursors per
//! partition, what was delivered and committed, rebalances' hand-over), and a topic read
//! whole without a group. The tree (`crate::fs`) opens readers, registers them with the
//! group's membership, and answers reads with what they give.

pub mod reader;

pub use reader::{
    BULK_READ, COMMIT_INTERVAL, GroupHandle, HOLD_LIMIT, LINE_IO_SIZE, WholeTopicPart,
};
