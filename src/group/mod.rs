//! The consumer-group engine below the tree: a topic read as a group's member (cursors per
//! partition, what was delivered and committed, rebalances' hand-over), and a topic read
//! whole without a group, and the membership of the groups (`members.rs`: who reads which
//! partitions, rebalances, the mount as a member of a group with members elsewhere) and
//! their committed offsets as `groups/<G>/offsets` shows and resets them (`offsets.rs`). The
//! tree (`crate::fs`) opens readers, joins them to their group through [`Membership`], and
//! answers reads with what they give.

pub(crate) mod members;
pub(crate) mod offsets;
pub mod reader;

pub(crate) use members::{Join, Membership, Readers};
pub use reader::{GroupHandle, GroupRead, LINE_IO_SIZE, WholeTopicPart};

#[cfg(test)]
mod tests;
