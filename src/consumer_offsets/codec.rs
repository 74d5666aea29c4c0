//! The bytes of `__consumer_offsets` records, as Kafka's group coordinator writes them.
//!
//! A record's key and value each start with a big-endian `int16`: the key's record type and
//! the value's schema version. The rest is the struct in Kafka's generated-message encoding:
//! fixed-width big-endian integers; strings as `int16` length + UTF-8 in non-flexible
//! versions and as unsigned varint (length + 1) + UTF-8 in flexible ones, where every struct
//! also ends with a tagged-field section.
//!
//! - Record type 1, OffsetCommit: key `group, topic, partition`; value versions 0-4 (see
//!   [`OffsetCommitValue`]). A record with a null value (a tombstone) deletes the key.
//! - Record type 0: the legacy offset key (same fields), whose value is only ever version 0.
//! - Record type 2, GroupMetadata: key `group`; value: the classic group's members.
//! - Record type 11, ShareGroupMetadata: key `groupId`: a share group (KIP-932), whose
//!   progress is in `__share_group_state`, not in offset commits.
//! - Types 3 and up: the KIP-848 / share / streams group records.
//!
//! topicfs writes type 1 keys and version 3 values (what Kafka 4.0 writes, readable by every
//! broker since 2.1); it reads every type-0/1 value version and leaves every other record type
//! alone.

use std::fmt;

use crate::record::be::Cursor;

/// Key record type of an offset commit (`OffsetCommitKey`).
pub const OFFSET_COMMIT_KEY: i16 = 1;
/// Key record type of the legacy offset commit key (value version 0 only).
pub const LEGACY_OFFSET_COMMIT_KEY: i16 = 0;
/// Key record type of a classic group's metadata (`GroupMetadataKey`).
pub const GROUP_METADATA_KEY: i16 = 2;
/// Key record type of a share group's metadata (`ShareGroupMetadataKey`, KIP-932).
pub const SHARE_GROUP_METADATA_KEY: i16 = 11;
/// The OffsetCommitValue version topicfs writes.
pub const WRITE_VALUE_VERSION: i16 = 3;
/// The highest OffsetCommitValue version Kafka defines (4.1).
pub const MAX_VALUE_VERSION: i16 = 4;
/// Kafka's limit on a non-flexible string (`int16` length).
pub const MAX_STRING_LEN: usize = 0x7fff;

/// Why a key or value could not be decoded (or encoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CodecError {}

fn err<T>(what: impl Into<String>) -> Result<T, CodecError> {
    Err(CodecError(what.into()))
}

/// The key of one offset commit: which group committed which partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OffsetCommitKey {
    pub group: String,
    pub topic: String,
    pub partition: i32,
}

/// The value of one offset commit.
///
/// Fields per version: v0 `offset, metadata, commitTimestamp`; v1 adds `expireTimestamp` at
/// the end; v2 is v0's layout; v3 inserts `leaderEpoch` after `offset`; v4 is v3 in the
/// flexible encoding with an optional tagged `topicId` (tag 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    /// The next offset the group reads.
    pub offset: i64,
    /// The leader epoch of the last consumed record; -1 when unknown.
    pub leader_epoch: i32,
    pub metadata: String,
    /// When the commit was made (ms since the epoch).
    pub commit_timestamp: i64,
    /// Only in version 1; -1 when absent.
    pub expire_timestamp: i64,
    /// Only in version 4 (tagged); `None` when absent or all zero.
    pub topic_id: Option<[u8; 16]>,
}

impl OffsetCommitValue {
    /// A commit of `offset` at `commit_timestamp` with empty metadata and no leader epoch, as
    /// the broker records `kafka-consumer-groups --reset-offsets` and most consumer commits.
    pub fn new(offset: i64, commit_timestamp: i64) -> OffsetCommitValue {
        OffsetCommitValue {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp,
            expire_timestamp: -1,
            topic_id: None,
        }
    }
}

/// What a `__consumer_offsets` record key says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKey {
    /// Record type 0 or 1; `legacy` for type 0.
    OffsetCommit { key: OffsetCommitKey, legacy: bool },
    /// Record type 2: a classic group's membership (its value is not decoded).
    GroupMetadata { group: String },
    /// Record type 11: a share group exists (its value is not decoded; a tombstone when the
    /// group is deleted).
    ShareGroupMetadata { group: String },
    /// Any other record type (KIP-848, share and streams groups): not ours to read.
    Other(i16),
}

// ---------------------------------------------------------------------------------------------
// encoding

fn put_string(buf: &mut Vec<u8>, s: &str) -> Result<(), CodecError> {
    if s.len() > MAX_STRING_LEN {
        return err(format!(
            "a string of {} bytes is too long to be serialized (at most {MAX_STRING_LEN})",
            s.len()
        ));
    }
    buf.extend_from_slice(&(s.len() as i16).to_be_bytes());
    buf.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_uvarint(buf: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn put_compact_string(buf: &mut Vec<u8>, s: &str) -> Result<(), CodecError> {
    if s.len() > MAX_STRING_LEN {
        return err(format!(
            "a string of {} bytes is too long to be serialized (at most {MAX_STRING_LEN})",
            s.len()
        ));
    }
    put_uvarint(buf, s.len() as u32 + 1);
    buf.extend_from_slice(s.as_bytes());
    Ok(())
}

/// The record key of an offset commit: type 1, group, topic, partition. The same key bytes
/// supersede each other (compaction compares raw keys), so this is the only encoding.
pub fn encode_offset_key(key: &OffsetCommitKey) -> Result<Vec<u8>, CodecError> {
    let mut buf = Vec::with_capacity(8 + key.group.len() + key.topic.len());
    buf.extend_from_slice(&OFFSET_COMMIT_KEY.to_be_bytes());
    put_string(&mut buf, &key.group)?;
    put_string(&mut buf, &key.topic)?;
    buf.extend_from_slice(&key.partition.to_be_bytes());
    Ok(buf)
}

/// The record value of an offset commit at `version` (0-4).
pub fn encode_offset_value_version(
    v: &OffsetCommitValue,
    version: i16,
) -> Result<Vec<u8>, CodecError> {
    let mut buf = Vec::with_capacity(32 + v.metadata.len());
    buf.extend_from_slice(&version.to_be_bytes());
    buf.extend_from_slice(&v.offset.to_be_bytes());
    match version {
        0..=2 => {
            put_string(&mut buf, &v.metadata)?;
            buf.extend_from_slice(&v.commit_timestamp.to_be_bytes());
            if version == 1 {
                buf.extend_from_slice(&v.expire_timestamp.to_be_bytes());
            }
        }
        3 => {
            buf.extend_from_slice(&v.leader_epoch.to_be_bytes());
            put_string(&mut buf, &v.metadata)?;
            buf.extend_from_slice(&v.commit_timestamp.to_be_bytes());
        }
        4 => {
            buf.extend_from_slice(&v.leader_epoch.to_be_bytes());
            put_compact_string(&mut buf, &v.metadata)?;
            buf.extend_from_slice(&v.commit_timestamp.to_be_bytes());
            match v.topic_id {
                // A tagged field equal to its default (the zero uuid) is not written.
                Some(id) if id != [0; 16] => {
                    put_uvarint(&mut buf, 1);
                    put_uvarint(&mut buf, 0);
                    put_uvarint(&mut buf, 16);
                    buf.extend_from_slice(&id);
                }
                _ => put_uvarint(&mut buf, 0),
            }
        }
        _ => return err(format!("unknown OffsetCommitValue version {version}")),
    }
    Ok(buf)
}

/// The record value topicfs writes: version [`WRITE_VALUE_VERSION`].
pub fn encode_offset_value(v: &OffsetCommitValue) -> Result<Vec<u8>, CodecError> {
    encode_offset_value_version(v, WRITE_VALUE_VERSION)
}

// ---------------------------------------------------------------------------------------------
// decoding

/// The fields of a record key or value in turn; running out of bytes is an error naming the
/// field.
struct Reader<'a>(Cursor<'a>);

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader(Cursor::new(bytes))
    }
    fn got<T>(&self, v: Option<T>, n: usize, what: &str) -> Result<T, CodecError> {
        match v {
            Some(v) => Ok(v),
            None => err(format!(
                "{what}: {n} bytes needed at byte {}, {} left",
                self.0.pos(),
                self.0.remaining()
            )),
        }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], CodecError> {
        let v = self.0.take(n);
        self.got(v, n, what)
    }
    fn i16(&mut self, what: &str) -> Result<i16, CodecError> {
        let v = self.0.i16();
        self.got(v, 2, what)
    }
    fn i32(&mut self, what: &str) -> Result<i32, CodecError> {
        let v = self.0.i32();
        self.got(v, 4, what)
    }
    fn i64(&mut self, what: &str) -> Result<i64, CodecError> {
        let v = self.0.i64();
        self.got(v, 8, what)
    }
    fn uvarint(&mut self, what: &str) -> Result<u32, CodecError> {
        let v = self.0.uvarint();
        match self.got(v, 1, what)? {
            Ok(v) => Ok(v),
            Err(_) => err(format!("{what}: varint longer than 5 bytes")),
        }
    }
    fn utf8(&mut self, n: usize, what: &str) -> Result<String, CodecError> {
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).or_else(|_| err(format!("{what}: not UTF-8")))
    }
    fn string(&mut self, what: &str) -> Result<String, CodecError> {
        let n = self.i16(what)?;
        if n < 0 {
            return err(format!("{what}: null where a string is required"));
        }
        self.utf8(n as usize, what)
    }
    fn compact_string(&mut self, what: &str) -> Result<String, CodecError> {
        let n = self.uvarint(what)?;
        if n == 0 {
            return err(format!("{what}: null where a string is required"));
        }
        self.utf8(n as usize - 1, what)
    }
    fn end(&self, what: &str) -> Result<(), CodecError> {
        if self.0.remaining() != 0 {
            return err(format!(
                "{what}: {} bytes left after the last field",
                self.0.remaining()
            ));
        }
        Ok(())
    }
}

/// Reads a record key: offset commit keys (types 0 and 1), the group metadata key (type 2)
/// and the share group metadata key (type 11) are decoded; any other type is
/// [`RecordKey::Other`].
pub fn decode_key(bytes: &[u8]) -> Result<RecordKey, CodecError> {
    let mut r = Reader::new(bytes);
    let ty = r.i16("record type")?;
    match ty {
        LEGACY_OFFSET_COMMIT_KEY | OFFSET_COMMIT_KEY => {
            let group = r.string("OffsetCommitKey.group")?;
            let topic = r.string("OffsetCommitKey.topic")?;
            let partition = r.i32("OffsetCommitKey.partition")?;
            r.end("OffsetCommitKey")?;
            Ok(RecordKey::OffsetCommit {
                key: OffsetCommitKey {
                    group,
                    topic,
                    partition,
                },
                legacy: ty == LEGACY_OFFSET_COMMIT_KEY,
            })
        }
        GROUP_METADATA_KEY => {
            let group = r.string("GroupMetadataKey.group")?;
            r.end("GroupMetadataKey")?;
            Ok(RecordKey::GroupMetadata { group })
        }
        SHARE_GROUP_METADATA_KEY => {
            let group = r.string("ShareGroupMetadataKey.groupId")?;
            r.end("ShareGroupMetadataKey")?;
            Ok(RecordKey::ShareGroupMetadata { group })
        }
        other => Ok(RecordKey::Other(other)),
    }
}

/// Reads an offset commit value of any version Kafka defines (0-4). Unknown tagged fields are
/// skipped, as Kafka's generated readers do.
pub fn decode_offset_value(bytes: &[u8]) -> Result<OffsetCommitValue, CodecError> {
    let mut r = Reader::new(bytes);
    let version = r.i16("OffsetCommitValue version")?;
    if !(0..=MAX_VALUE_VERSION).contains(&version) {
        return err(format!("unknown OffsetCommitValue version {version}"));
    }
    let offset = r.i64("OffsetCommitValue.offset")?;
    let leader_epoch = if version >= 3 {
        r.i32("OffsetCommitValue.leaderEpoch")?
    } else {
        -1
    };
    let metadata = if version >= 4 {
        r.compact_string("OffsetCommitValue.metadata")?
    } else {
        r.string("OffsetCommitValue.metadata")?
    };
    let commit_timestamp = r.i64("OffsetCommitValue.commitTimestamp")?;
    let expire_timestamp = if version == 1 {
        r.i64("OffsetCommitValue.expireTimestamp")?
    } else {
        -1
    };
    let mut topic_id = None;
    if version >= 4 {
        let n = r.uvarint("tagged field count")?;
        for _ in 0..n {
            let tag = r.uvarint("tag")?;
            let size = r.uvarint("tagged field size")? as usize;
            let data = r.take(size, "tagged field")?;
            if tag == 0 {
                if size != 16 {
                    return err(format!("OffsetCommitValue.topicId of {size} bytes, not 16"));
                }
                topic_id = Some(data.try_into().unwrap());
            }
        }
    }
    r.end("OffsetCommitValue")?;
    Ok(OffsetCommitValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
        expire_timestamp,
        topic_id,
    })
}

// ---------------------------------------------------------------------------------------------
// which partition

/// Java's `String.hashCode`: over the UTF-16 code units, `h = 31 * h + c`, wrapping.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// Kafka's `Utils.abs`: `Math.abs`, except that `Integer.MIN_VALUE` gives 0.
pub fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN { 0 } else { n.abs() }
}

/// The `__consumer_offsets` partition of `group`: `Utils.abs(group.hashCode()) % partitions`.
pub fn partition_for(group: &str, partitions: u32) -> u32 {
    assert!(
        partitions > 0,
        "__consumer_offsets has at least one partition"
    );
    (kafka_abs(java_string_hash(group)) as u32) % partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    // The worked example of docs/format.md (the __consumer_offsets section): bytes produced by Kafka 4.1.1.
    const KEY: &str = "00 01 00 02 67 31 00 06 6f 72 64 65 72 73 00 00 00 00";
    const V3: &str = "00 03 00 00 00 00 00 00 00 2a ff ff ff ff 00 00 00 00 01 8b cf e5 68 00";
    const V4: &str = "00 04 00 00 00 00 00 00 00 2a ff ff ff ff 01 00 00 01 8b cf e5 68 00 00";
    const TS: i64 = 1_700_000_000_000;

    fn example_key() -> OffsetCommitKey {
        OffsetCommitKey {
            group: "g1".into(),
            topic: "orders".into(),
            partition: 0,
        }
    }

    #[test]
    fn key_matches_kafka_bytes() {
        assert_eq!(encode_offset_key(&example_key()).unwrap(), hex(KEY));
        assert_eq!(
            decode_key(&hex(KEY)).unwrap(),
            RecordKey::OffsetCommit {
                key: example_key(),
                legacy: false
            }
        );
    }

    #[test]
    fn value_v3_matches_kafka_bytes() {
        let v = OffsetCommitValue::new(42, TS);
        assert_eq!(encode_offset_value(&v).unwrap(), hex(V3));
        assert_eq!(decode_offset_value(&hex(V3)).unwrap(), v);
    }

    #[test]
    fn value_v4_matches_kafka_bytes() {
        let v = OffsetCommitValue::new(42, TS);
        assert_eq!(encode_offset_value_version(&v, 4).unwrap(), hex(V4));
        assert_eq!(decode_offset_value(&hex(V4)).unwrap(), v);
    }

    #[test]
    fn value_v4_with_topic_id_and_metadata() {
        let mut v = OffsetCommitValue::new(42, TS);
        v.metadata = "m".into();
        v.topic_id = Some([7; 16]);
        let b = encode_offset_value_version(&v, 4).unwrap();
        // "m" as varint length + 1, then one tagged field: tag 0, size 16, the uuid.
        assert_eq!(&b[14..16], &[0x02, 0x6d]);
        assert_eq!(&b[24..27], &[0x01, 0x00, 0x10]);
        assert_eq!(&b[27..], &[7; 16]);
        assert_eq!(decode_offset_value(&b).unwrap(), v);
    }

    #[test]
    fn value_v1_has_expire_timestamp() {
        let v = OffsetCommitValue::new(42, TS);
        let b = encode_offset_value_version(&v, 1).unwrap();
        // 28 bytes: version, offset, "" , commitTimestamp, expireTimestamp -1.
        let mut want = hex("00 01 00 00 00 00 00 00 00 2a 00 00 00 00 01 8b cf e5 68 00");
        want.extend_from_slice(&[0xff; 8]);
        assert_eq!(b, want);
        assert_eq!(decode_offset_value(&b).unwrap(), v);
        for version in [0, 2] {
            let b = encode_offset_value_version(&v, version).unwrap();
            assert_eq!(b.len(), 20);
            assert_eq!(decode_offset_value(&b).unwrap(), v);
        }
    }

    #[test]
    fn value_keeps_leader_epoch_and_metadata() {
        let v = OffsetCommitValue {
            offset: 7,
            leader_epoch: 5,
            metadata: "grüß".into(),
            commit_timestamp: TS,
            expire_timestamp: -1,
            topic_id: None,
        };
        for version in [3, 4] {
            let b = encode_offset_value_version(&v, version).unwrap();
            assert_eq!(&b[10..14], &[0, 0, 0, 5]);
            assert_eq!(decode_offset_value(&b).unwrap(), v);
        }
    }

    #[test]
    fn group_metadata_key_is_recognised() {
        assert_eq!(
            decode_key(&hex("00 02 00 02 67 31")).unwrap(),
            RecordKey::GroupMetadata { group: "g1".into() }
        );
        assert_eq!(
            decode_key(&hex("00 05 00 00")).unwrap(),
            RecordKey::Other(5)
        );
    }

    #[test]
    fn legacy_key_type_0() {
        let mut b = hex(KEY);
        b[1] = 0;
        assert_eq!(
            decode_key(&b).unwrap(),
            RecordKey::OffsetCommit {
                key: example_key(),
                legacy: true
            }
        );
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let key = hex(KEY);
        assert!(decode_key(&key[..key.len() - 1]).is_err());
        let mut long = key.clone();
        long.push(0);
        assert!(decode_key(&long).is_err());
        assert!(decode_key(&[0]).is_err());
        let v3 = hex(V3);
        assert!(decode_offset_value(&v3[..20]).is_err());
        let mut v5 = v3.clone();
        v5[1] = 5;
        assert!(
            decode_offset_value(&v5)
                .unwrap_err()
                .0
                .contains("version 5")
        );
        let mut neg = v3.clone();
        neg[0] = 0xff;
        assert!(decode_offset_value(&neg).is_err());
        // A null metadata string.
        let mut null = v3.clone();
        null[14] = 0xff;
        null[15] = 0xff;
        assert!(decode_offset_value(&null).is_err());
    }

    #[test]
    fn too_long_string_is_refused() {
        let k = OffsetCommitKey {
            group: "g".repeat(MAX_STRING_LEN + 1),
            topic: "t".into(),
            partition: 0,
        };
        assert!(encode_offset_key(&k).is_err());
        let k = OffsetCommitKey {
            group: "g".repeat(MAX_STRING_LEN),
            ..k
        };
        assert_eq!(
            encode_offset_key(&k).unwrap().len(),
            2 + 2 + MAX_STRING_LEN + 3 + 4
        );
    }

    #[test]
    fn java_hash_vectors() {
        // Values printed by a JVM (String.hashCode).
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("g1"), 3242);
        assert_eq!(java_string_hash("my-group"), -1906497762);
        assert_eq!(java_string_hash("console-consumer-1"), 35782224);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("grüppe-😀"), -1039948164);
    }

    #[test]
    fn partition_vectors() {
        assert_eq!(partition_for("g1", 50), 42);
        assert_eq!(partition_for("my-group", 50), 12);
        assert_eq!(partition_for("console-consumer-1", 50), 24);
        // Integer.MIN_VALUE: Utils.abs gives 0 (Math.abs would stay negative).
        assert_eq!(kafka_abs(i32::MIN), 0);
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("polygenelubricants", 7), 0);
        assert_eq!(partition_for("grüppe-😀", 50), 14);
        assert_eq!(partition_for("g1", 1), 0);
    }
}
