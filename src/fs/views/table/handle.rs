//! An open `table/<key>`: the value read at open, the bytes written since, produced as the
//! key's record at close.

use std::borrow::Cow;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::handle::ViewFile;
use crate::record::RecordInput;
use crate::schema::{EncodeError, subject_for};
use crate::schemas::Schemas;
use crate::storage::TopicStore;
use crate::util::clock::now_ms;

/// The open `table/<key>` file: the value as it was at open (for reading) and the bytes
/// written since open, which become the key's new record at close.
pub struct TableHandle {
    pub(super) topic: Arc<dyn TopicStore>,
    pub(super) key: Arc<[u8]>,
    pub(super) value: Vec<u8>,
    pub(super) written: Option<Vec<u8>>,
    /// The size of what was written once it passed the largest record the topic takes (the
    /// bytes are not kept; close fails with EMSGSIZE).
    pub(super) oversized: Option<usize>,
    pub(super) max_record: usize,
    /// Whether anything was written since the last record produced.
    pub(super) wrote: bool,
    /// The mount's schemas, when a value written may be encoded (the topic's subject).
    pub(super) schemas: Option<Arc<Schemas>>,
    /// The descriptor table (FUSE lock owner) of the process that wrote last: its close
    /// produces the record; a process that only inherited the descriptor (a child exiting)
    /// does not.
    pub(super) writer: Option<u64>,
}

impl TableHandle {
    pub fn read(&self, offset: u64, size: usize) -> &[u8] {
        let start = (offset as usize).min(self.value.len());
        let end = start.saturating_add(size).min(self.value.len());
        &self.value[start..end]
    }

    /// One write: the value grows by `data`. The write that takes it past the largest
    /// record the topic takes fails with EMSGSIZE, and so does every later one: the close
    /// stores nothing (the key keeps its value).
    pub fn write(&mut self, data: &[u8], owner: Option<u64>) -> crate::error::Result<()> {
        self.wrote = true;
        self.writer = owner.or(self.writer);
        let buf = self.written.get_or_insert_with(Vec::new);
        // The batch its record would make (header and record framing with the key), as
        // `max.message.bytes` bounds it.
        let batch = crate::produce::lone_record_batch_size(Some(&self.key), buf.len() + data.len());
        if let Some(n) = &mut self.oversized {
            *n += data.len();
        } else if batch > self.max_record {
            self.oversized = Some(batch);
            *buf = Vec::new();
        } else {
            buf.extend_from_slice(data);
            return Ok(());
        }
        Err(Error::RecordTooLarge {
            size: self.oversized.unwrap_or_default(),
            max: self.max_record,
        })
    }

    /// The open truncated the file (`O_TRUNC`, `truncate`): the close stores what is written
    /// from now on, also nothing (an empty value: `: > k`, `cp /dev/null k`).
    pub fn truncate(&mut self) {
        self.written = Some(Vec::new());
        self.oversized = None;
    }

    /// Whether close has a record to produce.
    pub fn pending(&self) -> bool {
        self.written.is_some()
    }

    /// Whether bytes were written since the last record: a close produces them. A close
    /// before any write (the shell's, after it moved the descriptor with `dup2`) leaves a new
    /// key's empty value to the release.
    pub fn wrote(&self) -> bool {
        self.wrote
    }

    /// The lock owner of the last writer, when the kernel named one.
    pub fn writer(&self) -> Option<u64> {
        self.writer
    }

    /// Produces what was written as the key's record (once): to the partition Kafka's
    /// murmur2 partitioner picks, acknowledged (in the log) when this returns.
    pub fn produce(&mut self) -> crate::error::Result<()> {
        self.wrote = false;
        let Some(value) = self.written.take() else {
            return Ok(());
        };
        if let Some(size) = self.oversized.take() {
            return Err(Error::RecordTooLarge {
                size,
                max: self.max_record,
            });
        }
        let encoded = stored_value(self.schemas.as_deref(), self.topic.name(), &value)?;
        let stored = encoded.as_deref().unwrap_or(&value);
        append_record(&*self.topic, &self.key, Some(stored), self.max_record)?;
        self.value = value;
        Ok(())
    }
}

/// What a value written to `table/` (or a maildir) of `topic` is stored as: the topic's
/// value subject's wire format (`Some`), or as written (`None`: no subject, or no encoding);
/// EINVAL when it does not match the schema.
pub(in crate::fs) fn stored_value(
    schemas: Option<&Schemas>,
    topic: &str,
    value: &[u8],
) -> crate::error::Result<Option<Vec<u8>>> {
    let Some(s) = schemas else { return Ok(None) };
    s.store(topic, false, value).map_err(|e| match e {
        EncodeError::Invalid { id, reason } => Error::InvalidRecord(format!(
            "the value does not match schema {id} of {}: {reason}",
            subject_for(topic, false)
        )),
    })
}

/// Appends one keyed record (a tombstone when `value` is None) through the topic's producer.
pub(super) fn append_record(
    topic: &dyn TopicStore,
    key: &[u8],
    value: Option<&[u8]>,
    max_record: usize,
) -> crate::error::Result<()> {
    let record = RecordInput {
        key: Some(key),
        value,
        headers: &[],
        timestamp: now_ms(),
    };
    let appended = topic.append(&[record], max_record)?;
    if appended.records != 1 {
        return Err(Error::from(std::io::Error::other(
            "the record was not appended",
        )));
    }
    Ok(())
}

impl ViewFile for TableHandle {
    fn read(&mut self, offset: u64, size: usize) -> Result<Cow<'_, [u8]>> {
        Ok(Cow::Borrowed(TableHandle::read(self, offset, size)))
    }

    fn pending(&self) -> bool {
        TableHandle::pending(self)
    }

    /// The value written is produced at the close of its writer's descriptor.
    fn closes(&self) -> bool {
        true
    }

    fn finish(&mut self) -> Result<()> {
        self.produce()
    }

    fn flush(&mut self, owner: u64) -> Result<()> {
        if !self.wrote() || self.writer().is_some_and(|o| o != owner) {
            return Ok(());
        }
        self.produce()
    }
}
