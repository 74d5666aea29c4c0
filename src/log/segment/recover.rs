//! Recovery of one segment, as Kafka's `LogSegment.recover`: every batch validated from byte
//! 0, both indexes rebuilt, the `.log` cut at the first invalid byte; and the checks of a
//! segment's tail at a clean mount.

use super::*;

impl LogSegment {
    /// Kafka's `LogSegment.recover`: validates every batch from byte 0 (size, magic, CRC,
    /// offsets increasing and inside this segment), rebuilds both indexes, and truncates the
    /// `.log` at the first invalid byte. Returns (bytes truncated, next offset or None if empty).
    pub fn recover(&self, cfg: &LogConfig) -> io::Result<(u64, Option<i64>)> {
        let file_len = self.file()?.metadata()?.len();
        // Rebuilt in memory and written once at the end (Kafka resets and appends to the
        // mapped files; the entries are the same).
        let mut entries = IndexEntries::with_max(
            self.base_offset,
            self.offset_index.max_entries(),
            self.time_index.max_entries(),
        );
        let mut index = IndexBuilder::new(self.base_offset, cfg.index_interval_bytes);
        let mut rolling_base_timestamp = None;
        // Sequential: 1 MiB at a time instead of two small reads per batch.
        let mut window = ReadWindow::fixed(1 << 20);
        let mut scan = self.scan(&mut window, 0, file_len);
        loop {
            let position = scan.pos;
            let h = match scan.next_batch()? {
                Scanned::Batch(view) => view.header,
                // A torn last batch ends the log without a word, as in Kafka's nextBatch.
                Scanned::End
                | Scanned::Not(
                    NotABatch::PartialHeader { .. }
                    | NotABatch::PastEnd { .. }
                    | NotABatch::ShortFile { .. },
                ) => break,
                Scanned::Not(e) => {
                    log::warn!(
                        "Found invalid messages in log segment {} at byte offset {position}: {e}",
                        self.log_path.display()
                    );
                    break;
                }
            };
            rolling_base_timestamp.get_or_insert(h.max_timestamp);
            let size = h.size() as u64;
            index.add(
                &mut entries,
                position,
                size,
                h.last_offset(),
                h.max_timestamp,
            )?;
        }
        let (valid, next_offset) = (scan.pos, scan.prev_last.map(|last| last + 1));
        index.seal(&mut entries, valid)?;
        self.offset_index.replace_with(&entries.offsets)?;
        self.time_index.replace_with(&entries.times)?;
        let truncated = file_len - valid;
        if truncated > 0 && !self.read_only {
            self.file()?.set_len(valid)?;
        }
        self.size.store(valid, Ordering::Release);
        self.reset_record_count();
        *self.state.guard() = SegmentAppendState {
            index,
            max_timestamp_known: true,
            rolling_base_timestamp,
        };
        self.indexes_checked.store(true, Ordering::Release);
        Ok((truncated, next_offset))
    }

    /// The cheap check of an active segment loaded after a clean shutdown: from the last index
    /// entry that points at a batch, every batch must be whole, pass its CRC, have increasing
    /// offsets, and the last one must end exactly at the end of the file. Returns the first
    /// problem found (bytes after the last valid batch, a bad CRC...), or None.
    pub fn tail_problem(&self) -> io::Result<Option<String>> {
        let file_len = self.file()?.metadata()?.len();
        let pos = match self.offset_index.last_entry()? {
            Some((off, p)) if self.entry_points_at_batch(off, p, file_len)? => p as u64,
            _ => 0,
        };
        let mut window = ReadWindow::new(64 * 1024, 1 << 20);
        let mut scan = self.scan(&mut window, pos, file_len);
        loop {
            let at = scan.pos;
            match scan.next_batch()? {
                Scanned::Batch(_) => {}
                Scanned::End => return Ok(None),
                Scanned::Not(NotABatch::Invalid(e)) => {
                    return Ok(Some(format!("invalid batch at byte {at}: {e}")));
                }
                Scanned::Not(e) => {
                    return Ok(Some(format!(
                        "{} bytes after the last whole batch at byte {at}: {e}",
                        file_len - at
                    )));
                }
            }
        }
    }

    /// The offset after the last batch (Kafka's `readNextOffset`): scan from the last index
    /// entry. None when the segment is empty.
    pub fn read_next_offset(&self) -> io::Result<(Option<i64>, Option<i32>)> {
        let start = self
            .offset_index
            .last_entry()?
            .map(|(_, p)| p as u64)
            .unwrap_or(0);
        let limit = self.size();
        let mut pos = start;
        let mut last = None;
        while let Some(h) = self.header_at(pos, limit)? {
            last = Some(h);
            pos += h.size() as u64;
        }
        Ok((
            last.map(|h| h.next_offset()),
            last.map(|h| h.partition_leader_epoch),
        ))
    }
}
