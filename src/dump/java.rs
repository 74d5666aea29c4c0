//! Java / Scala helpers: paths, numbers, strings, hash map order.

use super::exception::{NUMBER_FORMAT, Res, exc};

/// `java.io.File` normalisation: repeated '/' collapsed, trailing '/' dropped.
pub(super) fn java_normalize(p: &str) -> String {
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
pub(super) fn file_name(p: &str) -> &str {
    match p.rfind('/') {
        Some(i) => &p[i + 1..],
        None => p,
    }
}

/// `File.getAbsolutePath()` of a normalised path.
pub(super) fn java_absolute(cwd: &str, p: &str) -> String {
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
pub(super) fn java_parent(abs: &str) -> String {
    match abs.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => abs[..i].to_string(),
    }
}

/// `new File(parent, child)` for an absolute parent.
pub(super) fn java_child(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

pub(super) fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `String.hashCode()`.
pub(super) fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// `Long.parseLong(s)`.
pub(super) fn parse_java_long(s: &str) -> Res<i64> {
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
pub(super) fn parse_java_int(s: &str) -> Res<i32> {
    let v = parse_java_long(s)
        .map_err(|_| exc(NUMBER_FORMAT, format_args!("For input string: \"{s}\"")))?;
    i32::try_from(v).map_err(|_| exc(NUMBER_FORMAT, format_args!("For input string: \"{s}\"")))
}

/// `name.split("\\.")(0)`: the text before the first '.'.
pub(super) fn first_dot_part(name: &str) -> &str {
    match name.find('.') {
        Some(i) => &name[..i],
        None => name,
    }
}

/// Java's `new String(bytes, UTF_8)` (malformed input replaced by U+FFFD).
pub(super) fn java_utf8(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// `OptionalLong.toString()`.
pub(super) fn optional_long(v: Option<i64>) -> String {
    match v {
        Some(v) => format!("OptionalLong[{v}]"),
        None => "OptionalLong.empty".to_string(),
    }
}

/// `DefaultRecordBatch.incrementSequence` with Java int arithmetic.
pub(super) fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment
            .wrapping_sub(i32::MAX.wrapping_sub(sequence))
            .wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// `DefaultRecordBatch.decrementSequence` with Java int arithmetic.
pub(super) fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
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
pub(super) struct ScalaMap<V> {
    entries: Vec<(String, V)>,
}

impl<V: Default> ScalaMap<V> {
    pub(super) fn new() -> Self {
        ScalaMap {
            entries: Vec::new(),
        }
    }

    pub(super) fn entry(&mut self, key: &str) -> &mut V {
        let i = match self.entries.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.entries.push((key.to_string(), V::default()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[i].1
    }

    pub(super) fn in_iteration_order(&self) -> Vec<&(String, V)> {
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
