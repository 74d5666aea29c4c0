//! `Rec`: a record as DumpLogSegments prints it (Kafka's `Record`), from a v2 batch
//! (records.rs) or a legacy message set (legacy.rs) alike.

use super::exception::JavaException;

/// One record, with what DumpLogSegments prints of it.
#[derive(Debug)]
pub(super) struct Rec<'a> {
    pub(super) offset: i64,
    pub(super) timestamp: i64,
    pub(super) key_size: i32,
    pub(super) value_size: i32,
    pub(super) key: Option<&'a [u8]>,
    pub(super) value: Option<&'a [u8]>,
    pub(super) sequence: i32,
    pub(super) header_keys: Vec<&'a [u8]>,
    /// Legacy (v0/v1) records: `isValid` and `checksum`.
    pub(super) legacy: Option<(bool, u32)>,
    /// Legacy records: what reading the sizes would throw (metadata part of the line).
    pub(super) meta_err: Option<JavaException>,
    /// Legacy records: what reading key/value would throw (`--print-data-log` part).
    pub(super) data_err: Option<JavaException>,
}
