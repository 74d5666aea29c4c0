//! `<topic>/groups/<G>/offsets`: a group's committed offsets as lines, and the reset lines
//! written to it (`kafka-consumer-groups --reset-offsets`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::handle::OneChange;
use crate::error::Result;
use crate::storage::{GroupStore, TopicStore};

/// `<topic>/groups/<G>/offsets`: `partition committed log-end lag` lines as they were at
/// open; a write of reset lines (`P N`, `P earliest|latest`, `earliest`, `latest`,
/// `shift-by K`, `to-datetime T`, `by-duration D`) moves G's committed offsets as
/// `kafka-consumer-groups --reset-offsets` does. One open is one change
/// ([`OneChange`]): lines are checked as they are written and applied at close.
pub struct OffsetsHandle {
    topic: Arc<dyn TopicStore>,
    group: String,
    content: Vec<u8>,
    change: OneChange<(u32, i64)>,
}

impl OffsetsHandle {
    pub fn open(topic: Arc<dyn TopicStore>, group: &str, groups: &dyn GroupStore) -> Result<Self> {
        let content = Self::text(&*topic, group, groups)?.into_bytes();
        Ok(OffsetsHandle {
            topic,
            group: group.to_string(),
            content,
            change: OneChange::default(),
        })
    }

    /// The file's text now: a line `partition committed log-end lag` per partition (`-` for
    /// no commit). Its length is the file's size in `stat`.
    pub fn text(topic: &dyn TopicStore, group: &str, groups: &dyn GroupStore) -> Result<String> {
        crate::group::offsets::offsets_text(topic, group, groups)
    }

    pub fn group(&self) -> &str {
        &self.group
    }

    pub fn read(&self, offset: u64, size: usize) -> &[u8] {
        super::handle::slice_at(&self.content, offset, size)
    }

    /// Whether written lines wait to be applied.
    pub fn pending(&self) -> bool {
        self.change.pending()
    }

    /// One write: every line parsed and checked now (a negative offset, an unknown partition
    /// or a line of another form fails the write, and the whole open); applied at close.
    /// Lines are those of `kafka-consumer-groups --reset-offsets` (see
    /// [`crate::addr::parse_reset_line`]); offsets outside [log start, log end] are moved to
    /// the nearer end, as Kafka's tool does.
    pub fn write(
        &mut self,
        groups: &dyn GroupStore,
        data: &[u8],
        owner: Option<u64>,
    ) -> Result<()> {
        let (topic, group) = (&self.topic, &self.group);
        // Lines start from what the earlier writes of this open set (bash's printf writes a
        // line at a time).
        self.change.write(owner, |earlier| {
            crate::group::offsets::reset_targets(&**topic, group, groups, earlier, data)
        })
    }

    /// A write refused for the state of the group (it has a reader): the open failed, as
    /// after a bad line; nothing of it is applied, and its later writes fail.
    pub fn fail(&mut self, why: String) {
        self.change.fail(why);
    }

    /// Drops the lines written through this open: nothing of it is applied.
    pub fn discard(&mut self) {
        self.change.take(None);
    }

    /// Moves G's committed offsets to the lines written through this open, at the close of
    /// the process that wrote them (`Some(owner)`) or at release (`None`); a partition given
    /// twice takes its last offset.
    pub fn apply(&mut self, groups: &dyn GroupStore, closer: Option<u64>) -> Result<()> {
        let target: BTreeMap<u32, i64> = self.change.take(closer).into_iter().collect();
        if target.is_empty() {
            return Ok(());
        }
        groups.reset(&self.group, self.topic.name(), &target)
    }
}
