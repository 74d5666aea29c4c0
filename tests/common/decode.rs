//! Segment files decoded into records: by the kafka-protocol crate (an independent decoder,
//! for checking what topicfs stored) and, for batch-level counts, by topicfs' own `BatchView`;
//! index files into their entries.

use std::path::Path;

use kafka_protocol::records::{Record, RecordBatchDecoder};

/// The records of a `.log` file's bytes, decoded by kafka-protocol (bytes it cannot decode
/// fail the test; `name` says which file).
pub fn decode_log(bytes: &[u8], name: &str) -> Vec<Record> {
    let mut input: &[u8] = bytes;
    RecordBatchDecoder::decode_all(&mut input)
        .unwrap_or_else(|e| panic!("kafka-protocol cannot decode {name}: {e:#}"))
        .into_iter()
        .flat_map(|s| s.records)
        .collect()
}

/// Every record of every `.log` in a directory, in file order, as kafka-protocol's records.
pub fn decode_dir_records(dir: &Path) -> Vec<Record> {
    read_logs(dir)
        .iter()
        .flat_map(|(n, bytes)| decode_log(bytes, n))
        .collect()
}

/// The `.log` files of a directory and their bytes, as one snapshot: read again while a
/// cleaner or retention swaps or deletes segments between the listing and the reads (a file
/// gone, or the listing's names and inodes not the same after the reads as before).
pub fn read_logs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let listing = || -> Vec<(String, Option<u64>)> {
        log_files(dir)
            .into_iter()
            .map(|n| {
                let ino = std::fs::metadata(dir.join(&n)).ok().map(|m| m.ino());
                (n, ino)
            })
            .collect()
    };
    let mut snapshot = Vec::new();
    super::mount::wait_until("a still listing of the segments", || {
        let before = listing();
        let read: Option<Vec<(String, Vec<u8>)>> = before
            .iter()
            .map(|(n, _)| Some((n.clone(), std::fs::read(dir.join(n)).ok()?)))
            .collect();
        match read {
            Some(files) if listing() == before => {
                snapshot = files;
                true
            }
            _ => false,
        }
    });
    snapshot
}

/// The batches of a `.log` file: (base offset, record count, values).
pub fn batches(log: &[u8]) -> Vec<(i64, usize, Vec<Vec<u8>>)> {
    use topicfs::record::BatchView;
    let mut out = Vec::new();
    let mut pos = 0;
    let mut scratch = Vec::new();
    while pos < log.len() {
        let view = BatchView::new(&log[pos..]).expect("a whole batch");
        view.ensure_valid().expect("valid CRC");
        let size = view.header.size();
        let values: Vec<Vec<u8>> = view
            .records(&mut scratch)
            .expect("records")
            .map(|r| r.expect("record").value.unwrap_or_default().to_vec())
            .collect();
        out.push((view.header.base_offset, values.len(), values));
        pos += size;
    }
    out
}

/// One record of a partition directory, as the kafka-protocol crate (an independent decoder)
/// reads it.
pub struct Decoded {
    pub offset: i64,
    pub timestamp: i64,
    pub value: Vec<u8>,
    /// The `.log` file it is in.
    pub file: String,
}

impl Decoded {
    pub fn text(&self) -> String {
        String::from_utf8(self.value.clone()).expect("utf-8 value")
    }
}

/// The `.log` files of a partition directory, in offset order.
pub fn log_files(dir: &Path) -> Vec<String> {
    super::mount::file_names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect()
}

/// Every record of every `.log` in a partition directory, in file order, decoded by
/// kafka-protocol (a file it cannot decode fails the test).
pub fn decode_partition_dir(dir: &Path) -> Vec<Decoded> {
    let mut out = Vec::new();
    for (n, bytes) in read_logs(dir) {
        for r in decode_log(&bytes, &n) {
            out.push(Decoded {
                offset: r.offset,
                timestamp: r.timestamp,
                value: r.value.as_ref().map(|v| v.to_vec()).unwrap_or_default(),
                file: n.clone(),
            });
        }
    }
    out
}

/// The entries of an `.index` file: (offset relative to the segment's base, position).
pub fn offset_index_entries(index: &[u8]) -> Vec<(i32, i32)> {
    index
        .chunks(8)
        .map(|e| (be_i32(&e[0..4]), be_i32(&e[4..8])))
        .collect()
}

/// The entries of a `.timeindex` file: (timestamp, offset relative to the segment's base).
pub fn time_index_entries(index: &[u8]) -> Vec<(i64, i32)> {
    index
        .chunks(12)
        .map(|e| {
            (
                i64::from_be_bytes(e[0..8].try_into().unwrap()),
                be_i32(&e[8..12]),
            )
        })
        .collect()
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes(b.try_into().unwrap())
}
