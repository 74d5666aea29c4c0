//! Draining a partition's reader: every record from an offset to the log end.

use topicfs::log::PartitionLog;

/// (offset, timestamp, value) of every record from `from` to the log end, as topicfs' reader
/// returns them (a null value fails the test).
pub fn read_all(log: &PartitionLog, from: i64) -> Vec<(i64, i64, Vec<u8>)> {
    let mut r = log.read_from_offset(from).unwrap();
    let mut out = Vec::new();
    while r
        .next_batch(&mut |rec| out.push((rec.offset, rec.timestamp, rec.value.unwrap().to_vec())))
        .unwrap()
    {}
    out
}

/// (offset, key, value) of every record from `from` to the log end, as topicfs' reader returns
/// them (a missing key as an empty one, a null value as None): for keyed, compacted logs.
pub fn keyed_records(log: &PartitionLog, from: i64) -> Vec<(i64, Vec<u8>, Option<Vec<u8>>)> {
    let mut r = log.read_from_offset(from).unwrap();
    let mut out = Vec::new();
    while r
        .next_batch(&mut |rec| {
            out.push((
                rec.offset,
                rec.key.unwrap_or_default().to_vec(),
                rec.value.map(<[u8]>::to_vec),
            ))
        })
        .unwrap()
    {}
    out
}
