//! The one positional read window: sequential scans of a segment (recovery, streaming reads,
//! dump-log) read large chunks by position into a reused buffer instead of two small reads per
//! batch, and hand out slices of it.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A source read by position. `read_full_at` fills `buf` unless the source ends first, and
/// returns how many bytes it read.
pub trait ReadAt {
    fn read_full_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize>;
}

impl ReadAt for File {
    fn read_full_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.read_at(&mut buf[done..], pos + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

/// A window of bytes `[start, start + len)` of some source. A request the window does not
/// cover refills it from the requested position with at least the current chunk size; the
/// chunk doubles on every refill up to `max_chunk` (a lookup reads little, a stream a lot).
pub struct ReadWindow {
    buf: Vec<u8>,
    start: u64,
    len: usize,
    chunk: usize,
    max_chunk: usize,
}

impl ReadWindow {
    pub fn new(first_chunk: usize, max_chunk: usize) -> ReadWindow {
        ReadWindow {
            buf: Vec::new(),
            start: 0,
            len: 0,
            chunk: first_chunk.min(max_chunk),
            max_chunk,
        }
    }

    /// A window that always refills `chunk` bytes.
    pub fn fixed(chunk: usize) -> ReadWindow {
        ReadWindow::new(chunk, chunk)
    }

    /// Forgets the bytes held (the source changed).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Up to `n` bytes of `src` at `pos`, never reading at or past `limit`: fewer than `n`
    /// only when `limit` or the source ends first.
    pub fn read<R: ReadAt + ?Sized>(
        &mut self,
        src: &R,
        pos: u64,
        n: usize,
        limit: u64,
    ) -> io::Result<&[u8]> {
        let want_end = pos.saturating_add(n as u64).min(limit);
        if pos >= want_end {
            return Ok(&[]);
        }
        let covered = pos >= self.start && want_end <= self.start + self.len as u64;
        if !covered {
            let size = ((want_end - pos) as usize)
                .max(self.chunk)
                .min((limit - pos) as usize);
            self.chunk = (self.chunk * 2).min(self.max_chunk);
            if self.buf.capacity() > 8 * self.max_chunk && size <= self.max_chunk {
                // One huge batch was read: do not keep its buffer for the rest of the scan.
                self.buf = Vec::new();
            }
            if self.buf.len() < size {
                self.buf.resize(size, 0);
            }
            self.len = 0;
            self.len = src.read_full_at(&mut self.buf[..size], pos)?;
            self.start = pos;
        }
        let from = (pos - self.start) as usize;
        let to = ((want_end - self.start) as usize).min(self.len);
        Ok(&self.buf[from.min(to)..to])
    }
}

/// A file of known length read through a [`ReadWindow`].
pub struct FileWindow {
    file: File,
    len: u64,
    window: ReadWindow,
}

impl FileWindow {
    pub fn new(file: File, len: u64, chunk: usize) -> FileWindow {
        FileWindow {
            file,
            len,
            window: ReadWindow::fixed(chunk),
        }
    }

    /// Up to `n` bytes at `pos`; fewer only when the file ends first.
    pub fn read(&mut self, pos: u64, n: usize) -> io::Result<&[u8]> {
        self.window.read(&self.file, pos, n, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(Vec<u8>, std::cell::Cell<usize>);
    impl ReadAt for Bytes {
        fn read_full_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
            self.1.set(self.1.get() + 1);
            let from = (pos as usize).min(self.0.len());
            let n = buf.len().min(self.0.len() - from);
            buf[..n].copy_from_slice(&self.0[from..from + n]);
            Ok(n)
        }
    }

    #[test]
    fn serves_slices_within_the_window_without_reading_again() {
        let src = Bytes(
            (0..=255u8).cycle().take(10_000).collect(),
            Default::default(),
        );
        let mut w = ReadWindow::new(100, 1000);
        assert_eq!(w.read(&src, 10, 5, 10_000).unwrap(), &[10, 11, 12, 13, 14]);
        assert_eq!(w.read(&src, 50, 50, 10_000).unwrap()[0], 50);
        assert_eq!(src.1.get(), 1, "inside the first 100-byte chunk");
        // The next refill reads the doubled chunk (200 bytes).
        assert_eq!(w.read(&src, 110, 1, 10_000).unwrap(), &[110]);
        assert_eq!(w.read(&src, 309, 1, 10_000).unwrap(), &[(309 % 256) as u8]);
        assert_eq!(src.1.get(), 2);
    }

    #[test]
    fn stops_at_the_limit_and_at_the_end_of_the_source() {
        let src = Bytes(vec![7; 50], Default::default());
        let mut w = ReadWindow::fixed(16);
        assert_eq!(w.read(&src, 40, 20, 45).unwrap().len(), 5, "limit 45");
        assert_eq!(
            w.read(&src, 40, 20, 100).unwrap().len(),
            10,
            "source ends at 50"
        );
        assert!(w.read(&src, 60, 4, 100).unwrap().is_empty());
        assert_eq!(
            w.read(&src, 0, 40, 100).unwrap().len(),
            40,
            "larger than the chunk"
        );
    }
}
