//! Kafka's two index rules, written once for every writer of a segment: the append
//! (`LogSegment::append`), recovery (`LogSegment::recover`) and the cleaner
//! (`CleanedWriter`). As in Kafka's `LogSegment.append`, each batch first raises the
//! segment's largest timestamp; then, once more than `index.interval.bytes` were written
//! since the last entry, the batch gets an offset-index entry at its last offset and its
//! position, with a time-index entry for the largest timestamp so far (and the last offset of
//! the first batch that has it) if that timestamp grew past the last entry's. The time index
//! keeps its last slot for the final entry a seal writes ([`IndexBuilder::seal`]).

use std::io;

use super::offset_index::{self, OffsetIndex};
use super::time_index::{self, TimeIndex};

/// Where index entries go: the mapped index files of the active segment, or entries in
/// memory written whole at the end ([`IndexEntries`]).
pub trait IndexSink {
    /// The offset index's entries and how many it can hold.
    fn offset_entries(&self) -> io::Result<(usize, usize)>;
    fn push_offset(&mut self, offset: i64, position: u32) -> io::Result<()>;
    /// The time index's entries, how many it can hold, and its last timestamp.
    fn time_entries(&self) -> io::Result<(usize, usize, Option<i64>)>;
    fn push_time(&mut self, timestamp: i64, offset: i64) -> io::Result<()>;
}

/// The index state of a segment being written: bytes since the last entry, the largest
/// timestamp and its offset.
#[derive(Debug, Clone, Copy)]
pub struct IndexBuilder {
    interval: u64,
    bytes_since_last_entry: u64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
}

impl IndexBuilder {
    /// The state of an empty segment at `base_offset` (`index.interval.bytes` = `interval`).
    pub fn new(base_offset: i64, interval: u64) -> IndexBuilder {
        IndexBuilder {
            interval,
            bytes_since_last_entry: 0,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
        }
    }

    /// Takes a changed `index.interval.bytes`.
    pub fn set_interval(&mut self, interval: u64) {
        self.interval = interval;
    }

    /// Whether the next batch gets index entries (the appender reserves their space before
    /// writing the batch).
    pub fn entry_due(&self) -> bool {
        self.bytes_since_last_entry > self.interval
    }

    /// The largest timestamp so far (-1 for none) and the offset that goes with it.
    pub fn max_timestamp(&self) -> (i64, i64) {
        (self.max_timestamp, self.offset_of_max_timestamp)
    }

    /// Takes a largest timestamp read back from a segment (its last time-index entry or a
    /// scan of its batches).
    pub fn set_max_timestamp(&mut self, timestamp: i64, offset: i64) {
        self.max_timestamp = timestamp;
        self.offset_of_max_timestamp = offset;
    }

    /// Takes the bytes written since the last entry of a segment loaded without recovery.
    pub fn set_bytes_since_last_entry(&mut self, bytes: u64) {
        self.bytes_since_last_entry = bytes;
    }

    /// One batch of `size` bytes written at `position`, ending at `last_offset` with
    /// `max_timestamp` (Kafka's per-batch step of `LogSegment.append` and `recover`).
    pub fn add(
        &mut self,
        sink: &mut impl IndexSink,
        position: u64,
        size: u64,
        last_offset: i64,
        max_timestamp: i64,
    ) -> io::Result<()> {
        if max_timestamp > self.max_timestamp {
            self.max_timestamp = max_timestamp;
            self.offset_of_max_timestamp = last_offset;
        }
        if self.entry_due() {
            let (entries, max) = sink.offset_entries()?;
            if entries < max {
                sink.push_offset(last_offset, position as u32)?;
                self.time_entry(sink, false)?;
                self.bytes_since_last_entry = 0;
            }
        }
        self.bytes_since_last_entry += size;
        Ok(())
    }

    /// Kafka's `onBecomeInactiveSegment`: the final time-index entry of a segment holding
    /// `size` bytes, into the slot kept for it.
    pub fn seal(&self, sink: &mut impl IndexSink, size: u64) -> io::Result<()> {
        if size > 0 {
            self.time_entry(sink, true)?;
        }
        Ok(())
    }

    /// Kafka's `TimeIndex.maybeAppend`: only a timestamp larger than the last entry's, and
    /// never into the last slot unless `final_entry`.
    fn time_entry(&self, sink: &mut impl IndexSink, final_entry: bool) -> io::Result<()> {
        let (entries, max, last) = sink.time_entries()?;
        if (!final_entry && entries + 1 >= max) || entries >= max {
            return Ok(());
        }
        if self.max_timestamp < 0 || last.is_some_and(|t| self.max_timestamp <= t) {
            return Ok(());
        }
        sink.push_time(self.max_timestamp, self.offset_of_max_timestamp)
    }
}

/// Index entries built in memory and written whole once the segment is done (a recovery, a
/// cleaned segment).
pub struct IndexEntries {
    base_offset: i64,
    max_offsets: usize,
    max_times: usize,
    pub offsets: Vec<u8>,
    pub times: Vec<u8>,
    last_time: Option<i64>,
}

impl IndexEntries {
    /// Room for `index_bytes` (`segment.index.bytes`) of each index.
    pub fn new(base_offset: i64, index_bytes: u64) -> IndexEntries {
        IndexEntries::with_max(
            base_offset,
            index_bytes as usize / offset_index::ENTRY_SIZE,
            index_bytes as usize / time_index::ENTRY_SIZE,
        )
    }

    /// Room for `max_offsets` offset entries and `max_times` time entries.
    pub fn with_max(base_offset: i64, max_offsets: usize, max_times: usize) -> IndexEntries {
        IndexEntries {
            base_offset,
            max_offsets,
            max_times,
            offsets: Vec::new(),
            times: Vec::new(),
            last_time: None,
        }
    }
}

impl IndexSink for IndexEntries {
    fn offset_entries(&self) -> io::Result<(usize, usize)> {
        Ok((
            self.offsets.len() / offset_index::ENTRY_SIZE,
            self.max_offsets,
        ))
    }
    fn push_offset(&mut self, offset: i64, position: u32) -> io::Result<()> {
        self.offsets.extend_from_slice(&OffsetIndex::encode_entry(
            self.base_offset,
            offset,
            position,
        ));
        Ok(())
    }
    fn time_entries(&self) -> io::Result<(usize, usize, Option<i64>)> {
        Ok((
            self.times.len() / time_index::ENTRY_SIZE,
            self.max_times,
            self.last_time,
        ))
    }
    fn push_time(&mut self, timestamp: i64, offset: i64) -> io::Result<()> {
        self.times.extend_from_slice(&TimeIndex::encode_entry(
            self.base_offset,
            timestamp,
            offset,
        ));
        self.last_time = Some(timestamp);
        Ok(())
    }
}

/// The mapped index files of an appended segment.
pub struct MappedIndexes<'a> {
    pub offsets: &'a OffsetIndex,
    pub times: &'a TimeIndex,
}

impl IndexSink for MappedIndexes<'_> {
    fn offset_entries(&self) -> io::Result<(usize, usize)> {
        self.offsets.with(|i| (i.entries(), i.max_entries()))
    }
    fn push_offset(&mut self, offset: i64, position: u32) -> io::Result<()> {
        self.offsets.append(offset, position)
    }
    fn time_entries(&self) -> io::Result<(usize, usize, Option<i64>)> {
        let last = self.times.last_entry()?.map(|(t, _)| t);
        self.times.with(|i| (i.entries(), i.max_entries(), last))
    }
    fn push_time(&mut self, timestamp: i64, offset: i64) -> io::Result<()> {
        self.times.append(timestamp, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(e: &IndexEntries) -> (usize, usize) {
        (
            e.offsets.len() / offset_index::ENTRY_SIZE,
            e.times.len() / time_index::ENTRY_SIZE,
        )
    }

    /// Item 1: the index-interval rule — an entry for the first batch written after more
    /// than `index.interval.bytes`, at that batch's position and last offset.
    #[test]
    fn index_builder_adds_an_entry_after_more_than_the_interval() {
        let mut e = IndexEntries::new(100, 1 << 20);
        let mut b = IndexBuilder::new(100, 300);
        let mut pos = 0;
        for (i, ts) in [10, 20, 15, 30, 40, 50].into_iter().enumerate() {
            b.add(&mut e, pos, 100, 100 + i as i64, ts).unwrap();
            pos += 100;
        }
        // Exactly 300 bytes before the 4th batch (at 300): no entry; 400 before the 5th.
        assert_eq!(entries(&e), (1, 1));
        assert_eq!(e.offsets, OffsetIndex::encode_entry(100, 104, 400));
        assert_eq!(e.times, TimeIndex::encode_entry(100, 40, 104));
        b.seal(&mut e, pos).unwrap();
        assert_eq!(entries(&e), (1, 2), "the final entry for timestamp 50");
        assert_eq!(&e.times[12..], TimeIndex::encode_entry(100, 50, 105));
    }

    /// Item 1: the time-index rule — no entry for a timestamp that did not grow, and the last
    /// slot only for the final entry.
    #[test]
    fn index_builder_time_entries_grow_and_keep_the_last_slot() {
        // Room for 2 time entries (24 bytes) and 3 offset entries.
        let mut e = IndexEntries::new(0, 24);
        let mut b = IndexBuilder::new(0, 0);
        b.add(&mut e, 0, 10, 0, 5).unwrap();
        assert_eq!(
            entries(&e),
            (0, 0),
            "nothing written before the first batch"
        );
        b.add(&mut e, 10, 10, 1, 5).unwrap();
        assert_eq!(entries(&e), (1, 1));
        assert_eq!(
            e.times,
            TimeIndex::encode_entry(0, 5, 0),
            "the first batch with 5"
        );
        b.add(&mut e, 20, 10, 2, 5).unwrap();
        assert_eq!(entries(&e), (2, 1), "5 did not grow");
        b.add(&mut e, 30, 10, 3, 7).unwrap();
        assert_eq!(
            entries(&e),
            (3, 1),
            "one slot left: kept for the final entry"
        );
        b.seal(&mut e, 40).unwrap();
        assert_eq!(entries(&e), (3, 2));
        assert_eq!(&e.times[12..], TimeIndex::encode_entry(0, 7, 3));
        // A full offset index takes no entry and the bytes keep counting.
        b.add(&mut e, 40, 10, 4, 9).unwrap();
        assert_eq!(entries(&e), (3, 2));
        assert!(b.entry_due());
    }
}
