//! The KRaft control records, as their generated `*JsonConverter` print them.

use super::exception::{BUFFER_UNDERFLOW, RUNTIME, Res, bare, exc};
use crate::record::be::Cursor;
use base64::Engine;

/// `ByteBuffer` reads: past the end is a `BufferUnderflowException`.
struct Rd<'a>(Cursor<'a>);

fn underflow<T>(v: Option<T>) -> Res<T> {
    v.ok_or_else(|| bare(BUFFER_UNDERFLOW))
}

impl<'a> Rd<'a> {
    fn new(b: &'a [u8]) -> Rd<'a> {
        Rd(Cursor::new(b))
    }
    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        underflow(self.0.take(n))
    }
    fn i16(&mut self) -> Res<i16> {
        underflow(self.0.i16())
    }
    fn u16(&mut self) -> Res<u16> {
        underflow(self.0.u16())
    }
    fn i32(&mut self) -> Res<i32> {
        underflow(self.0.i32())
    }
    fn i64(&mut self) -> Res<i64> {
        underflow(self.0.i64())
    }
    fn uvarint(&mut self) -> Res<u32> {
        underflow(self.0.uvarint())?.map_err(|v| {
            exc(
                "java.lang.IllegalArgumentException",
                format_args!(
                    "Varint is too long, the most significant bit in the 5th byte is set, converted value: {v:x}"
                ),
            )
        })
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
        let remaining = self.0.remaining();
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
    let mut r = Rd::new(v);
    let version = r.i16()?;
    let ts = r.i64()?;
    r.tagged_fields()?;
    Ok(format!(
        "{{\"version\":{version},\"lastContainedLogTimestamp\":{ts}}}"
    ))
}

pub(super) fn snapshot_footer(v: &[u8]) -> Res<String> {
    let mut r = Rd::new(v);
    let version = r.i16()?;
    r.tagged_fields()?;
    Ok(format!("{{\"version\":{version}}}"))
}

pub(super) fn kraft_version(v: &[u8]) -> Res<String> {
    let mut r = Rd::new(v);
    let version = r.i16()?;
    let kv = r.i16()?;
    r.tagged_fields()?;
    Ok(format!("{{\"version\":{version},\"kRaftVersion\":{kv}}}"))
}

pub(super) fn voters(v: &[u8]) -> Res<String> {
    let mut r = Rd::new(v);
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
