//! `<topic>/groups/<G>/offsets`: a group's committed offsets as lines, and the reset lines
//! written to it (`kafka-consumer-groups --reset-offsets`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::Result;
use crate::fs::handle::{OneChange, ViewFile};
use crate::fs::inode::TopicName;
use crate::fs::view;
use crate::fs::{FsResult, FsState, OpenFile, tree};
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
        crate::fs::handle::slice_at(&self.content, offset, size)
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

/// Whether `o`'s group may be moved now: not while it has a reader here, nor while it has
/// active members elsewhere (remote mode).
pub(in crate::fs) fn movable(fs: &FsState, of: &OpenFile, o: &OffsetsHandle) -> FsResult<()> {
    let topic = of.topic.as_ref().expect("a topic's file");
    let t = TopicName::new(topic.name(), topic.incarnation());
    if view::group_taken(fs, &t, o.group()) {
        return tree(
            libc::EBUSY,
            format!(
                "group {} of {t} has records taken in its maildir: offsets not moved",
                o.group()
            ),
        );
    }
    if fs.group_busy(&t, o.group()) {
        return tree(
            libc::EBUSY,
            format!("group {} of {t} has a reader: offsets not moved", o.group()),
        );
    }
    fs.groups.check_idle(o.group())?;
    Ok(())
}

/// Applies the lines written through an `offsets` open (see [`OneChange`]).
pub(in crate::fs) fn apply(
    fs: &FsState,
    of: &OpenFile,
    o: &mut OffsetsHandle,
    closer: Option<u64>,
) -> FsResult<()> {
    if !o.pending() {
        return Ok(());
    }
    if let Err(e) = movable(fs, of, o) {
        // Nothing of the open is applied.
        o.discard();
        return Err(e);
    }
    o.apply(&*fs.groups, closer)?;
    if let Some(topic) = &of.topic {
        let t = TopicName::new(topic.name(), topic.incarnation());
        view::group_reset(fs, &t, o.group());
    }
    Ok(())
}

impl ViewFile for OffsetsHandle {
    fn read(&mut self, offset: u64, size: usize) -> Result<Cow<'_, [u8]>> {
        Ok(Cow::Borrowed(OffsetsHandle::read(self, offset, size)))
    }

    fn pending(&self) -> bool {
        OffsetsHandle::pending(self)
    }

    /// Its lines are applied at the close of their writer's descriptor (the view's close).
    fn closes(&self) -> bool {
        true
    }
}
