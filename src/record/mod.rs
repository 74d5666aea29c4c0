//! RecordBatch v2 (magic 2): encoding, zero-copy decoding and codecs. Knows nothing about files.

mod batch;
pub mod be;
pub mod compression;
mod encode;
pub mod lines;
pub mod varint;

pub use batch::*;
pub use compression::Compression;
pub use encode::*;

/// Why a batch or record could not be decoded.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum BatchError {
    #[error("batch truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("record size {0} is less than the minimum record overhead (14)")]
    SizeTooSmall(i32),
    #[error("unsupported magic {0} (only record batch v2 is decoded)")]
    UnsupportedMagic(i8),
    #[error("Record is corrupt (stored crc = {stored}, computed crc = {computed})")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("Unknown compression type id: {0}")]
    UnknownCodec(u8),
    #[error("cannot decompress records: {0}")]
    Decompress(String),
    #[error("invalid record: {0}")]
    InvalidRecord(String),
}

/// CRC-32C (Castagnoli), the checksum of a RecordBatch v2 (from its attributes to its end):
/// the crc-fast crate's folding with carry-less multiplication (AVX-512 VPCLMULQDQ where the
/// CPU has it, chosen at run time), twice the crc32c crate's SSE 4.2 loop on large batches.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, bytes) as u32
}

/// The unit of a line value's chunked copy when a stream renders lines: 64 bytes, a cache
/// line (a 100-byte value in two chunks; 16-byte chunks decoded 12% slower in
/// `batch_decode/lines`).
const LINE_CHUNK: usize = 64;

/// Copies `len` bytes of `src` from `at` to `dst`: in `CHUNK`-byte chunks when `src` holds
/// the length rounded up to a chunk from `at` (writing up to `CHUNK - 1` bytes past `len` at
/// `dst`), as one plain copy otherwise. Short values are most of a lines topic's, and
/// fixed-size chunks cost less than a call to `memcpy` for each.
///
/// # Safety
/// `at + len <= src.len()`; `dst` is valid for writes of `len.next_multiple_of(CHUNK)` bytes
/// and does not overlap `src`.
#[inline(always)]
unsafe fn copy_chunked<const CHUNK: usize>(src: &[u8], at: usize, len: usize, dst: *mut u8) {
    let padded = len.next_multiple_of(CHUNK);
    // SAFETY: the chunked reads stay in `src` (checked); the writes are in the caller's
    // `padded` bytes at `dst`; the plain copy reads `src[at..at + len]` (the caller's bound).
    unsafe {
        let from = src.as_ptr().add(at);
        if CHUNK == 64 && padded == 128 && at + 128 <= src.len() {
            let a = std::ptr::read_unaligned(from as *const [u8; 64]);
            let b = std::ptr::read_unaligned(from.add(64) as *const [u8; 64]);
            std::ptr::write_unaligned(dst as *mut [u8; 64], a);
            std::ptr::write_unaligned(dst.add(64) as *mut [u8; 64], b);
        } else if at + padded <= src.len() {
            let mut i = 0;
            while i < padded {
                let chunk = std::ptr::read_unaligned(from.add(i) as *const [u8; CHUNK]);
                std::ptr::write_unaligned(dst.add(i) as *mut [u8; CHUNK], chunk);
                i += CHUNK;
            }
        } else {
            std::ptr::copy_nonoverlapping(from, dst, len);
        }
    }
}
