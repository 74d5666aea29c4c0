//! Positional file reader.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

pub(super) const WINDOW: usize = 1 << 20;

/// Reads a file by position through a reused window buffer.
pub(super) struct PosReader {
    file: File,
    len: u64,
    buf: Vec<u8>,
    start: u64,
}

impl PosReader {
    pub(super) fn new(file: File, len: u64) -> Self {
        PosReader {
            file,
            len,
            buf: Vec::new(),
            start: 0,
        }
    }

    /// Up to `n` bytes at `pos`; fewer only when the file ends first.
    pub(super) fn read(&mut self, pos: u64, n: usize) -> io::Result<&[u8]> {
        let want_end = pos.saturating_add(n as u64).min(self.len);
        if pos >= want_end {
            return Ok(&[]);
        }
        let win_end = self.start + self.buf.len() as u64;
        if pos < self.start || want_end > win_end {
            let size = (want_end - pos).max(WINDOW as u64).min(self.len - pos) as usize;
            if self.buf.capacity() > 8 * WINDOW && size <= WINDOW {
                self.buf = Vec::new();
            }
            self.buf.clear();
            self.buf.resize(size, 0);
            let mut got = 0;
            while got < size {
                match self.file.read_at(&mut self.buf[got..], pos + got as u64) {
                    Ok(0) => break,
                    Ok(k) => got += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.buf.clear();
                        return Err(e);
                    }
                }
            }
            self.buf.truncate(got);
            self.start = pos;
        }
        let from = (pos - self.start) as usize;
        let to = ((want_end - self.start) as usize).min(self.buf.len());
        Ok(&self.buf[from.min(to)..to])
    }
}
