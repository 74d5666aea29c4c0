//! `topicfs dump-log`: Kafka's `kafka-dump-log.sh` (`kafka.tools.DumpLogSegments`), line for line.
//!
//! The output rules are those of docs/format.md section 7, checked against the tool's Scala
//! source and the Java classes it calls (`FileRecords`, `FileLogInputStream`,
//! `DefaultRecordBatch`, `DefaultRecord`, `OffsetIndex`, `TimeIndex`, `TransactionIndex`,
//! `ProducerStateManager.readSnapshot`). Where the Java code would throw out of `main`, the
//! JVM prints `Exception in thread "main" <exception>` (plus a stack trace we do not imitate)
//! and exits 1: [`run`] prints that first line and returns 1. Everything else exits 0, even for
//! damaged files, as Kafka does.
//!
//! Files are read with positional reads through a small window (never a whole `.log` in
//! memory); a batch is only loaded whole when Kafka would load it (validity, deep iteration).
//!
//! Every Java message text lives in this module as a literal, so a correction found by comparing
//! with the real tool is a one-line change.
//!
//! Reference version: the Scala `DumpLogSegments` of Kafka 3.x-4.3 (`kafka.tools`). Kafka 4.4
//! ships a Java port (`org.apache.kafka.tools`) with a few visible differences; each spot is
//! marked `JAVA PORT:` where it matters (docs/format.md section 7 lists those a 4.4 dump
//! shows).
//!
//! Where things are: this file has the options, [`run`] and the `Dumper` (the `.log` /
//! `.checkpoint` dump and the record lines); `exception` the Java exceptions; `java` Java and
//! Scala behaviour (paths, number parsing, sequences, hash map order); `print_stream` the output
//! streams; `file_records` `FileRecords` and
//! batch headers; `rec` a record as the dump prints it; `records` a batch's records, v2
//! records and control records; `legacy` magic 0/1 message sets;
//! `kraft` the KRaft control records; `index` the `.index`, `.timeindex` and `.txnindex`
//! dumps; `snapshot` producer-state snapshots and snapshot names.

use std::fmt;
use std::io::Write;

mod exception;
mod file_records;
mod index;
mod java;
mod kraft;
mod legacy;
mod print_stream;
mod rec;
mod records;
mod snapshot;

use exception::{Res, STRING_INDEX, exc};
use file_records::{FileBatch, Hdr, LogRecords, Recs, batch_is_valid};
use java::{
    ScalaMap, file_name, first_dot_part, increment_sequence, java_absolute, java_normalize,
    java_utf8, optional_long, parse_java_long, utf16_len,
};
use print_stream::PrintStream;
use rec::Rec;
use records::{control_suffix, for_each_record};
use snapshot::parse_snapshot_id;

/// `--max-message-size` default (5 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 5 * 1024 * 1024;

/// The options of `kafka-dump-log.sh` that topicfs implements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpOptions {
    /// `--files`, already split (see [`split_files_arg`] for Java's splitting rule).
    pub files: Vec<String>,
    /// `--print-data-log` (implies deep iteration).
    pub print_data_log: bool,
    /// `--deep-iteration`.
    pub deep_iteration: bool,
    /// `--index-sanity-check`.
    pub index_sanity_check: bool,
    /// `--verify-index-only`.
    pub verify_index_only: bool,
    /// `--max-bytes` (Kafka's default is Integer.MAX_VALUE; values above it are clamped).
    pub max_bytes: Option<u64>,
    /// `--max-message-size` (default 5 MiB; values above Integer.MAX_VALUE are clamped).
    pub max_message_size: usize,
    /// `--skip-record-metadata`.
    pub skip_record_metadata: bool,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            files: Vec::new(),
            print_data_log: false,
            deep_iteration: false,
            index_sanity_check: false,
            verify_index_only: false,
            max_bytes: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            skip_record_metadata: false,
        }
    }
}

/// Splits a `--files` value as Kafka does (`String.split(",")`: empty items stay, trailing
/// empty items are dropped, an empty value is one empty item).
pub fn split_files_arg(value: &str) -> Vec<String> {
    let mut parts: Vec<String> = value.split(',').map(str::to_string).collect();
    if parts.len() > 1 {
        while parts.last().is_some_and(|p| p.is_empty()) {
            parts.pop();
        }
    }
    parts
}

/// Writes exactly what Kafka's DumpLogSegments writes to stdout and stderr. Returns the process
/// exit code: 0 like Kafka, even for damaged files; 1 where Kafka's JVM would die of an
/// uncaught exception (whose first line is printed to `err`).
pub fn run(opts: &DumpOptions, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut d = Dumper::new(opts, out, err);
    let code = match d.run_all() {
        Ok(()) => 0,
        Err(e) => {
            d.out.flush();
            d.err
                .println(format_args!("Exception in thread \"main\" {}", e.0));
            1
        }
    };
    d.out.flush();
    d.err.flush();
    code
}

struct Dumper<'a> {
    opts: &'a DumpOptions,
    out: PrintStream<'a>,
    err: PrintStream<'a>,
    cwd: String,
    /// `misMatchesForIndexFilesMap` (pairs in discovery order; Kafka prepends).
    index_mismatches: ScalaMap<Vec<(i64, i64)>>,
    time_mismatches: ScalaMap<Vec<(i64, i64)>>,
    time_out_of_order: ScalaMap<Vec<(i64, i64)>>,
    time_not_found: ScalaMap<Vec<(i64, i64)>>,
    /// `nonConsecutivePairsForLogFilesMap` (pairs in discovery order; Kafka prepends).
    non_consecutive: ScalaMap<Vec<(i64, i64)>>,
    full: Vec<u8>,
    scratch: Vec<u8>,
}

/// Batches up to this size are loaded whole for `isvalid` even in shallow mode.
const LOAD_WHOLE_LIMIT: i32 = 16 << 20;

impl<'a> Dumper<'a> {
    fn new(opts: &'a DumpOptions, out: &'a mut dyn Write, err: &'a mut dyn Write) -> Self {
        let cwd = std::env::current_dir()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| ".".to_string());
        Dumper {
            opts,
            out: PrintStream::new(out),
            err: PrintStream::new(err),
            cwd,
            index_mismatches: ScalaMap::new(),
            time_mismatches: ScalaMap::new(),
            time_out_of_order: ScalaMap::new(),
            time_not_found: ScalaMap::new(),
            non_consecutive: ScalaMap::new(),
            full: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn deep(&self) -> bool {
        self.opts.deep_iteration || self.opts.print_data_log
    }

    fn max_bytes(&self) -> i32 {
        self.opts
            .max_bytes
            .map_or(i32::MAX, |v| v.min(i32::MAX as u64) as i32)
    }

    fn max_message_size(&self) -> i32 {
        self.opts.max_message_size.min(i32::MAX as usize) as i32
    }

    fn run_all(&mut self) -> Res<()> {
        let opts = self.opts;
        for arg in &opts.files {
            let file = java_normalize(arg);
            self.out.println(format_args!("Dumping {file}"));
            let name = file_name(&file).to_string();
            let Some(dot) = name.rfind('.') else {
                let n = utf16_len(&name);
                return Err(exc(
                    STRING_INDEX,
                    format_args!("begin -1, end {n}, length {n}"),
                ));
            };
            match &name[dot..] {
                ".log" | ".checkpoint" => self.dump_log(&file, &name)?,
                ".index" => self.dump_index(&file, &name)?,
                ".timeindex" => self.dump_time_index(&file, &name)?,
                ".snapshot" => self.dump_producer_snapshot(&file)?,
                ".txnindex" => self.dump_txn_index(&file, &name)?,
                _ => self.err_line(format_args!("Ignoring unknown file {file}")),
            }
        }
        self.print_summaries();
        Ok(())
    }

    /// A stderr line, ordered after what stdout already has (Java's streams flush at once).
    fn err_line(&mut self, args: fmt::Arguments) {
        self.out.flush();
        self.err.println(args);
        self.err.flush();
    }

    fn print_summaries(&mut self) {
        self.out.flush();
        let err = &mut self.err;
        for (file, pairs) in self.index_mismatches.in_iteration_order() {
            err.println(format_args!("Mismatches in :{file}"));
            for (index_offset, log_offset) in pairs.iter().rev() {
                err.println(format_args!(
                    "  Index offset: {index_offset}, log offset: {log_offset}"
                ));
            }
        }
        for (file, pairs) in self.time_mismatches.in_iteration_order() {
            err.println(format_args!("Found timestamp mismatch in :{file}"));
            for (index_ts, log_ts) in pairs {
                err.println(format_args!(
                    "  Index timestamp: {index_ts}, log timestamp: {log_ts}"
                ));
            }
        }
        for (file, pairs) in self.time_out_of_order.in_iteration_order() {
            err.println(format_args!("Found out of order timestamp in :{file}"));
            for (index_ts, prev_ts) in pairs {
                err.println(format_args!(
                    "  Index timestamp: {index_ts}, Previously indexed timestamp: {prev_ts}"
                ));
            }
        }
        for (_, pairs) in self.time_not_found.in_iteration_order() {
            err.println(format_args!(
                "The following indexed offsets are not found in the log."
            ));
            for (indexed, found) in pairs {
                err.println(format_args!(
                    "Indexed offset: {indexed}, found log offset: {found}"
                ));
            }
        }
        for (file, pairs) in self.non_consecutive.in_iteration_order() {
            err.println(format_args!("Non-consecutive offsets in {file}"));
            for (first, second) in pairs.iter().rev() {
                err.println(format_args!("  {first} is followed by {second}"));
            }
        }
    }

    // --- .log / .checkpoint ---

    fn dump_log(&mut self, file: &str, name: &str) -> Res<()> {
        if name.ends_with(".log") {
            let start = parse_java_long(first_dot_part(name))?;
            self.out
                .println(format_args!("Log starting offset: {start}"));
        } else if name.ends_with(".checkpoint") {
            if name == "bootstrap.checkpoint" {
                self.out.println(format_args!("KRaft bootstrap snapshot"));
            } else {
                let (offset, epoch) = parse_snapshot_id(name)?;
                self.out.println(format_args!(
                    "Snapshot end offset: {offset}, epoch: {epoch}"
                ));
            }
        }
        let mut log = LogRecords::open(file)?;
        let max_bytes = self.max_bytes();
        let recs = log.slice(0, max_bytes)?;
        let abs = java_absolute(&self.cwd, file);
        let deep = self.deep();
        let mut full = std::mem::take(&mut self.full);
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut valid_bytes: i64 = 0;
        let mut last_offset: i64 = -1;
        let mut pos = recs.start;
        let end = log.iteration_end(recs);
        while let Some(fb) = log.next_batch(&mut pos, end)? {
            let hdr = self.print_batch_level(&mut log, recs, &fb, valid_bytes, &mut full)?;
            if deep {
                if full.len() != fb.size_in_bytes() as usize {
                    log.load_full(&fb, &mut full)?;
                }
                let opts = self.opts;
                let out = &mut self.out;
                let non_consecutive = &mut self.non_consecutive;
                let ts_type = hdr.timestamp_type();
                let is_control = matches!(hdr, Hdr::V2(h) if h.is_control());
                let magic = fb.magic;
                let mut sink = |r: &Rec| -> Res<()> {
                    // Kafka: `if (lastOffset == -1) lastOffset = ... else if (not consecutive)`.
                    // JAVA PORT: also reports (-1, first offset) when the log does not start
                    // at 0, and keeps the pairs in an ascending TreeMap.
                    if last_offset != -1 && r.offset != last_offset.wrapping_add(1) {
                        non_consecutive.entry(&abs).push((last_offset, r.offset));
                    }
                    last_offset = r.offset;
                    print_record(out, opts, ts_type, magic, is_control, r)
                };
                for_each_record(&fb, &full, &mut scratch, &mut sink)?;
            }
            valid_bytes += fb.size_in_bytes() as i64;
        }
        self.full = full;
        self.scratch = scratch;
        let trailing = (recs.end - recs.start) as i64 - valid_bytes;
        if trailing > 0 && max_bytes == i32::MAX {
            self.out.println(format_args!(
                "Found {trailing} invalid bytes at the end of {name}"
            ));
        }
        Ok(())
    }

    /// `printBatchLevel`. Leaves the whole batch in `full` when it was loaded.
    fn print_batch_level(
        &mut self,
        log: &mut LogRecords,
        recs: Recs,
        fb: &FileBatch,
        position: i64,
        full: &mut Vec<u8>,
    ) -> Res<Hdr> {
        full.clear();
        let hdr;
        if fb.magic >= 2 {
            hdr = log.load_header(fb, recs)?;
            let Hdr::V2(h) = hdr else { unreachable!() };
            self.out.print(format_args!(
                "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} deleteHorizonMs: {}",
                fb.offset,
                h.base_offset.wrapping_add(h.last_offset_delta as i64),
                h.records_count,
                h.base_sequence,
                if h.base_sequence == -1 {
                    -1
                } else {
                    increment_sequence(h.base_sequence, h.last_offset_delta)
                },
                h.producer_id,
                h.producer_epoch,
                h.partition_leader_epoch,
                h.is_transactional(),
                h.is_control(),
                optional_long(h.delete_horizon_ms()),
            ));
        } else {
            self.out.print(format_args!("offset: {}", fb.offset));
            hdr = log.load_header(fb, recs)?;
        }
        let ts_type = hdr.timestamp_type();
        let max_ts = hdr.max_timestamp();
        let codec = hdr.codec_name()?;
        let crc = hdr.crc();
        let valid = if self.deep() || fb.size_in_bytes() <= LOAD_WHOLE_LIMIT {
            log.load_full(fb, full)?;
            batch_is_valid(fb.magic, full)
        } else {
            log.is_valid_streaming(fb)?
        };
        self.out.println(format_args!(
            " position: {position} {ts_type}: {max_ts} size: {} magic: {} compresscodec: {codec} crc: {crc} isvalid: {valid}",
            fb.size_in_bytes(),
            fb.magic,
        ));
        Ok(hdr)
    }
}

/// One record line of deep iteration.
fn print_record(
    out: &mut PrintStream,
    opts: &DumpOptions,
    ts_type: &str,
    magic: i8,
    is_control: bool,
    r: &Rec,
) -> Res<()> {
    // Scala quirk: with --skip-record-metadata and a null key the payload loses the "| "
    // prefix. JAVA PORT: prints "| payload: ..." instead.
    let mut prefix = "| ";
    if !opts.skip_record_metadata {
        if let Some(e) = &r.meta_err {
            return Err(e.clone());
        }
        out.print(format_args!(
            "{prefix}offset: {} {ts_type}: {} keySize: {} valueSize: {}",
            r.offset, r.timestamp, r.key_size, r.value_size
        ));
        prefix = " ";
        if magic >= 2 {
            out.print(format_args!(" sequence: {} headerKeys: [", r.sequence));
            for (i, k) in r.header_keys.iter().enumerate() {
                if i > 0 {
                    out.print(format_args!(","));
                }
                out.print(format_args!("{}", java_utf8(k)));
            }
            out.print(format_args!("]"));
        }
        if let Some((valid, crc)) = r.legacy {
            // The stray '}' is Kafka's. JAVA PORT: no '}'.
            out.print(format_args!(" isValid: {valid} crc: {crc}}}"));
        }
        if is_control {
            let suffix = control_suffix(r)?;
            out.print(format_args!("{suffix}"));
        }
    }
    if opts.print_data_log && !is_control {
        if let Some(e) = &r.data_err {
            return Err(e.clone());
        }
        if let Some(k) = r.key {
            out.print(format_args!("{prefix}key: {}", java_utf8(k)));
        }
        if let Some(v) = r.value {
            out.print(format_args!(" payload: {}", java_utf8(v)));
        }
    }
    out.println(format_args!(""));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::java::{
        decrement_sequence, java_absolute, java_normalize, java_parent, java_string_hash,
        parse_java_long,
    };
    use super::records::{VarintErr, java_varint};
    use super::*;

    #[test]
    fn java_helpers() {
        assert_eq!(java_normalize("a//b/"), "a/b");
        assert_eq!(java_normalize("/"), "/");
        assert_eq!(java_absolute("/w", "x.log"), "/w/x.log");
        assert_eq!(java_absolute("/", "x.log"), "/x.log");
        assert_eq!(java_parent("/x.index"), "/");
        assert_eq!(java_parent("/a/b/x.index"), "/a/b");
        assert_eq!(parse_java_long("00000000000000000042").unwrap(), 42);
        assert!(parse_java_long("").is_err());
        assert!(parse_java_long("9223372036854775808").is_err());
        assert_eq!(parse_java_long("-9223372036854775808").unwrap(), i64::MIN);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(split_files_arg("a,,b,,"), vec!["a", "", "b"]);
        assert_eq!(split_files_arg(""), vec![""]);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(5, 3), 8);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(10, 3), 7);
    }

    #[test]
    fn java_varints() {
        let mut p = 0;
        assert!(matches!(java_varint(&[0x01], &mut p), Ok(-1)));
        let mut p = 0;
        assert!(matches!(
            java_varint(&[0xff, 0xff, 0xff, 0xff, 0xff], &mut p),
            Err(VarintErr::TooLong(-1))
        ));
        let mut p = 0;
        assert!(matches!(
            java_varint(&[0x80], &mut p),
            Err(VarintErr::Underflow)
        ));
        let mut p = 0;
        assert!(matches!(
            java_varint(&[0xfe, 0xff, 0xff, 0xff, 0x0f], &mut p),
            Ok(i32::MAX)
        ));
    }

    #[test]
    fn scala_map_order_is_bucket_then_hash() {
        let mut m: ScalaMap<Vec<(i64, i64)>> = ScalaMap::new();
        for k in ["/b", "/a", "/c"] {
            m.entry(k).push((1, 2));
        }
        // "/a".hashCode() = 1536, "/b" = 1537, "/c" = 1538: buckets 0, 1, 2.
        let order: Vec<&str> = m
            .in_iteration_order()
            .iter()
            .map(|e| e.0.as_str())
            .collect();
        assert_eq!(order, vec!["/a", "/b", "/c"]);
    }
}
