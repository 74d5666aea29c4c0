//! A topic's delivery side, `<topic>/maildir/`: the files held in `tmp/` (and those being
//! written straight into `new/`), by name, and their delivery as one record each.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

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

/// How long a name just delivered into `new/` or `cur/` still answers `stat`, `utime` and
/// `chmod` after its file's last holder let it go (a mail client sets the times of the file
/// it just made).
pub const RECENT: Duration = Duration::from_secs(5);

/// A name just delivered into `new/` (or `cur/`, `in_cur`): not listed, but it answers its
/// deliverer (the process that renamed or linked it) as the file it was while its file is
/// held (open, or still in `tmp/` after a link) and for [`RECENT`] after. To anyone else it
/// is not there: the same name delivered again (names are keys) is created anew.
pub struct Delivered {
    pub id: u64,
    /// The process that delivered it (0: none known, then it answers no one).
    pid: u32,
    file: Weak<Mutex<Held>>,
    /// Its size, time and mode when delivered.
    len: u64,
    mtime: SystemTime,
    mode: u16,
    at: Instant,
}

/// The held files of one topic.
pub struct Delivery {
    spill_dir: PathBuf,
    by_name: BTreeMap<(Place, Vec<u8>), u64>,
    files: HashMap<u64, Entry>,
    /// Names just delivered, by (in `cur/`, name), and the name of each by file id.
    recent: HashMap<(bool, Vec<u8>), Delivered>,
    recent_names: HashMap<u64, (bool, Vec<u8>)>,
    /// When `recent` was last swept.
    swept: Instant,
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
            recent: HashMap::new(),
            recent_names: HashMap::new(),
            swept: Instant::now(),
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

    /// File `id` was delivered as `name` in `new/` (or `cur/`, `in_cur`): that name answers
    /// for a while ([`Delivered`]). `moved` (a rename, not a link): the file is the record
    /// now, and takes no more writes.
    pub fn delivered(&mut self, id: u64, in_cur: bool, name: &[u8], moved: bool, pid: u32) {
        let Some(e) = self.files.get(&id) else {
            return;
        };
        let mut f = e.file.guard();
        if moved {
            f.mark_delivered();
        }
        let d = Delivered {
            id,
            pid,
            file: Arc::downgrade(&e.file),
            len: f.len(),
            mtime: f.mtime(),
            mode: f.mode(),
            at: Instant::now(),
        };
        drop(f);
        self.sweep();
        let key = (in_cur, name.to_vec());
        if let Some(old) = self.recent.insert(key.clone(), d) {
            self.recent_names.remove(&old.id);
        }
        // Linked again under another name: both answer, the last one names it.
        self.recent_names.insert(id, key);
    }

    /// Forgets the names delivered more than [`RECENT`] ago whose files nobody holds (at
    /// most once a second).
    fn sweep(&mut self) {
        if self.swept.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.swept = Instant::now();
        self.recent
            .retain(|_, d| d.at.elapsed() < RECENT || d.file.strong_count() > 0);
        let recent = &self.recent;
        self.recent_names
            .retain(|id, key| recent.get(key).is_some_and(|d| d.id == *id));
    }

    /// The file id a name just delivered in `new/` (or `cur/`) stands for, if it still
    /// answers process `pid`.
    pub fn find_delivered(&self, in_cur: bool, name: &[u8], pid: u32) -> Option<u64> {
        let d = self.recent.get(&(in_cur, name.to_vec()))?;
        let live = d.at.elapsed() < RECENT || d.file.strong_count() > 0;
        (live && pid != 0 && d.pid == pid).then_some(d.id)
    }

    /// File `id` as its name just delivered shows it: the held file while someone holds it,
    /// else its size, time and mode then.
    pub fn delivered_file(&self, id: u64) -> Option<Arc<Mutex<Held>>> {
        let d = self.recent.get(self.recent_names.get(&id)?)?;
        if let Some(f) = d.file.upgrade() {
            return Some(f);
        }
        (d.at.elapsed() < RECENT).then(|| {
            Arc::new(Mutex::new(Held::delivered_as(
                d.len,
                d.mtime,
                d.mode,
                &self.spill_dir,
            )))
        })
    }

    /// The name file `id` was last delivered as: (in `cur/`, name).
    pub fn delivered_name(&self, id: u64) -> Option<(bool, &[u8])> {
        let (in_cur, name) = self.recent_names.get(&id)?;
        Some((*in_cur, name))
    }

    /// Appends file `id` as one record: key = `name`'s key (the name it is delivered under),
    /// value = its bytes. Returns once the storage holds it; the file stays listed.
    pub fn deliver(&self, topic: &dyn TopicStore, id: u64, name: &[u8]) -> Result<()> {
        let e = self.files.get(&id).expect("a listed file");
        let max = topic.max_message_bytes();
        let key = key_of(name);
        let value = e.file.guard().bytes(&key, max)?;
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
