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
//! Every Java message text lives in this file as a literal, so a correction found by comparing
//! with the real tool is a one-line change.
//!
//! Reference version: the Scala `DumpLogSegments` of the released Kafka line (same text from
//! 3.x to 4.0). Kafka trunk has since ported the tool to Java with a few visible differences;
//! each spot is marked `JAVA PORT:` below.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;

use crate::record::compression::decompress;
use crate::record::{BatchHeader, BatchView, Compression, HEADER_SIZE};

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

// ---------------------------------------------------------------------------------------------
// Java exceptions

/// A Java exception escaping `main`, as its `toString()` prints: `class: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JavaException(String);

type Res<T> = Result<T, JavaException>;

const INVALID_RECORD: &str = "org.apache.kafka.common.InvalidRecordException";
const CORRUPT_RECORD: &str = "org.apache.kafka.common.errors.CorruptRecordException";
const KAFKA: &str = "org.apache.kafka.common.KafkaException";
const CORRUPT_INDEX: &str = "org.apache.kafka.storage.internals.log.CorruptIndexException";
const ILLEGAL_ARGUMENT: &str = "java.lang.IllegalArgumentException";
const NUMBER_FORMAT: &str = "java.lang.NumberFormatException";
const STRING_INDEX: &str = "java.lang.StringIndexOutOfBoundsException";
const INDEX_OOB: &str = "java.lang.IndexOutOfBoundsException";
const NO_SUCH_ELEMENT: &str = "java.util.NoSuchElementException";
const NULL_POINTER: &str = "java.lang.NullPointerException";
const BUFFER_UNDERFLOW: &str = "java.nio.BufferUnderflowException";
const RUNTIME: &str = "java.lang.RuntimeException";

fn exc(class: &str, msg: impl fmt::Display) -> JavaException {
    JavaException(format!("{class}: {msg}"))
}

fn bare(class: &str) -> JavaException {
    JavaException(class.to_string())
}

fn invalid_record(msg: impl fmt::Display) -> JavaException {
    exc(INVALID_RECORD, msg)
}

/// `FileChannel.open` / `Files.readAllBytes` failures.
fn nio_open_exc(path: &str, e: &io::Error) -> JavaException {
    match e.kind() {
        io::ErrorKind::NotFound => exc("java.nio.file.NoSuchFileException", path),
        io::ErrorKind::PermissionDenied => exc("java.nio.file.AccessDeniedException", path),
        _ => exc(
            "java.nio.file.FileSystemException",
            format_args!("{path}: {}", os_reason(e)),
        ),
    }
}

/// `RandomAccessFile` open failures (index files).
fn raf_open_exc(path: &str, e: &io::Error) -> JavaException {
    exc(
        "java.io.FileNotFoundException",
        format_args!("{path} ({})", os_reason(e)),
    )
}

/// A read failure after opening (Kafka wraps the IOException in a KafkaException).
fn read_exc(e: &io::Error) -> JavaException {
    exc(KAFKA, format_args!("java.io.IOException: {}", os_reason(e)))
}

fn os_reason(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// `ByteBuffer.getInt/getLong(index)` past the limit (JDK 17+ message).
fn index_oob(index: usize, limit: usize, width: usize) -> JavaException {
    let len = limit as i64 - width as i64 + 1;
    exc(
        INDEX_OOB,
        format_args!("Index {index} out of bounds for length {}", len.max(0)),
    )
}

// ---------------------------------------------------------------------------------------------
// Java / Scala helpers: paths, numbers, strings, hash map order

/// `java.io.File` normalisation: repeated '/' collapsed, trailing '/' dropped.
fn java_normalize(p: &str) -> String {
    let mut s = String::with_capacity(p.len());
    let mut prev_slash = false;
    for c in p.chars() {
        if c == '/' {
            if !prev_slash {
                s.push(c);
            }
            prev_slash = true;
        } else {
            s.push(c);
            prev_slash = false;
        }
    }
    if s.len() > 1 && s.ends_with('/') {
        s.pop();
    }
    s
}

/// `File.getName()`.
fn file_name(p: &str) -> &str {
    match p.rfind('/') {
        Some(i) => &p[i + 1..],
        None => p,
    }
}

/// `File.getAbsolutePath()` of a normalised path.
fn java_absolute(cwd: &str, p: &str) -> String {
    if p.starts_with('/') {
        p.to_string()
    } else if p.is_empty() {
        cwd.to_string()
    } else if cwd == "/" {
        format!("/{p}")
    } else {
        format!("{cwd}/{p}")
    }
}

/// `File.getParent()` of an absolute path.
fn java_parent(abs: &str) -> String {
    match abs.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => abs[..i].to_string(),
    }
}

/// `new File(parent, child)` for an absolute parent.
fn java_child(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `String.hashCode()`.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// `Long.parseLong(s)`.
fn parse_java_long(s: &str) -> Res<i64> {
    let bad = || exc(NUMBER_FORMAT, format_args!("For input string: \"{s}\""));
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        let d = (b - b'0') as i64;
        v = v
            .checked_mul(10)
            .and_then(|v| {
                if neg {
                    v.checked_sub(d)
                } else {
                    v.checked_add(d)
                }
            })
            .ok_or_else(bad)?;
    }
    Ok(v)
}

/// `Integer.parseInt(s)`.
fn parse_java_int(s: &str) -> Res<i32> {
    let v = parse_java_long(s)
        .map_err(|_| exc(NUMBER_FORMAT, format_args!("For input string: \"{s}\"")))?;
    i32::try_from(v).map_err(|_| exc(NUMBER_FORMAT, format_args!("For input string: \"{s}\"")))
}

/// `name.split("\\.")(0)`: the text before the first '.'.
fn first_dot_part(name: &str) -> &str {
    match name.find('.') {
        Some(i) => &name[..i],
        None => name,
    }
}

/// Java's `new String(bytes, UTF_8)` (malformed input replaced by U+FFFD).
fn java_utf8(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// `OptionalLong.toString()`.
fn optional_long(v: Option<i64>) -> String {
    match v {
        Some(v) => format!("OptionalLong[{v}]"),
        None => "OptionalLong.empty".to_string(),
    }
}

/// `DefaultRecordBatch.incrementSequence` with Java int arithmetic.
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment
            .wrapping_sub(i32::MAX.wrapping_sub(sequence))
            .wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// `DefaultRecordBatch.decrementSequence` with Java int arithmetic.
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX
            .wrapping_sub(decrement.wrapping_sub(sequence))
            .wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// A Scala 2.13 `mutable.HashMap[String, V]` as DumpLogSegments uses it: the summaries are
/// printed in its iteration order (buckets by improved String hash, then hash order).
/// Only visible with several files in one run. JAVA PORT: `java.util.HashMap` (same buckets,
/// insertion order within a bucket, resizes one entry later) and, for index mismatches, a
/// TreeMap in descending offset order.
struct ScalaMap<V> {
    entries: Vec<(String, V)>,
}

impl<V: Default> ScalaMap<V> {
    fn new() -> Self {
        ScalaMap {
            entries: Vec::new(),
        }
    }

    fn entry(&mut self, key: &str) -> &mut V {
        let i = match self.entries.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.entries.push((key.to_string(), V::default()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[i].1
    }

    fn in_iteration_order(&self) -> Vec<&(String, V)> {
        let mut table = 16usize;
        let mut threshold = 12usize;
        for n in 0..self.entries.len() {
            if n + 1 >= threshold {
                table *= 2;
                threshold = (table as f64 * 0.75) as usize;
            }
        }
        let mut v: Vec<(usize, i32, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| {
                let h = java_string_hash(k);
                let improved = h ^ ((h as u32) >> 16) as i32;
                (improved as u32 as usize & (table - 1), improved, i)
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, _, i)| &self.entries[i]).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Output streams with `PrintStream` semantics (write errors are swallowed, as Java does)

struct PrintStream<'a> {
    w: BufWriter<&'a mut dyn Write>,
    failed: bool,
}

impl<'a> PrintStream<'a> {
    fn new(w: &'a mut dyn Write) -> Self {
        PrintStream {
            w: BufWriter::with_capacity(64 * 1024, w),
            failed: false,
        }
    }
    fn print(&mut self, args: fmt::Arguments) {
        if !self.failed && self.w.write_fmt(args).is_err() {
            self.failed = true;
        }
    }
    fn println(&mut self, args: fmt::Arguments) {
        self.print(args);
        self.print(format_args!("\n"));
    }
    fn flush(&mut self) {
        if !self.failed && self.w.flush().is_err() {
            self.failed = true;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Positional file reader

const WINDOW: usize = 1 << 20;

/// Reads a file by position through a reused window buffer.
struct PosReader {
    file: File,
    len: u64,
    buf: Vec<u8>,
    start: u64,
}

impl PosReader {
    fn new(file: File, len: u64) -> Self {
        PosReader {
            file,
            len,
            buf: Vec::new(),
            start: 0,
        }
    }

    /// Up to `n` bytes at `pos`; fewer only when the file ends first.
    fn read(&mut self, pos: u64, n: usize) -> io::Result<&[u8]> {
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

// ---------------------------------------------------------------------------------------------
// FileRecords / FileLogInputStream

const LOG_OVERHEAD: i32 = 12;
const HEADER_SIZE_UP_TO_MAGIC: i32 = 17;
const RECORD_OVERHEAD_V0: i32 = 14;

/// `FileRecords.open(file, false)`: the root view of a segment file.
struct LogRecords {
    r: PosReader,
    /// `File.toString()` of the file, as Kafka's messages print it.
    file: String,
    size: i32,
}

/// A root (`slice == false`) or sliced view of a [`LogRecords`].
#[derive(Clone, Copy, Debug)]
struct Recs {
    start: i32,
    end: i32,
    slice: bool,
}

/// What `FileLogInputStream.nextBatch` yields.
#[derive(Clone, Copy, Debug)]
struct FileBatch {
    offset: i64,
    magic: i8,
    position: i32,
    /// The size field (bytes after it).
    size: i32,
}

impl FileBatch {
    fn size_in_bytes(&self) -> i32 {
        LOG_OVERHEAD + self.size
    }
}

/// The header of a batch as `loadBatchHeader()` sees it.
#[derive(Clone, Copy, Debug)]
enum Hdr {
    V2(BatchHeader),
    Legacy(LegacyHdr),
}

#[derive(Clone, Copy, Debug)]
struct LegacyHdr {
    crc: u32,
    magic: i8,
    attributes: u8,
    timestamp: i64,
}

impl Hdr {
    fn timestamp_type(&self) -> &'static str {
        match self {
            Hdr::V2(h) => h.timestamp_type().name(),
            Hdr::Legacy(l) => legacy_timestamp_type(l.magic, l.attributes),
        }
    }
    fn max_timestamp(&self) -> i64 {
        match self {
            Hdr::V2(h) => h.max_timestamp,
            Hdr::Legacy(l) => l.timestamp,
        }
    }
    fn codec_name(&self) -> Res<&'static str> {
        let id = match self {
            Hdr::V2(h) => (h.attributes & 0x07) as u8,
            Hdr::Legacy(l) => l.attributes & 0x07,
        };
        codec_name(id)
    }
    fn crc(&self) -> u32 {
        match self {
            Hdr::V2(h) => h.crc,
            Hdr::Legacy(l) => l.crc,
        }
    }
}

fn codec_name(id: u8) -> Res<&'static str> {
    Compression::from_id(id).map(|c| c.name()).map_err(|_| {
        exc(
            ILLEGAL_ARGUMENT,
            format_args!("Unknown compression type id: {id}"),
        )
    })
}

fn legacy_timestamp_type(magic: i8, attributes: u8) -> &'static str {
    if magic == 0 {
        "NoTimestampType"
    } else if attributes & 0x08 == 0 {
        "CreateTime"
    } else {
        "LogAppendTime"
    }
}

/// Decodes a v2-style header (any magic >= 2) with the record module's parser.
fn parse_v2_header(b: &[u8]) -> BatchHeader {
    let mut copy = [0u8; HEADER_SIZE];
    copy.copy_from_slice(&b[..HEADER_SIZE]);
    let magic = copy[16] as i8;
    copy[16] = 2;
    let mut h = BatchHeader::parse(&copy).expect("61 bytes with magic 2");
    h.magic = magic;
    h
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// `ByteBuffer.getInt(index)` over `buf`.
fn get_int(buf: &[u8], at: usize) -> Res<i32> {
    if at.checked_add(4).is_some_and(|e| e <= buf.len()) {
        Ok(be_i32(buf, at))
    } else {
        Err(index_oob(at, buf.len(), 4))
    }
}

impl LogRecords {
    /// `FileRecords.open(new File(path), false)`.
    fn open(path: &str) -> Res<LogRecords> {
        let f = File::open(path).map_err(|e| nio_open_exc(path, &e))?;
        let len = f.metadata().map_err(|e| nio_open_exc(path, &e))?.len();
        if len > i32::MAX as u64 {
            return Err(exc(
                KAFKA,
                format_args!(
                    "The size of segment {path} ({len}) is larger than the maximum allowed segment size of {}",
                    i32::MAX
                ),
            ));
        }
        Ok(LogRecords {
            r: PosReader::new(f, len),
            file: path.to_string(),
            size: len as i32,
        })
    }

    fn root(&self) -> Recs {
        Recs {
            start: 0,
            end: i32::MAX,
            slice: false,
        }
    }

    fn describe(&self, r: Recs) -> String {
        let size = if r.slice { r.end - r.start } else { self.size };
        format!(
            "FileRecords(size={size}, file={}, start={}, end={})",
            self.file, r.start, r.end
        )
    }

    /// `FileRecords.slice(position, size)` on the root view.
    fn slice(&self, position: i32, size: i32) -> Res<Recs> {
        let root = self.root();
        let current = self.size;
        if position < 0 {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!(
                    "Invalid position: {position} in read from {}",
                    self.describe(root)
                ),
            ));
        }
        if position > current {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!(
                    "Slice from position {position} exceeds end position of {}",
                    self.describe(root)
                ),
            ));
        }
        if size < 0 {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!("Invalid size: {size} in read from {}", self.describe(root)),
            ));
        }
        let mut end = position.wrapping_add(size);
        if end < 0 || end > current {
            end = current;
        }
        Ok(Recs {
            start: position,
            end,
            slice: true,
        })
    }

    fn iteration_end(&self, r: Recs) -> i32 {
        if r.slice { r.end } else { self.size }
    }

    /// `FileLogInputStream.nextBatch()` (through `RecordBatchIterator`).
    fn next_batch(&mut self, pos: &mut i32, end: i32) -> Res<Option<FileBatch>> {
        if *pos as i64 >= end as i64 - HEADER_SIZE_UP_TO_MAGIC as i64 {
            return Ok(None);
        }
        let head = self.r.read(*pos as u64, 17).map_err(|e| read_exc(&e))?;
        if head.len() < 17 {
            return Err(exc(
                CORRUPT_RECORD,
                "Unexpected EOF while attempting to read the next batch",
            ));
        }
        let (offset, size, magic) = BatchHeader::peek(head).expect("17 bytes");
        if size < RECORD_OVERHEAD_V0 {
            return Err(exc(
                CORRUPT_RECORD,
                format_args!(
                    "Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0}) in file {}.",
                    self.file
                ),
            ));
        }
        if *pos as i64 > end as i64 - LOG_OVERHEAD as i64 - size as i64 {
            return Ok(None);
        }
        let b = FileBatch {
            offset,
            magic,
            position: *pos,
            size,
        };
        *pos += b.size_in_bytes();
        Ok(Some(b))
    }

    /// `loadBatchHeader()`.
    fn load_header(&mut self, b: &FileBatch, recs: Recs) -> Res<Hdr> {
        let n = if b.magic >= 2 {
            HEADER_SIZE
        } else {
            12 + match b.magic {
                0 => 6,
                1 => 14,
                m => return Err(exc(ILLEGAL_ARGUMENT, format_args!("Invalid magic: {m}"))),
            }
        };
        let bytes = self
            .r
            .read(b.position as u64, n)
            .map_err(|e| read_exc(&e))?;
        if bytes.len() < n {
            return Err(exc(
                KAFKA,
                format_args!(
                    "Failed to load record batch at position {} from {}",
                    b.position,
                    self.describe(recs)
                ),
            ));
        }
        if b.magic >= 2 {
            Ok(Hdr::V2(parse_v2_header(bytes)))
        } else {
            let rec = &bytes[12..];
            Ok(Hdr::Legacy(LegacyHdr {
                crc: be_u32(rec, 0),
                magic: rec[4] as i8,
                attributes: rec[5],
                timestamp: if rec[4] == 0 { -1 } else { be_i64(rec, 6) },
            }))
        }
    }

    /// `batch.lastOffset` of a `FileChannelRecordBatch`.
    fn last_offset(&mut self, b: &FileBatch, recs: Recs) -> Res<i64> {
        if b.magic >= 2 {
            match self.load_header(b, recs)? {
                Hdr::V2(h) => Ok(h.base_offset.wrapping_add(h.last_offset_delta as i64)),
                Hdr::Legacy(_) => unreachable!(),
            }
        } else {
            Ok(b.offset)
        }
    }

    /// `loadFullBatch()` into `into`.
    fn load_full(&mut self, b: &FileBatch, into: &mut Vec<u8>) -> Res<()> {
        let n = b.size_in_bytes() as usize;
        into.clear();
        into.reserve(n);
        let mut pos = b.position as u64;
        while into.len() < n {
            let chunk = self
                .r
                .read(pos, (n - into.len()).min(WINDOW))
                .map_err(|e| read_exc(&e))?;
            if chunk.is_empty() {
                return Err(exc(
                    KAFKA,
                    format_args!(
                        "Failed to load record batch at position {} from {}",
                        b.position, self.file
                    ),
                ));
            }
            into.extend_from_slice(chunk);
            pos += chunk.len() as u64;
        }
        Ok(())
    }

    /// `batch.isValid` without keeping the batch (streams the checksum).
    fn is_valid_streaming(&mut self, b: &FileBatch) -> Res<bool> {
        let total = b.size_in_bytes() as u64;
        let (crc_at, from) = if b.magic >= 2 {
            (17u64, 21u64)
        } else {
            (12, 16)
        };
        if b.magic >= 2 && total < HEADER_SIZE as u64 {
            return Ok(false);
        }
        let stored = {
            let s = self
                .r
                .read(b.position as u64 + crc_at, 4)
                .map_err(|e| read_exc(&e))?;
            if s.len() < 4 {
                return Ok(false);
            }
            be_u32(s, 0)
        };
        let mut pos = b.position as u64 + from;
        let end = b.position as u64 + total;
        let mut c32c = 0u32;
        let mut c32 = flate2::Crc::new();
        while pos < end {
            let chunk = self
                .r
                .read(pos, ((end - pos) as usize).min(WINDOW))
                .map_err(|e| read_exc(&e))?;
            if chunk.is_empty() {
                break;
            }
            if b.magic >= 2 {
                c32c = crc32c::crc32c_append(c32c, chunk);
            } else {
                c32.update(chunk);
            }
            pos += chunk.len() as u64;
        }
        Ok(if b.magic >= 2 {
            c32c == stored
        } else {
            c32.sum() == stored
        })
    }
}

/// `batch.isValid` over a whole loaded batch.
fn batch_is_valid(magic: i8, full: &[u8]) -> bool {
    if magic >= 2 {
        if full.len() < HEADER_SIZE {
            return false;
        }
        if magic == 2
            && let Ok(view) = BatchView::new(full)
        {
            return view.is_valid();
        }
        crc32c::crc32c(&full[21..]) == be_u32(full, 17)
    } else {
        legacy_is_valid(&full[12..])
    }
}

fn legacy_is_valid(rec: &[u8]) -> bool {
    if rec.len() < RECORD_OVERHEAD_V0 as usize {
        return false;
    }
    let mut c = flate2::Crc::new();
    c.update(&rec[4..]);
    c.sum() == be_u32(rec, 0)
}

// ---------------------------------------------------------------------------------------------
// Records as Kafka's `batch.iterator()` yields them

/// One record, with what DumpLogSegments prints of it.
#[derive(Debug)]
struct Rec<'a> {
    offset: i64,
    timestamp: i64,
    key_size: i32,
    value_size: i32,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    sequence: i32,
    header_keys: Vec<&'a [u8]>,
    /// Legacy (v0/v1) records: `isValid` and `checksum`.
    legacy: Option<(bool, u32)>,
    /// Legacy records: what reading the sizes would throw (metadata part of the line).
    meta_err: Option<JavaException>,
    /// Legacy records: what reading key/value would throw (`--print-data-log` part).
    data_err: Option<JavaException>,
}

/// Java `ByteUtils.readVarint(ByteBuffer)` failure kinds.
enum VarintErr {
    Underflow,
    TooLong(i32),
}

fn java_uvarint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintErr> {
    let mut result: i32 = 0;
    for i in 0..4 {
        let b = *buf.get(*pos).ok_or(VarintErr::Underflow)? as i8;
        *pos += 1;
        if b >= 0 {
            return Ok(result | ((b as i32) << (7 * i)));
        }
        result |= ((b as i32) & 0x7f) << (7 * i);
    }
    let b = *buf.get(*pos).ok_or(VarintErr::Underflow)? as i8;
    *pos += 1;
    result |= (b as i32) << 28;
    if b < 0 {
        return Err(VarintErr::TooLong(result));
    }
    Ok(result)
}

fn java_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintErr> {
    let v = java_uvarint(buf, pos)?;
    Ok(((v as u32) >> 1) as i32 ^ -(v & 1))
}

fn java_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintErr> {
    let mut value: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *buf.get(*pos).ok_or(VarintErr::Underflow)?;
        *pos += 1;
        if b & 0x80 == 0 {
            value |= (b as u64) << shift;
            break;
        }
        value |= ((b & 0x7f) as u64) << shift;
        shift += 7;
        if shift > 63 {
            return Err(VarintErr::TooLong(0));
        }
    }
    Ok((value >> 1) as i64 ^ -((value & 1) as i64))
}

fn premature_eof() -> JavaException {
    invalid_record("Incorrect declared batch size, premature EOF reached")
}

fn still_remaining() -> JavaException {
    invalid_record("Incorrect declared batch size, records still remaining in file")
}

/// The batch-level values a v2 record needs.
#[derive(Clone, Copy)]
struct V2Ctx {
    base_offset: i64,
    base_timestamp: i64,
    base_sequence: i32,
    log_append_time: Option<i64>,
}

/// `Utils.readBytes`-style slicing: `None` for a negative size.
fn read_sized<'a>(buf: &'a [u8], pos: &mut usize, size: i32) -> Result<Option<&'a [u8]>, ()> {
    if size < 0 {
        return Ok(None);
    }
    let end = pos.checked_add(size as usize).ok_or(())?;
    let s = buf.get(*pos..end).ok_or(())?;
    *pos = end;
    Ok(Some(s))
}

/// The body of `DefaultRecord.readFrom(ByteBuffer, sizeOfBodyInBytes, ...)`, `buf` ending at
/// the buffer's limit.
fn read_record_body<'a>(buf: &'a [u8], pos: &mut usize, size: i32, c: &V2Ctx) -> Res<Rec<'a>> {
    let structure = || invalid_record("Found invalid record structure");
    let start = *pos;
    buf.get(*pos).ok_or_else(structure)?;
    *pos += 1;
    let ts_delta = java_varlong(buf, pos).map_err(|_| structure())?;
    let timestamp = c
        .log_append_time
        .unwrap_or(c.base_timestamp.wrapping_add(ts_delta));
    let offset_delta = java_varint(buf, pos).map_err(|_| structure())?;
    let offset = c.base_offset.wrapping_add(offset_delta as i64);
    let sequence = if c.base_sequence >= 0 {
        increment_sequence(c.base_sequence, offset_delta)
    } else {
        -1
    };
    let key_size = java_varint(buf, pos).map_err(|_| structure())?;
    let key = read_sized(buf, pos, key_size).map_err(|_| structure())?;
    let value_size = java_varint(buf, pos).map_err(|_| structure())?;
    let value = read_sized(buf, pos, value_size).map_err(|_| structure())?;
    let num_headers = java_varint(buf, pos).map_err(|_| structure())?;
    if num_headers < 0 {
        return Err(invalid_record(format_args!(
            "Found invalid number of record headers {num_headers}"
        )));
    }
    if num_headers as usize > buf.len() - *pos {
        return Err(invalid_record(format_args!(
            "Found invalid number of record headers. {num_headers} is larger than the remaining size of the buffer"
        )));
    }
    let mut header_keys = Vec::with_capacity(num_headers as usize);
    for _ in 0..num_headers {
        let hk = java_varint(buf, pos).map_err(|_| structure())?;
        if hk < 0 {
            return Err(invalid_record(format_args!(
                "Invalid negative header key size {hk}"
            )));
        }
        let k = read_sized(buf, pos, hk).map_err(|_| structure())?;
        header_keys.push(k.unwrap_or_default());
        let hv = java_varint(buf, pos).map_err(|_| structure())?;
        read_sized(buf, pos, hv).map_err(|_| structure())?;
    }
    let read = (*pos - start) as i64;
    if read != size as i64 {
        return Err(invalid_record(format_args!(
            "Invalid record size: expected to read {size} bytes in record payload, but instead read {read}"
        )));
    }
    Ok(Rec {
        offset,
        timestamp,
        key_size: key.map_or(-1, |k| k.len() as i32),
        value_size: value.map_or(-1, |v| v.len() as i32),
        key,
        value,
        sequence,
        header_keys,
        legacy: None,
        meta_err: None,
        data_err: None,
    })
}

/// Records of an uncompressed v2 batch (`uncompressedIterator`): those read before a
/// failure, then the failure.
fn v2_uncompressed<'a>(
    full: &'a [u8],
    count: i32,
    c: &V2Ctx,
) -> (Vec<Rec<'a>>, Option<JavaException>) {
    let mut recs = Vec::new();
    let mut pos = HEADER_SIZE;
    for i in 0..count {
        let size = match java_varint(full, &mut pos) {
            Ok(s) => s,
            Err(VarintErr::Underflow) => return (recs, Some(premature_eof())),
            Err(VarintErr::TooLong(v)) => {
                return (
                    recs,
                    Some(exc(
                        ILLEGAL_ARGUMENT,
                        format_args!(
                            "Varint is too long, the most significant bit in the 5th byte is set, converted value: {:x}",
                            v as u32
                        ),
                    )),
                );
            }
        };
        let remaining = full.len() - pos;
        if (remaining as i64) < size as i64 {
            return (
                recs,
                Some(invalid_record(format_args!(
                    "Invalid record size: expected {size} bytes in record payload, but instead the buffer has only {remaining} remaining bytes."
                ))),
            );
        }
        match read_record_body(full, &mut pos, size, c) {
            Ok(r) => {
                if i == count - 1 && pos < full.len() {
                    return (recs, Some(still_remaining()));
                }
                recs.push(r);
            }
            Err(e) => return (recs, Some(e)),
        }
    }
    (recs, None)
}

/// Records of a decompressed v2 stream (`DefaultRecord.readFrom(InputStream, ...)`): all of
/// them, or the first failure.
fn v2_stream<'a>(data: &'a [u8], count: i32, c: &V2Ctx) -> Res<Vec<Rec<'a>>> {
    let mut recs = Vec::new();
    let mut pos = 0usize;
    for i in 0..count {
        let size = java_varint(data, &mut pos).map_err(|_| premature_eof())?;
        if size < 0 {
            return Err(premature_eof());
        }
        if data.len() - pos < size as usize {
            return Err(invalid_record(format_args!(
                "Invalid record size: expected {size} bytes in record payload, but the record payload reached EOF."
            )));
        }
        let body = &data[pos..pos + size as usize];
        pos += size as usize;
        let mut bp = 0;
        let r = read_record_body(body, &mut bp, size, c)?;
        if i == count - 1 && pos < data.len() {
            return Err(still_remaining());
        }
        recs.push(r);
    }
    Ok(recs)
}

/// What `GZIPInputStream`'s constructor would throw for this stream, if anything.
fn gzip_header_error(data: &[u8]) -> Option<JavaException> {
    let wrap = |m: &str| exc(KAFKA, m);
    if data.len() < 2 {
        return Some(wrap("java.io.EOFException"));
    }
    if data[0] != 0x1f || data[1] != 0x8b {
        return Some(wrap("java.util.zip.ZipException: Not in GZIP format"));
    }
    if data.len() < 3 {
        return Some(wrap("java.io.EOFException"));
    }
    if data[2] != 8 {
        return Some(wrap(
            "java.util.zip.ZipException: Unsupported compression method",
        ));
    }
    if data.len() < 10 {
        return Some(wrap("java.io.EOFException"));
    }
    None
}

/// Calls `f` for each record of a batch, in Kafka's order, then fails as Kafka's iterator
/// would. `full` is the whole batch (log header included).
fn for_each_record(
    fb: &FileBatch,
    full: &[u8],
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(&Rec) -> Res<()>,
) -> Res<()> {
    if fb.magic < 2 {
        return legacy_for_each_record(fb, full, scratch, f);
    }
    // `count()` reads the buffer at offset 57.
    if full.len() < HEADER_SIZE {
        return Err(index_oob(57, full.len(), 4));
    }
    let count = be_i32(full, 57);
    if count == 0 {
        return Ok(());
    }
    let c = V2Ctx {
        base_offset: be_i64(full, 0),
        base_timestamp: be_i64(full, 27),
        base_sequence: be_i32(full, 53),
        log_append_time: (be_i16(full, 21) & 0x08 != 0).then(|| be_i64(full, 35)),
    };
    let codec = Compression::from_id((be_i16(full, 21) & 0x07) as u8)
        .map_err(|_| codec_name((be_i16(full, 21) & 0x07) as u8).unwrap_err())?;

    // Fast path: the record module's decoder. It accepts exactly the batches Kafka decodes
    // without error (and decodes them identically); anything else goes to the Kafka-faithful
    // reader below, which also reproduces Kafka's failure.
    let offsets_fit = c.base_offset.checked_add(i32::MIN as i64).is_some()
        && c.base_offset.checked_add(i32::MAX as i64).is_some();
    if fb.magic == 2
        && count > 0
        && offsets_fit
        && let Ok(view) = BatchView::new(full)
    {
        let decoded: Option<Vec<Rec>> = match view.records(scratch) {
            Ok(iter) => {
                let mut v = Vec::with_capacity((count as usize).min(4096));
                let mut ok = true;
                for r in iter {
                    match r {
                        Ok(r) => {
                            let delta = r.offset.wrapping_sub(c.base_offset) as i32;
                            v.push(Rec {
                                offset: r.offset,
                                timestamp: r.timestamp,
                                key_size: r.key.map_or(-1, |k| k.len() as i32),
                                value_size: r.value.map_or(-1, |k| k.len() as i32),
                                key: r.key,
                                value: r.value,
                                sequence: if c.base_sequence >= 0 {
                                    increment_sequence(c.base_sequence, delta)
                                } else {
                                    -1
                                },
                                header_keys: r.headers().into_iter().map(|(k, _)| k).collect(),
                                legacy: None,
                                meta_err: None,
                                data_err: None,
                            });
                        }
                        Err(_) => {
                            ok = false;
                            break;
                        }
                    }
                }
                (ok && v.len() == count as usize).then_some(v)
            }
            Err(_) => None,
        };
        if let Some(recs) = decoded {
            for r in &recs {
                f(r)?;
            }
            return Ok(());
        }
    }

    if codec == Compression::None {
        if count < 0 {
            return Err(invalid_record(format_args!(
                "Found invalid record count {count} in magic v{} batch",
                fb.magic
            )));
        }
        let (recs, failure) = v2_uncompressed(full, count, &c);
        for r in &recs {
            f(r)?;
        }
        return match failure {
            Some(e) => Err(e),
            None => Ok(()),
        };
    }

    // Compressed: `iterator()` decompresses and reads every record before returning any.
    let data = &full[HEADER_SIZE..];
    if codec == Compression::Gzip
        && let Some(e) = gzip_header_error(data)
    {
        return Err(e);
    }
    if count < 0 {
        return Err(invalid_record(format_args!(
            "Found invalid record count {count} in magic v{} batch",
            fb.magic
        )));
    }
    let decompressed_ok = decompress(codec, data, scratch).is_ok();
    let recs = match v2_stream(scratch, count, &c) {
        Ok(recs) if decompressed_ok => recs,
        Ok(_) => {
            return Err(exc(
                KAFKA,
                "Error checking for remaining bytes after reading batch",
            ));
        }
        Err(e) if decompressed_ok => return Err(e),
        Err(_) => return Err(exc(KAFKA, "Failed to decompress record stream")),
    };
    for r in &recs {
        f(r)?;
    }
    Ok(())
}

// --- legacy (magic 0 / 1) message sets ---

/// A legacy record (`LegacyRecord`) over its own bytes (crc onwards).
#[derive(Clone, Copy)]
struct LegacyRecord<'a> {
    buf: &'a [u8],
    /// The wrapper's (timestamp, is LogAppendTime) for inner records of a v1 wrapper.
    wrapper: Option<(i64, bool)>,
}

impl<'a> LegacyRecord<'a> {
    fn magic(&self) -> i8 {
        self.buf[4] as i8
    }
    fn attributes(&self) -> u8 {
        self.buf[5]
    }
    fn key_size_offset(&self) -> usize {
        if self.magic() == 0 { 6 } else { 14 }
    }
    fn key_size(&self) -> Res<i32> {
        get_int(self.buf, self.key_size_offset())
    }
    fn value_size_offset(&self) -> Res<usize> {
        let key_offset = if self.magic() == 0 { 10 } else { 18 };
        Ok(key_offset + self.key_size()?.max(0) as usize)
    }
    fn value_size(&self) -> Res<i32> {
        get_int(self.buf, self.value_size_offset()?)
    }
    /// `Utils.sizeDelimited(buffer, start)`.
    fn size_delimited(&self, start: usize) -> Res<Option<&'a [u8]>> {
        let size = get_int(self.buf, start)?;
        if size < 0 {
            return Ok(None);
        }
        let from = start + 4;
        let cap = self.buf.len() - from.min(self.buf.len());
        if size as usize > cap {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!("newLimit > capacity: ({size} > {cap})"),
            ));
        }
        Ok(Some(&self.buf[from..from + size as usize]))
    }
    fn key(&self) -> Res<Option<&'a [u8]>> {
        self.size_delimited(self.key_size_offset())
    }
    fn value(&self) -> Res<Option<&'a [u8]>> {
        self.size_delimited(self.value_size_offset()?)
    }
    fn timestamp(&self) -> i64 {
        if self.magic() == 0 {
            return -1;
        }
        match self.wrapper {
            Some((ts, true)) => ts,
            _ if self.buf.len() >= 14 => be_i64(self.buf, 6),
            _ => -1,
        }
    }
    fn crc(&self) -> u32 {
        be_u32(self.buf, 0)
    }

    fn to_rec(self, offset: i64) -> Rec<'a> {
        let sizes = self.key_size().and_then(|k| Ok((k, self.value_size()?)));
        let (key_size, value_size, meta_err) = match sizes {
            Ok((k, v)) => (k, v, None),
            Err(e) => (-1, -1, Some(e)),
        };
        let kv = (|| {
            let key = if key_size >= 0 { self.key()? } else { None };
            let value = if value_size >= 0 { self.value()? } else { None };
            Ok::<_, JavaException>((key, value))
        })();
        let (key, value, data_err) = match (&meta_err, kv) {
            (Some(e), _) => (None, None, Some(e.clone())),
            (None, Ok((k, v))) => (k, v, None),
            (None, Err(e)) => (None, None, Some(e)),
        };
        Rec {
            offset,
            timestamp: self.timestamp(),
            key_size,
            value_size,
            key,
            value,
            sequence: -1,
            header_keys: Vec::new(),
            legacy: Some((legacy_is_valid(self.buf), self.crc())),
            meta_err,
            data_err,
        }
    }
}

/// Kafka's own LZ4 framing (`KafkaLZ4BlockInputStream`), lenient about the header checksum
/// (which magic 0 producers wrote wrongly).
fn kafka_lz4_decompress(input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    if input.len() < 7 || input[..4] != [0x04, 0x22, 0x4d, 0x18] {
        return Err("Stream unsupported (invalid magic bytes)".into());
    }
    let flg = input[4];
    let bd = input[5];
    let block_checksum = flg & 0x10 != 0;
    let content_size = flg & 0x08 != 0;
    let max_block = match (bd >> 4) & 0x07 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return Err("Stream frame descriptor corrupted".into()),
    };
    let mut pos = 6 + if content_size { 8 } else { 0 } + 1;
    let mut block = vec![0u8; max_block];
    loop {
        let Some(sz) = input.get(pos..pos + 4) else {
            return Err("Stream ended prematurely".into());
        };
        let sz = u32::from_le_bytes(sz.try_into().unwrap());
        pos += 4;
        if sz == 0 {
            return Ok(());
        }
        let len = (sz & 0x7fff_ffff) as usize;
        let data = input
            .get(pos..pos + len)
            .ok_or_else(|| "Stream ended prematurely".to_string())?;
        if sz & 0x8000_0000 != 0 {
            out.extend_from_slice(data);
        } else {
            let n =
                lz4_flex::block::decompress_into(data, &mut block).map_err(|e| e.to_string())?;
            out.extend_from_slice(&block[..n]);
        }
        pos += len + if block_checksum { 4 } else { 0 };
    }
}

fn legacy_for_each_record(
    fb: &FileBatch,
    full: &[u8],
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(&Rec) -> Res<()>,
) -> Res<()> {
    let outer = LegacyRecord {
        buf: &full[12..],
        wrapper: None,
    };
    let magic = outer.magic();
    let codec = outer.attributes() & 0x07;
    if codec == 0 {
        return f(&outer.to_rec(be_i64(full, 0)));
    }
    codec_name(codec)?;
    if magic != 0 && magic != 1 {
        return Err(invalid_record(format_args!(
            "Invalid wrapper magic found in legacy deep record iterator {magic}"
        )));
    }
    if codec == 4 {
        return Err(invalid_record(format_args!(
            "Invalid wrapper compressionType found in legacy deep record iterator {magic}"
        )));
    }
    if outer.value_size()? < 0 {
        return Err(invalid_record(format_args!(
            "Found invalid compressed record set with null value (magic = {magic})"
        )));
    }
    let wrapped = outer.value()?.unwrap_or_default();
    let decompressed = match codec {
        1 => {
            if let Some(e) = gzip_header_error(wrapped) {
                return Err(e);
            }
            decompress(Compression::Gzip, wrapped, scratch).map_err(|e| e.to_string())
        }
        2 => decompress(Compression::Snappy, wrapped, scratch).map_err(|e| e.to_string()),
        _ => kafka_lz4_decompress(wrapped, scratch),
    };
    if decompressed.is_err() {
        return Err(exc(
            KAFKA,
            "java.io.IOException: failed to decompress the wrapped message set",
        ));
    }
    let wrapper_ts = (outer.timestamp(), outer.attributes() & 0x08 != 0);
    // DataLogInputStream over the decompressed bytes.
    let mut inner: Vec<(i64, LegacyRecord)> = Vec::new();
    let data: &[u8] = scratch;
    let mut pos = 0usize;
    while data.len() - pos >= 12 {
        let off = be_i64(data, pos);
        let size = be_i32(data, pos + 8);
        if size < RECORD_OVERHEAD_V0 {
            return Err(exc(
                CORRUPT_RECORD,
                format_args!(
                    "Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0})"
                ),
            ));
        }
        if data.len() - pos - 12 < size as usize {
            break;
        }
        let buf = &data[pos + 12..pos + 12 + size as usize];
        let wrapper = (buf[4] == 1).then_some(wrapper_ts);
        inner.push((off, LegacyRecord { buf, wrapper }));
        pos += 12 + size as usize;
    }
    let Some(&(last_inner, _)) = inner.last() else {
        return Err(invalid_record(
            "Found invalid compressed record set with no inner records",
        ));
    };
    let base = if magic == 1 {
        let wrapper_offset = fb.offset;
        if wrapper_offset == 0 {
            Some(0)
        } else if wrapper_offset < last_inner {
            return Err(invalid_record(format_args!(
                "Found invalid wrapper offset in compressed v1 message set, wrapper offset '{wrapper_offset}' is less than the last inner message offset '{last_inner}' and it is not zero."
            )));
        } else {
            Some(wrapper_offset - last_inner)
        }
    } else {
        None
    };
    for (off, rec) in inner {
        let offset = match base {
            Some(b) => b.wrapping_add(off),
            None => off,
        };
        let inner_codec = rec.attributes() & 0x07;
        if inner_codec != 0 {
            codec_name(inner_codec)?;
            return Err(invalid_record("Inner messages must not be compressed"));
        }
        f(&rec.to_rec(offset))?;
    }
    Ok(())
}

// --- control records ---

/// What DumpLogSegments appends for a record of a control batch.
fn control_suffix(rec: &Rec) -> Res<String> {
    let Some(key) = rec.key else {
        return Err(exc(
            NULL_POINTER,
            "Cannot invoke \"java.nio.ByteBuffer.remaining()\" because \"key\" is null",
        ));
    };
    if key.len() < 4 {
        return Err(invalid_record(format_args!(
            "Invalid value size found for end control record key. Must have at least 4 bytes, but found only {}",
            key.len()
        )));
    }
    let version = be_i16(key, 0);
    if version < 0 {
        return Err(invalid_record(format_args!(
            "Invalid version found for control record: {version}. May indicate data corruption"
        )));
    }
    let type_id = be_i16(key, 2);
    let value = || {
        rec.value.ok_or_else(|| {
            exc(
                NULL_POINTER,
                "Cannot invoke \"java.nio.ByteBuffer.getShort()\" because \"value\" is null",
            )
        })
    };
    Ok(match type_id {
        0 | 1 => {
            let v = value()?;
            if v.len() < 2 {
                return Err(bare(BUFFER_UNDERFLOW));
            }
            let marker_version = be_i16(v, 0);
            if marker_version < 0 {
                return Err(invalid_record(format_args!(
                    "Invalid version found for end transaction marker: {marker_version}. May indicate data corruption"
                )));
            }
            if v.len() < 6 {
                return Err(bare(BUFFER_UNDERFLOW));
            }
            let name = if type_id == 0 { "ABORT" } else { "COMMIT" };
            format!(" endTxnMarker: {name} coordinatorEpoch: {}", be_i32(v, 2))
        }
        // JAVA PORT: " LeaderChange: {json}".
        2 => " controlType: LEADER_CHANGE(2)".to_string(),
        3 => format!(" SnapshotHeader {}", kraft::snapshot_header(value()?)?),
        4 => format!(" SnapshotFooter {}", kraft::snapshot_footer(value()?)?),
        5 => format!(" KRaftVersion {}", kraft::kraft_version(value()?)?),
        6 => format!(" KRaftVoters {}", kraft::voters(value()?)?),
        other => format!(" controlType: UNKNOWN({other})"),
    })
}

/// The KRaft control records, as their generated `*JsonConverter` print them.
mod kraft {
    use super::{BUFFER_UNDERFLOW, RUNTIME, Res, bare, exc};
    use base64::Engine;

    struct Rd<'a> {
        b: &'a [u8],
        p: usize,
    }

    impl<'a> Rd<'a> {
        fn take(&mut self, n: usize) -> Res<&'a [u8]> {
            let s = self
                .b
                .get(self.p..self.p + n)
                .ok_or_else(|| bare(BUFFER_UNDERFLOW))?;
            self.p += n;
            Ok(s)
        }
        fn i16(&mut self) -> Res<i16> {
            Ok(i16::from_be_bytes(self.take(2)?.try_into().unwrap()))
        }
        fn u16(&mut self) -> Res<u16> {
            Ok(u16::from_be_bytes(self.take(2)?.try_into().unwrap()))
        }
        fn i32(&mut self) -> Res<i32> {
            Ok(i32::from_be_bytes(self.take(4)?.try_into().unwrap()))
        }
        fn i64(&mut self) -> Res<i64> {
            Ok(i64::from_be_bytes(self.take(8)?.try_into().unwrap()))
        }
        fn uvarint(&mut self) -> Res<u32> {
            let mut v: u32 = 0;
            for i in 0..5 {
                let b = self.take(1)?[0];
                v |= ((b & 0x7f) as u32) << (7 * i);
                if b & 0x80 == 0 {
                    return Ok(v);
                }
            }
            Err(exc(
                "java.lang.IllegalArgumentException",
                format_args!(
                    "Varint is too long, the most significant bit in the 5th byte is set, converted value: {v:x}"
                ),
            ))
        }
        fn tagged_fields(&mut self) -> Res<()> {
            let n = self.uvarint()?;
            for _ in 0..n {
                self.uvarint()?;
                let size = self.uvarint()? as usize;
                self.take(size)?;
            }
            Ok(())
        }
        fn compact_string(&mut self, field: &str) -> Res<String> {
            let len = self.uvarint()? as i64 - 1;
            if len < 0 {
                return Err(exc(
                    RUNTIME,
                    format_args!("non-nullable field {field} was serialized as null"),
                ));
            }
            if len > 0x7fff {
                return Err(exc(
                    RUNTIME,
                    format_args!("string field {field} had invalid length {len}"),
                ));
            }
            Ok(String::from_utf8_lossy(self.take(len as usize)?).into_owned())
        }
        fn compact_array_len(&mut self, field: &str) -> Res<usize> {
            let len = self.uvarint()? as i64 - 1;
            if len < 0 {
                return Err(exc(
                    RUNTIME,
                    format_args!("non-nullable field {field} was serialized as null"),
                ));
            }
            let remaining = self.b.len() - self.p;
            if len as usize > remaining {
                return Err(exc(
                    RUNTIME,
                    format_args!(
                        "Tried to allocate a collection of size {len}, but there are only {remaining} bytes remaining."
                    ),
                ));
            }
            Ok(len as usize)
        }
    }

    /// Jackson's string quoting.
    fn quote(s: &str) -> String {
        let mut o = String::with_capacity(s.len() + 2);
        o.push('"');
        for c in s.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                '\n' => o.push_str("\\n"),
                '\r' => o.push_str("\\r"),
                '\t' => o.push_str("\\t"),
                '\u{08}' => o.push_str("\\b"),
                '\u{0c}' => o.push_str("\\f"),
                c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04X}", c as u32)),
                c => o.push(c),
            }
        }
        o.push('"');
        o
    }

    pub(super) fn snapshot_header(v: &[u8]) -> Res<String> {
        let mut r = Rd { b: v, p: 0 };
        let version = r.i16()?;
        let ts = r.i64()?;
        r.tagged_fields()?;
        Ok(format!(
            "{{\"version\":{version},\"lastContainedLogTimestamp\":{ts}}}"
        ))
    }

    pub(super) fn snapshot_footer(v: &[u8]) -> Res<String> {
        let mut r = Rd { b: v, p: 0 };
        let version = r.i16()?;
        r.tagged_fields()?;
        Ok(format!("{{\"version\":{version}}}"))
    }

    pub(super) fn kraft_version(v: &[u8]) -> Res<String> {
        let mut r = Rd { b: v, p: 0 };
        let version = r.i16()?;
        let kv = r.i16()?;
        r.tagged_fields()?;
        Ok(format!("{{\"version\":{version},\"kRaftVersion\":{kv}}}"))
    }

    pub(super) fn voters(v: &[u8]) -> Res<String> {
        let mut r = Rd { b: v, p: 0 };
        let version = r.i16()?;
        let n = r.compact_array_len("voters")?;
        let mut voters = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.i32()?;
            let dir = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r.take(16)?);
            let ne = r.compact_array_len("endpoints")?;
            let mut eps = Vec::with_capacity(ne);
            for _ in 0..ne {
                let name = r.compact_string("name")?;
                let host = r.compact_string("host")?;
                let port = r.u16()?;
                r.tagged_fields()?;
                eps.push(format!(
                    "{{\"name\":{},\"host\":{},\"port\":{port}}}",
                    quote(&name),
                    quote(&host)
                ));
            }
            let min = r.i16()?;
            let max = r.i16()?;
            r.tagged_fields()?;
            r.tagged_fields()?;
            voters.push(format!(
                "{{\"voterId\":{id},\"voterDirectoryId\":{},\"endpoints\":[{}],\"kRaftVersionFeature\":{{\"minSupportedVersion\":{min},\"maxSupportedVersion\":{max}}}}}",
                quote(&dir),
                eps.join(",")
            ));
        }
        r.tagged_fields()?;
        Ok(format!(
            "{{\"version\":{version},\"voters\":[{}]}}",
            voters.join(",")
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Index files (`AbstractIndex` opened read-only with maxIndexSize -1)

struct IndexFile {
    r: PosReader,
    len: u64,
    entry_size: usize,
    base: i64,
}

impl IndexFile {
    /// `new OffsetIndex/TimeIndex(file, baseOffset, -1, false)`.
    fn open(path: &str, base: i64, entry_size: usize) -> Res<IndexFile> {
        let f = match File::open(path) {
            Ok(f) => f,
            // Kafka creates the missing file, then refuses the max size of -1 (we do not
            // create it).
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(exc(ILLEGAL_ARGUMENT, "Invalid max index size: -1"));
            }
            Err(e) => return Err(raf_open_exc(path, &e)),
        };
        let meta = f.metadata().map_err(|e| raf_open_exc(path, &e))?;
        if meta.is_dir() {
            return Err(raf_open_exc(path, &io::Error::other("Is a directory")));
        }
        let len = meta.len();
        Ok(IndexFile {
            r: PosReader::new(f, len),
            len,
            entry_size,
            base,
        })
    }

    fn entries(&self) -> i32 {
        (self.len / self.entry_size as u64).min(i32::MAX as u64) as i32
    }

    fn raw(&mut self, n: i32) -> Res<[u8; 12]> {
        let es = self.entry_size;
        let b = self
            .r
            .read(n as u64 * es as u64, es)
            .map_err(|e| read_exc(&e))?;
        if b.len() < es {
            return Err(read_exc(&io::Error::from(io::ErrorKind::UnexpectedEof)));
        }
        let mut out = [0u8; 12];
        out[..es].copy_from_slice(b);
        Ok(out)
    }

    /// Offset index entry n: (offset, position).
    fn offset_entry(&mut self, n: i32) -> Res<(i64, i32)> {
        let b = self.raw(n)?;
        Ok((self.base.wrapping_add(be_i32(&b, 0) as i64), be_i32(&b, 4)))
    }

    /// Time index entry n: (timestamp, offset).
    fn time_entry(&mut self, n: i32) -> Res<(i64, i64)> {
        let b = self.raw(n)?;
        Ok((be_i64(&b, 0), self.base.wrapping_add(be_i32(&b, 8) as i64)))
    }

    /// `OffsetIndex.lookup(target).position` (largest entry <= target, warm-section search).
    fn lookup_position(&mut self, target: i64) -> Res<i32> {
        let entries = self.entries();
        if entries == 0 {
            return Ok(0);
        }
        let warm = (8192 / self.entry_size) as i32;
        let first_hot = (entries - 1 - warm).max(0);
        let slot = if self.offset_entry(first_hot)?.0 < target {
            self.binary_search(target, first_hot, entries - 1)?
        } else if self.offset_entry(0)?.0 > target {
            -1
        } else {
            self.binary_search(target, 0, first_hot)?
        };
        if slot == -1 {
            Ok(0)
        } else {
            Ok(self.offset_entry(slot)?.1)
        }
    }

    fn binary_search(&mut self, target: i64, begin: i32, end: i32) -> Res<i32> {
        let (mut lo, mut hi) = (begin, end);
        while lo < hi {
            let mid = ((lo as u32 + hi as u32 + 1) >> 1) as i32;
            let found = self.offset_entry(mid)?.0;
            if found > target {
                hi = mid - 1;
            } else if found < target {
                lo = mid;
            } else {
                return Ok(mid);
            }
        }
        Ok(lo)
    }
}

// ---------------------------------------------------------------------------------------------
// The tool

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

    // --- .index ---

    fn dump_index(&mut self, file: &str, name: &str) -> Res<()> {
        let start_offset = parse_java_long(first_dot_part(name))?;
        let abs = java_absolute(&self.cwd, file);
        let log_path = java_child(&java_parent(&abs), &format!("{}.log", first_dot_part(name)));
        let mut log = LogRecords::open(&log_path)?;
        let mut index = IndexFile::open(file, start_offset, 8)?;
        let entries = index.entries();
        if entries == 0 {
            self.out.println(format_args!("{file} is empty."));
            return Ok(());
        }
        if self.opts.index_sanity_check {
            let last = index.offset_entry(entries - 1)?.0;
            if last < start_offset {
                return Err(exc(
                    CORRUPT_INDEX,
                    format_args!(
                        "Corrupt index found, index file {abs} has non-zero size but the last offset is {last} which is less than the base offset {start_offset}"
                    ),
                ));
            }
            if index.len % 8 != 0 {
                return Err(exc(
                    CORRUPT_INDEX,
                    format_args!(
                        "Index file {abs} is corrupt, found {} bytes which is neither positive nor a multiple of 8",
                        index.len
                    ),
                ));
            }
            self.out
                .println(format_args!("{file} passed sanity check."));
            return Ok(());
        }
        let max_message_size = self.max_message_size();
        for i in 0..entries {
            let (offset, position) = index.offset_entry(i)?;
            if offset == start_offset && i > 0 {
                return Ok(());
            }
            let slice = log.slice(position, max_message_size)?;
            let mut pos = slice.start;
            let end = log.iteration_end(slice);
            let Some(fb) = log.next_batch(&mut pos, end)? else {
                return Err(bare(NO_SUCH_ELEMENT));
            };
            let first_batch_last_offset = log.last_offset(&fb, slice)?;
            if first_batch_last_offset != offset {
                self.index_mismatches
                    .entry(&abs)
                    .push((offset, first_batch_last_offset));
            }
            if !self.opts.verify_index_only {
                self.out
                    .println(format_args!("offset: {offset} position: {position}"));
            }
        }
        Ok(())
    }

    // --- .timeindex ---

    fn dump_time_index(&mut self, file: &str, name: &str) -> Res<()> {
        let start_offset = parse_java_long(first_dot_part(name))?;
        let abs = java_absolute(&self.cwd, file);
        let parent = java_parent(&abs);
        let log_path = java_child(&parent, &format!("{}.log", first_dot_part(name)));
        let mut log = LogRecords::open(&log_path)?;
        let index_path = java_child(&parent, &format!("{}.index", first_dot_part(name)));
        let mut index = IndexFile::open(&index_path, start_offset, 8)?;
        let mut time_index = IndexFile::open(file, start_offset, 12)?;
        let entries = time_index.entries();
        if self.opts.index_sanity_check {
            if entries != 0 {
                let (last_ts, last_offset) = time_index.time_entry(entries - 1)?;
                let first_ts = time_index.time_entry(0)?.0;
                if last_ts < first_ts {
                    return Err(exc(
                        CORRUPT_INDEX,
                        format_args!(
                            "Corrupt time index found, time index file ({abs}) has non-zero size but the last timestamp is {last_ts} which is less than the first timestamp {first_ts}"
                        ),
                    ));
                }
                if last_offset < start_offset {
                    return Err(exc(
                        CORRUPT_INDEX,
                        format_args!(
                            "Corrupt time index found, time index file ({abs}) has non-zero size but the last offset is {last_offset} which is less than the first offset {start_offset}"
                        ),
                    ));
                }
            }
            if time_index.len % 12 != 0 {
                return Err(exc(
                    CORRUPT_INDEX,
                    format_args!(
                        "Time index file {abs} is corrupt, found {} bytes which is neither positive nor a multiple of 12",
                        time_index.len
                    ),
                ));
            }
            self.out
                .println(format_args!("{file} passed sanity check."));
            return Ok(());
        }
        let mut full = std::mem::take(&mut self.full);
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.time_index_entries(
            &mut log,
            &mut index,
            &mut time_index,
            start_offset,
            &abs,
            &mut full,
            &mut scratch,
        );
        self.full = full;
        self.scratch = scratch;
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn time_index_entries(
        &mut self,
        log: &mut LogRecords,
        index: &mut IndexFile,
        time_index: &mut IndexFile,
        start_offset: i64,
        abs: &str,
        full: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Res<()> {
        let mut prev_timestamp: i64 = -1;
        for i in 0..time_index.entries() {
            let (timestamp, offset) = time_index.time_entry(i)?;
            if offset == start_offset && i > 0 {
                return Ok(());
            }
            let position = index.lookup_position(offset)?;
            let slice = log.slice(position, i32::MAX)?;
            let mut pos = slice.start;
            let end = log.iteration_end(slice);
            let mut found = None;
            while let Some(fb) = log.next_batch(&mut pos, end)? {
                let last = log.last_offset(&fb, slice)?;
                if last >= offset {
                    found = Some((fb, last));
                    break;
                }
            }
            match found {
                None => self.time_not_found.entry(abs).push((offset, -1)),
                Some((_, last)) if last != offset => {
                    self.time_not_found.entry(abs).push((offset, last))
                }
                Some((fb, _)) => {
                    log.load_full(&fb, full)?;
                    let mut max_timestamp: i64 = -1;
                    for_each_record(&fb, full, scratch, &mut |r: &Rec| {
                        max_timestamp = max_timestamp.max(r.timestamp);
                        Ok(())
                    })?;
                    if max_timestamp != timestamp {
                        self.time_mismatches
                            .entry(abs)
                            .push((timestamp, max_timestamp));
                    }
                    if prev_timestamp >= timestamp {
                        self.time_out_of_order
                            .entry(abs)
                            .push((timestamp, prev_timestamp));
                    }
                }
            }
            if !self.opts.verify_index_only {
                self.out
                    .println(format_args!("timestamp: {timestamp} offset: {offset}"));
            }
            prev_timestamp = timestamp;
        }
        Ok(())
    }

    // --- .snapshot (producer state) ---

    fn dump_producer_snapshot(&mut self, file: &str) -> Res<()> {
        let bytes = std::fs::read(file).map_err(|e| nio_open_exc(file, &e))?;
        match read_producer_snapshot(&bytes) {
            Ok(entries) => {
                for e in entries {
                    // The trailing space is Kafka's. JAVA PORT: no trailing space, and
                    // " firstSequence: ..." starts with one (same text when both print).
                    self.out.print(format_args!(
                        "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {} lastTimestamp: {} ",
                        e.producer_id,
                        e.producer_epoch,
                        e.coordinator_epoch,
                        optional_long((e.current_txn_first_offset >= 0).then_some(e.current_txn_first_offset)),
                        e.timestamp,
                    ));
                    if e.last_offset >= 0 {
                        self.out.print(format_args!(
                            "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
                            decrement_sequence(e.last_sequence, e.offset_delta),
                            e.last_sequence,
                            e.last_offset,
                            e.offset_delta,
                            e.timestamp,
                        ));
                    }
                    self.out.println(format_args!(""));
                }
            }
            Err(message) => self.err_line(format_args!("{message}")),
        }
        Ok(())
    }

    // --- .txnindex ---

    fn dump_txn_index(&mut self, file: &str, name: &str) -> Res<()> {
        parse_java_long(first_dot_part(name))?;
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(nio_open_exc(file, &e)),
        };
        let abs = java_absolute(&self.cwd, file);
        let mut lines = Vec::new();
        for entry in bytes.chunks_exact(34) {
            let version = be_i16(entry, 0);
            if version > 0 {
                return Err(exc(
                    KAFKA,
                    format_args!(
                        "Unexpected aborted transaction version {version} in transaction index {abs}, current version is 0"
                    ),
                ));
            }
            lines.push(format!(
                "version: {version} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                be_i64(entry, 2),
                be_i64(entry, 10),
                be_i64(entry, 18),
                be_i64(entry, 26)
            ));
        }
        for l in lines {
            self.out.println(format_args!("{l}"));
        }
        Ok(())
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

/// `Snapshots.parse(path)` for a `.checkpoint` name: (end offset, epoch).
fn parse_snapshot_id(name: &str) -> Res<(i64, i32)> {
    let units: Vec<u16> = name.encode_utf16().collect();
    let sub = |b: usize, e: usize| -> Res<String> {
        if e > units.len() {
            return Err(exc(
                STRING_INDEX,
                format_args!("begin {b}, end {e}, length {}", units.len()),
            ));
        }
        Ok(String::from_utf16_lossy(&units[b..e]))
    };
    let offset = parse_java_long(&sub(0, 20)?)?;
    let epoch = parse_java_int(&sub(21, 31)?)?;
    Ok((offset, epoch))
}

/// A producer-state snapshot entry.
struct ProducerEntry {
    producer_id: i64,
    producer_epoch: i16,
    last_sequence: i32,
    last_offset: i64,
    offset_delta: i32,
    timestamp: i64,
    coordinator_epoch: i32,
    current_txn_first_offset: i64,
}

/// `ProducerStateManager.readSnapshot`; `Err` is the `CorruptSnapshotException` message.
fn read_producer_snapshot(b: &[u8]) -> Result<Vec<ProducerEntry>, String> {
    const UNDERFLOW: &str = "java.nio.BufferUnderflowException";
    let schema = |field: &str, msg: &str| {
        format!("Snapshot failed schema validation: Error reading field '{field}': {msg}")
    };
    if b.len() < 2 {
        return Err(schema("version", UNDERFLOW));
    }
    let version = be_i16(b, 0);
    if b.len() < 6 {
        return Err(schema("crc", UNDERFLOW));
    }
    let crc = be_u32(b, 2);
    if b.len() < 10 {
        return Err(schema("producer_entries", UNDERFLOW));
    }
    let n = be_i32(b, 6);
    if n < 0 {
        return Err(schema(
            "producer_entries",
            &format!("Array size {n} cannot be negative"),
        ));
    }
    let remaining = b.len() - 10;
    if n as usize > remaining {
        return Err(schema(
            "producer_entries",
            &format!("Error reading array of size {n}, only {remaining} bytes available"),
        ));
    }
    const FIELDS: [(&str, usize); 8] = [
        ("producer_id", 8),
        ("epoch", 2),
        ("last_sequence", 4),
        ("last_offset", 8),
        ("offset_delta", 4),
        ("timestamp", 8),
        ("coordinator_epoch", 4),
        ("current_txn_first_offset", 8),
    ];
    let mut entries = Vec::with_capacity(n as usize);
    let mut p = 10;
    for _ in 0..n {
        let mut at = [0usize; 8];
        for (i, (field, width)) in FIELDS.iter().enumerate() {
            if b.len() - p < *width {
                return Err(schema(
                    "producer_entries",
                    &format!("Error reading field '{field}': {UNDERFLOW}"),
                ));
            }
            at[i] = p;
            p += width;
        }
        entries.push(ProducerEntry {
            producer_id: be_i64(b, at[0]),
            producer_epoch: be_i16(b, at[1]),
            last_sequence: be_i32(b, at[2]),
            last_offset: be_i64(b, at[3]),
            offset_delta: be_i32(b, at[4]),
            timestamp: be_i64(b, at[5]),
            coordinator_epoch: be_i32(b, at[6]),
            current_txn_first_offset: be_i64(b, at[7]),
        });
    }
    if version != 1 {
        return Err(format!(
            "Snapshot contained an unknown file version {version}"
        ));
    }
    let computed = crc32c::crc32c(&b[6..]);
    if crc != computed {
        return Err(format!(
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}"
        ));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
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
