//! An open file held in a maildir's `tmp/` (or written straight into `new/`, delivered at its
//! writer's last close).

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::fs::handle::ViewFile;
use crate::maildir::delivery::Delivery;
use crate::maildir::held::Held;
use crate::maildir::names::key_of;
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

/// An open file of a maildir's `tmp/` (or `new/`, written straight into it).
pub struct HeldHandle {
    topic: Arc<dyn TopicStore>,
    delivery: Arc<Mutex<Delivery>>,
    id: u64,
    file: Arc<Mutex<Held>>,
    max_record: usize,
    released: bool,
    /// The descriptor table (FUSE lock owner) of the process that wrote last, once one
    /// wrote: its close delivers a file of `new/`. A close before any write (the shell's,
    /// after it moved the descriptor with `dup2`) leaves that to a later close.
    writer: Option<Option<u64>>,
    /// The size a refused write would have made a file of `new/`: it is never delivered.
    oversized: Option<usize>,
    /// A write came after the file was delivered: it is not in the record.
    lost_write: bool,
}

impl HeldHandle {
    pub(super) fn new(
        topic: Arc<dyn TopicStore>,
        delivery: Arc<Mutex<Delivery>>,
        id: u64,
    ) -> Option<Self> {
        let file = {
            let mut d = delivery.guard();
            let e = d.get_mut(id)?;
            e.opens += 1;
            e.file.clone()
        };
        let max_record = topic.max_message_bytes();
        Some(HeldHandle {
            topic,
            delivery,
            id,
            file,
            max_record,
            released: false,
            writer: None,
            oversized: None,
            lost_write: false,
        })
    }

    pub fn read(&self, offset: u64, size: usize) -> Result<Vec<u8>> {
        self.file.guard().read_at(offset, size)
    }

    /// Writes at `offset`. A file being written into `new/` becomes a record at its close: a
    /// write that takes its record (the value, the key its name gives, the batch framing)
    /// past `max.message.bytes` fails at once (EMSGSIZE).
    pub fn write(&mut self, offset: u64, data: &[u8], owner: Option<u64>) -> Result<()> {
        if self.file.guard().delivered() {
            self.lost_write = true;
            return self.lost_write();
        }
        self.writer = Some(owner.or(self.writer.flatten()));
        let key = self
            .delivery
            .guard()
            .get(self.id)
            .filter(|e| e.delivers_at_close())
            .map(|e| key_of(&e.name));
        let end = offset.saturating_add(data.len() as u64);
        if let Some(key) = key {
            let len = self.file.guard().len().max(end) as usize;
            let size = crate::produce::lone_record_batch_size(Some(&key), len);
            if size > self.max_record {
                self.oversized = Some(size);
                return Err(Error::RecordTooLarge {
                    size,
                    max: self.max_record,
                });
            }
        }
        self.file.guard().write_at(offset, data)
    }

    /// EIO once a write came after the file was renamed into `new/` or `cur/`: the rename
    /// returned with the record in the log, which cannot take what comes later. fsync and
    /// close report that failure too.
    pub fn lost_write(&self) -> Result<()> {
        if self.lost_write {
            return Err(Error::from(std::io::Error::other(
                "a write came after the file was delivered (renamed into new/): the record does not have it",
            )));
        }
        Ok(())
    }

    /// Whether its close has something to do: deliver it (a file of `new/`), or report a
    /// write that came after its delivery.
    pub fn pending(&self) -> bool {
        self.lost_write
            || self
                .delivery
                .guard()
                .get(self.id)
                .is_some_and(|e| e.delivers_at_close())
    }

    /// close(2): a file of `new/` is delivered at the close of its last open file (it is
    /// removed whether or not the record could be appended: the close says which).
    pub fn close(&mut self, owner: u64) -> Result<()> {
        self.lost_write()?;
        match self.writer {
            Some(Some(w)) if w != owner => return Ok(()),
            None => return Ok(()),
            _ => {}
        }
        self.deliver_if_last()
    }

    fn deliver_if_last(&mut self) -> Result<()> {
        let mut d = self.delivery.guard();
        let Some(e) = d.get(self.id) else {
            return Ok(());
        };
        if !e.delivers_at_close() || e.opens > 1 {
            return Ok(());
        }
        let name = e.name.clone();
        let _live = self.topic.live()?;
        let res = match self.oversized {
            // A write of it failed: what it holds is not what was written.
            Some(size) => Err(Error::RecordTooLarge {
                size,
                max: self.max_record,
            }),
            None => d.deliver(&*self.topic, self.id, &name),
        };
        if let Some(e) = d.get(self.id) {
            e.file.guard().mark_delivered();
        }
        d.remove(self.id);
        res
    }

    /// The open file goes (release, shutdown): the last one of a file of `new/` delivers it.
    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let last = {
            let mut d = self.delivery.guard();
            match d.get_mut(self.id) {
                Some(e) => {
                    e.opens = e.opens.saturating_sub(1);
                    e.opens == 0 && e.delivers_at_close()
                }
                None => false,
            }
        };
        if last {
            // The count is 0: close() sees it as the last.
            if let Some(e) = self.delivery.guard().get_mut(self.id) {
                e.opens = 1;
            }
            return self.deliver_if_last();
        }
        Ok(())
    }
}

impl ViewFile for HeldHandle {
    fn read(&mut self, offset: u64, size: usize) -> Result<Cow<'_, [u8]>> {
        Ok(Cow::Owned(HeldHandle::read(self, offset, size)?))
    }

    fn pending(&self) -> bool {
        HeldHandle::pending(self)
    }

    /// A file of `new/` is delivered at its writer's close.
    fn closes(&self) -> bool {
        true
    }

    fn finish(&mut self) -> Result<()> {
        self.release()
    }

    fn flush(&mut self, owner: u64) -> Result<()> {
        self.close(owner)
    }

    fn fsync(&self) -> Result<()> {
        self.lost_write()
    }
}
