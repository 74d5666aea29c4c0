//! Files the mount holds and never appends: in `table/`, the names that start with `.` (an
//! editor's swap and temporary files: `.k.swp`, `.k.tmp`). Such a file is read and written at
//! offsets as a plain file is, until it is removed, or renamed to a key (then its bytes become
//! the key's record). It does not survive the daemon. Each is a maildir's held file
//! (`crate::maildir::held`): in memory, spilled to an unnamed file of the mount's when large.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::fs::handle::ViewFile;
use crate::fs::inode::TopicName;
use crate::fs::types::HeldFile;
use crate::util::sync::MutexExt;

/// The held files of every topic's `table/`, by topic and name.
#[derive(Default)]
pub struct Held {
    files: Mutex<HashMap<(TopicName, Arc<str>), HeldFile>>,
}

impl Held {
    /// Whether `name` is one the mount holds instead of a key's: it starts with `.`.
    pub fn is_held_name(name: &str) -> bool {
        name.starts_with('.') && name != "." && name != ".."
    }

    pub fn get(&self, t: &TopicName, name: &str) -> Option<HeldFile> {
        self.files
            .guard()
            .get(&(t.clone(), Arc::from(name)))
            .cloned()
    }

    /// The file `name`, made empty when it does not exist (spilling into `spill_dir` when
    /// it grows large).
    pub fn get_or_create(&self, t: &TopicName, name: &str, spill_dir: &Path) -> HeldFile {
        self.files
            .guard()
            .entry((t.clone(), Arc::from(name)))
            .or_insert_with(|| Arc::new(Mutex::new(crate::maildir::held::Held::new(spill_dir))))
            .clone()
    }

    /// Inserts `file` as `name` (a rename onto it replaces what was there).
    pub fn put(&self, t: &TopicName, name: &str, file: HeldFile) {
        self.files
            .guard()
            .insert((t.clone(), Arc::from(name)), file);
    }

    pub fn remove(&self, t: &TopicName, name: &str) -> Option<HeldFile> {
        self.files.guard().remove(&(t.clone(), Arc::from(name)))
    }

    /// Drops every held file of the topic named `name` (it was deleted).
    pub fn forget_topic(&self, name: &str) {
        self.files.guard().retain(|(topic, _), _| &**topic != name);
    }
}

/// An open held file: read and written in place, nothing to do at its close.
impl ViewFile for HeldFile {
    fn read(&mut self, offset: u64, size: usize) -> crate::error::Result<Cow<'_, [u8]>> {
        Ok(Cow::Owned(self.guard().read_at(offset, size)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dot_names_are_held() {
        assert!(Held::is_held_name(".k.swp"));
        assert!(!Held::is_held_name("k"));
        assert!(!Held::is_held_name("."));
        assert!(!Held::is_held_name(".."));
    }
}
