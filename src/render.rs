//! How records are shown to a reader and taken from a writer: lines (the value), JSON lines
//! (`crate::jsonl`), `key<separator>value` lines; the rendering of one record into a
//! reader's buffer.

use crate::jsonl;
use crate::record::{BatchHeader, Record};
use crate::schemas::Schemas;

/// How records are written to an append file or shown by a lookup file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One record per line: the line is the value (`append`, `by-offset/<N>`).
    Lines,
    /// One JSON object per line (`append.jsonl`, `by-offset/<N>.jsonl`), see `crate::jsonl`.
    Jsonl,
    /// `key<separator>value` lines (`append.kv`), as kafka-console-producer's
    /// `parse.key=true` reads them. An append format only: no lookup name ends in `.kv`.
    Kv,
}

impl Format {
    /// The suffix of the file names in this format.
    pub fn suffix(self) -> &'static str {
        match self {
            Format::Lines => "",
            Format::Jsonl => ".jsonl",
            Format::Kv => ".kv",
        }
    }
}

/// One record as a stream shows it: `value\n`, or a JSON line naming its place. With
/// `schemas` (a topic whose keys and values are decoded), a value in the wire format with a
/// known id shows as its JSON.
pub fn format_record(
    format: Format,
    topic: &str,
    partition: u32,
    h: &BatchHeader,
    r: &Record<'_>,
    out: &mut Vec<u8>,
    schemas: Option<&Schemas>,
) {
    match format {
        // No stream is opened as `.kv` (an append format): its records show as lines.
        Format::Lines | Format::Kv => {
            show_value(schemas, topic, r.value.unwrap_or_default(), out);
            out.push(b'\n');
        }
        Format::Jsonl => {
            jsonl::format_record(topic, partition, r, h.timestamp_type(), out, schemas)
        }
    }
}

/// Appends what `value` shows as: its JSON when `schemas` decode it, else the bytes.
/// Returns the schema id of a decoded value.
pub fn show_value(
    schemas: Option<&Schemas>,
    topic: &str,
    value: &[u8],
    out: &mut Vec<u8>,
) -> Option<u32> {
    let id = schemas.and_then(|s| s.show(topic, value, out));
    if id.is_none() {
        out.extend_from_slice(value);
    }
    id
}

/// Drops the consumed front of a stream's buffer once it is half the buffer (moving the
/// unread tail on every refill copied the data a second time).
pub fn compact(out: &mut Vec<u8>, out_pos: &mut usize) {
    if *out_pos > 0 && *out_pos * 2 >= out.len() {
        out.drain(..*out_pos);
        *out_pos = 0;
    }
}
