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
        let mut batches = self.batches(0, file_len, Check::Full(BatchSource::Window(&mut window)));
        for b in &mut batches {
            let BatchPos {
                position,
                header: h,
            } = b?;
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
        let (valid, next_offset) = (batches.pos(), batches.prev_last().map(|last| last + 1));
        match batches.stopped() {
            // A torn last batch ends the log without a word, as in Kafka's nextBatch.
            None
            | Some(
                NotABatch::PartialHeader { .. }
                | NotABatch::PastEnd { .. }
                | NotABatch::ShortFile { .. },
            ) => {}
            Some(e) => log::warn!(
                "Found invalid messages in log segment {} at byte offset {valid}: {e}",
                self.log_path.display()
            ),
        }
        index.seal(&mut entries, valid)?;
        self.offset_index.replace_with(&entries.offsets)?;
        self.time_index.replace_with(&entries.times)?;
        let truncated = file_len - valid;
        if truncated > 0 && !self.read_only {
            self.file()?.set_len(valid)?;
        }
        self.size.store(valid, Ordering::Release);
        self.checked.shrink(valid);
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
        let mut batches =
            self.batches(pos, file_len, Check::Full(BatchSource::Window(&mut window)));
        for b in &mut batches {
            b?;
        }
        let at = batches.pos();
        Ok(match batches.stopped() {
            None => None,
            Some(NotABatch::Invalid(e)) => Some(format!("invalid batch at byte {at}: {e}")),
            Some(e) => Some(format!(
                "{} bytes after the last whole batch at byte {at}: {e}",
                file_len - at
            )),
        })
    }

    /// The offset after the last batch (Kafka's `readNextOffset`): scan from the last index
    /// entry. None when the segment is empty.
    pub fn read_next_offset(&self) -> io::Result<(Option<i64>, Option<i32>)> {
        let start = self
            .offset_index
            .last_entry()?
            .map(|(_, p)| p as u64)
            .unwrap_or(0);
        let mut last = None;
        for b in self.batches(start, self.size(), Check::Header) {
            last = Some(b?.header);
        }
        Ok((
            last.map(|h| h.next_offset()),
            last.map(|h| h.partition_leader_epoch),
        ))
    }
}
