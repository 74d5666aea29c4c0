//! A topic's delivery side, `<topic>/maildir/`: the files held in `tmp/` (and those being
//! written straight into `new/`), by name, and their delivery as one record each.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::held::Held;
use super::names::key_of;
use crate::error::{Error, Result};
use crate::record::RecordInput;
use crate::schema::{EncodeError, subject_for};
use crate::schemas::Schemas;
use crate::storage::TopicStore;
use crate::util::clock::now_ms;
use crate::util::sync::MutexExt;

/// Where a held file is listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    /// `tmp/`: delivered when renamed or linked into `new/` or `cur/`.
    Tmp,
    /// `new/`: a file created there, delivered at its last close; one whose name starts
    /// with `.` (a tool's temporary file, which Maildir readers ignore) is held as in `tmp/`
    /// until it is renamed to a name without one.
    New,
}

/// Whether a file of `new/` named `name` waits for a rename instead of being delivered at
/// its close: its name starts with `.` (rsync's `.NAME.XXXXXX`).
pub fn is_hidden(name: &[u8]) -> bool {
    name.first() == Some(&b'.')
}

/// A held file and where it is listed.
pub struct Entry {
    pub place: Place,
    pub name: Vec<u8>,
    pub file: Arc<Mutex<Held>>,
    /// Open files of it.
    pub opens: usize,
}

impl Entry {
    /// Whether it becomes a record at its last close: a file written straight into `new/`.
    pub fn delivers_at_close(&self) -> bool {
        self.place == Place::New && !is_hidden(&self.name)
    }
}

/// The held files of one topic.
pub struct Delivery {
    spill_dir: PathBuf,
    by_name: BTreeMap<(Place, Vec<u8>), u64>,
    files: HashMap<u64, Entry>,
    next: u64,
    tmp_changed: SystemTime,
    new_changed: SystemTime,
    /// The mount's schemas, when a value delivered may be encoded (the topic's subject).
    schemas: Option<Arc<Schemas>>,
}

impl Delivery {
    /// Values delivered to a topic with a value subject are stored in its wire format.
    pub fn encoded_by(mut self, schemas: Option<Arc<Schemas>>) -> Delivery {
        self.schemas = schemas;
        self
    }

    /// No held files; large ones spill into `spill_dir`.
    pub fn new(spill_dir: PathBuf) -> Delivery {
        let now = SystemTime::now();
        Delivery {
            spill_dir,
            by_name: BTreeMap::new(),
            files: HashMap::new(),
            next: 1,
            tmp_changed: now,
            new_changed: now,
            schemas: None,
        }
    }

    /// When `tmp/` and `new/` last changed.
    pub fn changed(&self) -> (SystemTime, SystemTime) {
        (self.tmp_changed, self.new_changed)
    }

    fn touch(&mut self, place: Place) {
        match place {
            Place::Tmp => self.tmp_changed = SystemTime::now(),
            Place::New => self.new_changed = SystemTime::now(),
        }
    }

    /// The id of the file listed as `name` in `place`.
    pub fn find(&self, place: Place, name: &[u8]) -> Option<u64> {
        self.by_name.get(&(place, name.to_vec())).copied()
    }

    pub fn get(&self, id: u64) -> Option<&Entry> {
        self.files.get(&id)
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut Entry> {
        self.files.get_mut(&id)
    }

    /// The names listed in `place`, sorted, with their ids.
    pub fn list(&self, place: Place) -> Vec<(Vec<u8>, u64)> {
        self.by_name
            .range((place, Vec::new())..)
            .take_while(|((p, _), _)| *p == place)
            .map(|((_, n), id)| (n.clone(), *id))
            .collect()
    }

    /// A new empty file `name` in `place`; None when the name is taken.
    pub fn create(&mut self, place: Place, name: &[u8]) -> Option<u64> {
        if self.find(place, name).is_some() {
            return None;
        }
        let id = self.next;
        self.next += 1;
        self.by_name.insert((place, name.to_vec()), id);
        let file = Arc::new(Mutex::new(Held::new(&self.spill_dir)));
        self.files.insert(
            id,
            Entry {
                place,
                name: name.to_vec(),
                file,
                opens: 0,
            },
        );
        self.touch(place);
        Some(id)
    }

    /// Removes file `id` (its bytes go once no open file holds them).
    pub fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.files.remove(&id)?;
        self.by_name.remove(&(e.place, e.name.clone()));
        self.touch(e.place);
        Some(e)
    }

    /// Renames file `id` to `name` in `place` (`tmp/`, or a hidden name of `new/`); a file
    /// listed under that name is replaced (discarded), unless `no_replace` (then EEXIST).
    pub fn rename(&mut self, id: u64, place: Place, name: &[u8], no_replace: bool) -> Result<()> {
        if let Some(other) = self.find(place, name) {
            if other == id {
                return Ok(());
            }
            if no_replace {
                return Err(std::io::Error::from_raw_os_error(libc::EEXIST).into());
            }
            self.remove(other);
        }
        let e = self.files.get_mut(&id).expect("a listed file");
        self.by_name.remove(&(e.place, e.name.clone()));
        let from = e.place;
        e.name = name.to_vec();
        e.place = place;
        self.by_name.insert((place, name.to_vec()), id);
        self.touch(from);
        self.touch(place);
        Ok(())
    }

    /// Appends file `id` as one record: key = `name`'s key (the name it is delivered under),
    /// value = its bytes. Returns once the storage holds it; the file stays listed.
    pub fn deliver(&self, topic: &dyn TopicStore, id: u64, name: &[u8]) -> Result<()> {
        let e = self.files.get(&id).expect("a listed file");
        let max = topic.max_message_bytes();
        let value = e.file.guard().bytes(max)?;
        let key = key_of(name);
        let encoded = match &self.schemas {
            Some(s) => s.store(topic.name(), false, &value).map_err(|e| match e {
                EncodeError::Invalid { id, reason } => Error::InvalidRecord(format!(
                    "the value does not match schema {id} of {}: {reason}",
                    subject_for(topic.name(), false)
                )),
            })?,
            None => None,
        };
        let record = RecordInput {
            key: Some(&key),
            value: Some(encoded.as_deref().unwrap_or(&value)),
            headers: &[],
            timestamp: now_ms(),
        };
        let appended = topic.append(&[record], max)?;
        if appended.records != 1 {
            return Err(Error::from(std::io::Error::other(
                "the record was not appended",
            )));
        }
        Ok(())
    }
}
