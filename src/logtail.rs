//! The daemon's last log lines, kept in memory for `@log`: at most [`MAX_LINES`] lines and
//! [`MAX_BYTES`] bytes, the oldest dropped first. Positions are byte offsets in the stream of
//! every line written since the daemon started, so a reader's position stays meaningful while
//! old lines go. A read at the end is empty: `@log` reads as a log file does.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

use crate::util::sync::MutexExt;

/// The most lines kept.
pub const MAX_LINES: usize = 1000;
/// The most bytes kept.
pub const MAX_BYTES: usize = 1 << 20;

#[derive(Default)]
struct Tail {
    lines: VecDeque<Vec<u8>>,
    /// Bytes held in `lines`.
    bytes: usize,
    /// The stream position of the first byte held.
    start: u64,
}

/// The kept lines.
#[derive(Default)]
pub struct LogTail {
    tail: Mutex<Tail>,
}

impl LogTail {
    /// Adds one line (a `\n` is added).
    pub fn push(&self, line: &str) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let mut t = self.tail.guard();
        t.bytes += bytes.len();
        t.lines.push_back(bytes);
        while t.lines.len() > MAX_LINES || (t.bytes > MAX_BYTES && t.lines.len() > 1) {
            let old = t.lines.pop_front().expect("more than one line");
            t.bytes -= old.len();
            t.start += old.len() as u64;
        }
    }

    /// The stream positions of the first byte kept and of the end.
    pub fn bounds(&self) -> (u64, u64) {
        let t = self.tail.guard();
        (t.start, t.start + t.bytes as u64)
    }

    /// Up to `size` bytes from stream position `at`, or from the first byte kept when `at`
    /// was dropped; with the position they start at. Empty at the end.
    pub fn read(&self, at: u64, size: usize) -> (u64, Vec<u8>) {
        let t = self.tail.guard();
        let from = at.max(t.start);
        let mut skip = (from - t.start) as usize;
        let mut out = Vec::new();
        for line in &t.lines {
            if out.len() >= size {
                break;
            }
            if skip >= line.len() {
                skip -= line.len();
                continue;
            }
            let take = (line.len() - skip).min(size - out.len());
            out.extend_from_slice(&line[skip..skip + take]);
            skip = 0;
        }
        (from, out)
    }
}

/// The daemon's one tail (the logger writes it, `@log` reads it).
pub fn global() -> &'static LogTail {
    static TAIL: OnceLock<LogTail> = OnceLock::new();
    TAIL.get_or_init(LogTail::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_positions_in_the_whole_stream() {
        let t = LogTail::default();
        for i in 0..MAX_LINES + 10 {
            t.push(&format!("{i:04}"));
        }
        let (start, end) = t.bounds();
        assert_eq!(start, 10 * 5);
        assert_eq!(end, (MAX_LINES as u64 + 10) * 5);
        // A position that was dropped reads from the first line kept.
        let (from, bytes) = t.read(0, 12);
        assert_eq!(from, 50);
        assert_eq!(bytes, b"0010\n0011\n00");
        // Within a line, and at the end.
        assert_eq!(t.read(52, 5).1, b"10\n00");
        assert!(t.read(end, 100).1.is_empty());
    }

    #[test]
    fn keeps_at_most_max_bytes_but_always_the_last_line() {
        let t = LogTail::default();
        let big = "x".repeat(MAX_BYTES / 3);
        for _ in 0..5 {
            t.push(&big);
        }
        let (start, end) = t.bounds();
        assert!(end - start <= MAX_BYTES as u64);
        assert_eq!((end - start) % (big.len() as u64 + 1), 0);
        let huge = "y".repeat(MAX_BYTES + 10);
        t.push(&huge);
        let (start, end) = t.bounds();
        assert_eq!(end - start, huge.len() as u64 + 1);
    }
}
