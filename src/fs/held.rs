//! Files the mount holds in memory and never appends: in `table/`, the names that start with
//! `.` (an editor's swap and temporary files: `.k.swp`, `.k.tmp`). Such a file is read and
//! written at offsets as a plain file is, until it is removed, or renamed to a key (then its
//! bytes become the key's record). It does not survive the daemon.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::inode::TopicName;
use crate::util::sync::MutexExt;

/// One held file's bytes and time.
pub struct HeldFile {
    pub data: Vec<u8>,
    pub modified: SystemTime,
}

impl HeldFile {
    fn new() -> HeldFile {
        HeldFile {
            data: Vec::new(),
            modified: SystemTime::now(),
        }
    }

    /// Writes `data` at `offset` (a hole before it reads as zeros).
    pub fn write_at(&mut self, offset: u64, data: &[u8]) {
        let start = offset as usize;
        if self.data.len() < start + data.len() {
            self.data.resize(start + data.len(), 0);
        }
        self.data[start..start + data.len()].copy_from_slice(data);
        self.modified = SystemTime::now();
    }

    /// Up to `size` bytes at `offset`.
    pub fn read_at(&self, offset: u64, size: usize) -> &[u8] {
        super::handle::slice_at(&self.data, offset, size)
    }

    pub fn set_len(&mut self, len: u64) {
        self.data.resize(len as usize, 0);
        self.modified = SystemTime::now();
    }
}

pub type Shared = Arc<Mutex<HeldFile>>;

/// The held files of every topic's `table/`, by topic and name.
#[derive(Default)]
pub struct Held {
    files: Mutex<HashMap<(TopicName, Arc<str>), Shared>>,
}

impl Held {
    /// Whether `name` is one the mount holds instead of a key's: it starts with `.`.
    pub fn is_held_name(name: &str) -> bool {
        name.starts_with('.') && name != "." && name != ".."
    }

    pub fn get(&self, t: &TopicName, name: &str) -> Option<Shared> {
        self.files
            .guard()
            .get(&(t.clone(), Arc::from(name)))
            .cloned()
    }

    /// The file `name`, made empty when it does not exist.
    pub fn get_or_create(&self, t: &TopicName, name: &str) -> Shared {
        self.files
            .guard()
            .entry((t.clone(), Arc::from(name)))
            .or_insert_with(|| Arc::new(Mutex::new(HeldFile::new())))
            .clone()
    }

    /// Inserts `file` as `name` (a rename onto it replaces what was there).
    pub fn put(&self, t: &TopicName, name: &str, file: Shared) {
        self.files
            .guard()
            .insert((t.clone(), Arc::from(name)), file);
    }

    pub fn remove(&self, t: &TopicName, name: &str) -> Option<Shared> {
        self.files.guard().remove(&(t.clone(), Arc::from(name)))
    }

    /// Drops every held file of the topic named `name` (it was deleted).
    pub fn forget_topic(&self, name: &str) {
        self.files.guard().retain(|(topic, _), _| &**topic != name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_at_offsets_read_back_with_holes_as_zeros() {
        let mut f = HeldFile::new();
        f.write_at(4, b"abc");
        assert_eq!(f.read_at(0, 100), b"\0\0\0\0abc");
        f.write_at(0, b"xy");
        assert_eq!(f.read_at(1, 3), b"y\0\0");
        f.set_len(2);
        assert_eq!(f.read_at(0, 100), b"xy");
    }

    #[test]
    fn only_dot_names_are_held() {
        assert!(Held::is_held_name(".k.swp"));
        assert!(!Held::is_held_name("k"));
        assert!(!Held::is_held_name("."));
        assert!(!Held::is_held_name(".."));
    }
}
