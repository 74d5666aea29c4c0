//! RecordBatch v2 (magic 2): encoding, zero-copy decoding and codecs. Knows nothing about files.

mod batch;
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
