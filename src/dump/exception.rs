//! Java exceptions: the `toString()` text of what Kafka's code would throw.

use std::fmt;
use std::io;

/// A Java exception escaping `main`, as its `toString()` prints: `class: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct JavaException(pub(super) String);

pub(super) type Res<T> = Result<T, JavaException>;

const INVALID_RECORD: &str = "org.apache.kafka.common.InvalidRecordException";
pub(super) const CORRUPT_RECORD: &str = "org.apache.kafka.common.errors.CorruptRecordException";
pub(super) const KAFKA: &str = "org.apache.kafka.common.KafkaException";
pub(super) const CORRUPT_INDEX: &str =
    "org.apache.kafka.storage.internals.log.CorruptIndexException";
pub(super) const ILLEGAL_ARGUMENT: &str = "java.lang.IllegalArgumentException";
pub(super) const NUMBER_FORMAT: &str = "java.lang.NumberFormatException";
pub(super) const STRING_INDEX: &str = "java.lang.StringIndexOutOfBoundsException";
const INDEX_OOB: &str = "java.lang.IndexOutOfBoundsException";
pub(super) const NO_SUCH_ELEMENT: &str = "java.util.NoSuchElementException";
pub(super) const NULL_POINTER: &str = "java.lang.NullPointerException";
pub(super) const BUFFER_UNDERFLOW: &str = "java.nio.BufferUnderflowException";
pub(super) const RUNTIME: &str = "java.lang.RuntimeException";

pub(super) fn exc(class: &str, msg: impl fmt::Display) -> JavaException {
    JavaException(format!("{class}: {msg}"))
}

pub(super) fn bare(class: &str) -> JavaException {
    JavaException(class.to_string())
}

pub(super) fn invalid_record(msg: impl fmt::Display) -> JavaException {
    exc(INVALID_RECORD, msg)
}

/// `FileChannel.open` / `Files.readAllBytes` failures.
pub(super) fn nio_open_exc(path: &str, e: &io::Error) -> JavaException {
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
pub(super) fn raf_open_exc(path: &str, e: &io::Error) -> JavaException {
    exc(
        "java.io.FileNotFoundException",
        format_args!("{path} ({})", os_reason(e)),
    )
}

/// A read failure after opening (Kafka wraps the IOException in a KafkaException).
pub(super) fn read_exc(e: &io::Error) -> JavaException {
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
pub(super) fn index_oob(index: usize, limit: usize, width: usize) -> JavaException {
    let len = limit as i64 - width as i64 + 1;
    exc(
        INDEX_OOB,
        format_args!("Index {index} out of bounds for length {}", len.max(0)),
    )
}

/// What `GZIPInputStream`'s constructor would throw for this stream, if anything.
pub(super) fn gzip_header_error(data: &[u8]) -> Option<JavaException> {
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
