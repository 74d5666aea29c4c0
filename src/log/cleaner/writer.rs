//! The `.cleaned` segment a group of segments is rewritten into: `<base>.log.cleaned` plus
//! its `.index.cleaned`, `.timeindex.cleaned` and (when an aborted transaction still has
//! batches in it) `.txnindex.cleaned`. Index entries follow the rules of an append
//! ([`IndexBuilder`]), and the segment is sealed as at a roll: one last time-index entry,
//! indexes trimmed.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::SystemTime;

use super::txn::{AbortedTxn, txn_index_name};
use crate::log::index_builder::{IndexBuilder, IndexEntries};
use crate::log::segment::{index_name, log_name, time_index_name};
use crate::os::safe_fs::Dir;

pub const CLEANED_SUFFIX: &str = ".cleaned";
pub const SWAP_SUFFIX: &str = ".swap";

/// The four file names of the segment at `base` (the `.txnindex` one last).
pub fn segment_file_names(base: i64) -> [String; 4] {
    [
        log_name(base),
        index_name(base),
        time_index_name(base),
        txn_index_name(base),
    ]
}

pub struct CleanedWriter {
    dir: Arc<Dir>,
    pub base_offset: i64,
    log: io::BufWriter<File>,
    size: u64,
    index: IndexBuilder,
    entries: IndexEntries,
    last_offset: Option<i64>,
    pub txns: Vec<AbortedTxn>,
}

impl CleanedWriter {
    /// Creates `<base>.log.cleaned` (removing leftovers of an earlier attempt first).
    pub fn create(
        dir: &Arc<Dir>,
        base_offset: i64,
        index_interval_bytes: u64,
        segment_index_bytes: u64,
    ) -> io::Result<CleanedWriter> {
        remove_files(dir, base_offset, CLEANED_SUFFIX)?;
        let f = dir.create_new(&format!("{}{CLEANED_SUFFIX}", log_name(base_offset)))?;
        Ok(CleanedWriter {
            dir: dir.clone(),
            base_offset,
            log: io::BufWriter::with_capacity(1 << 20, f),
            size: 0,
            index: IndexBuilder::new(base_offset, index_interval_bytes),
            entries: IndexEntries::new(base_offset, segment_index_bytes),
            last_offset: None,
            txns: Vec::new(),
        })
    }

    /// Appends one batch (whole, valid) ending at `last_offset` with `max_timestamp`.
    pub fn append(&mut self, batch: &[u8], last_offset: i64, max_timestamp: i64) -> io::Result<()> {
        let (position, size) = (self.size, batch.len() as u64);
        self.index.add(
            &mut self.entries,
            position,
            size,
            last_offset,
            max_timestamp,
        )?;
        self.log.write_all(batch)?;
        self.size += size;
        self.last_offset = Some(last_offset);
        Ok(())
    }

    /// Seals the segment (final time entry), writes its indexes, fsyncs every file and gives
    /// the `.log` the modification time of the last segment it replaces.
    pub fn finish(mut self, modified: Option<SystemTime>) -> io::Result<CleanedSegment> {
        self.index.seal(&mut self.entries, self.size)?;
        let log = self.log.into_inner().map_err(|e| e.into_error())?;
        log.sync_all()?;
        let write = |name: String, bytes: &[u8]| -> io::Result<()> {
            let mut f = self.dir.create_new(&format!("{name}{CLEANED_SUFFIX}"))?;
            f.write_all(bytes)?;
            f.sync_all()
        };
        write(index_name(self.base_offset), &self.entries.offsets)?;
        write(time_index_name(self.base_offset), &self.entries.times)?;
        if !self.txns.is_empty() {
            let bytes: Vec<u8> = self.txns.iter().flat_map(|t| t.encode()).collect();
            write(txn_index_name(self.base_offset), &bytes)?;
        }
        if let Some(m) = modified {
            set_modified(&log, m)?;
        }
        Ok(CleanedSegment {
            base_offset: self.base_offset,
            size: self.size,
        })
    }
}

/// A finished `.cleaned` segment.
#[derive(Debug, Clone, Copy)]
pub struct CleanedSegment {
    pub base_offset: i64,
    pub size: u64,
}

fn set_modified(f: &File, t: SystemTime) -> io::Result<()> {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    let times = [ts, ts];
    // SAFETY: a valid descriptor and a two-element timespec array.
    if unsafe { libc::futimens(f.as_raw_fd(), times.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Removes the files of the segment at `base` that carry `suffix`, if any.
pub fn remove_files(dir: &Dir, base: i64, suffix: &str) -> io::Result<()> {
    for name in segment_file_names(base) {
        dir.remove_if_exists(&format!("{name}{suffix}"))?;
    }
    Ok(())
}

/// Renames the files of the segment at `base` from suffix `from` to suffix `to`, as Kafka's
/// `changeFileSuffixes` does (an absent file, such as a `.txnindex` never written, is skipped).
pub fn rename_files(dir: &Dir, base: i64, from: &str, to: &str) -> io::Result<()> {
    for name in segment_file_names(base) {
        match dir.rename(&format!("{name}{from}"), &format!("{name}{to}")) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            r => r?,
        }
    }
    Ok(())
}
