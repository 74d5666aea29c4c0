//! Avro binary bodies straight to compact JSON text, checking every length and count
//! against the bytes left before using it.

use super::{Avro, MAX_DEPTH, Named, Node, nullable};
use crate::schema::text;

/// How many items of a type that takes no bytes (null, an empty record) one value may hold.
const MAX_EMPTY_ITEMS: u64 = 1 << 16;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    empty_items: u64,
    /// Values read so far, and how many the body may hold: a few per byte, and as many as
    /// the items that take no bytes (records of records that take none would otherwise show
    /// an exponential tree for a body of no bytes).
    values: u64,
    max_values: u64,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn long(&mut self) -> Result<i64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let &b = self.buf.get(self.pos).ok_or_else(|| self.truncated())?;
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(format!("varint too long at byte {}", self.pos - 1));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
            }
        }
        Err(format!("varint too long at byte {}", self.pos))
    }

    fn int(&mut self) -> Result<i32, String> {
        let at = self.pos;
        let v = self.long()?;
        i32::try_from(v).map_err(|_| format!("int out of range at byte {at}"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!(
                "length {n} at byte {} is more than the {} bytes left",
                self.pos,
                self.left()
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A length prefix, refused when it claims more than the bytes left.
    fn len(&mut self) -> Result<usize, String> {
        let at = self.pos;
        let n = self.long()?;
        let n = usize::try_from(n).map_err(|_| format!("negative length at byte {at}"))?;
        if n > self.left() {
            return Err(format!(
                "length {n} at byte {at} is more than the {} bytes left",
                self.left()
            ));
        }
        Ok(n)
    }

    fn truncated(&self) -> String {
        format!("truncated at byte {}", self.pos)
    }
}

impl Avro {
    /// Decodes one body (all of `buf`) and appends its JSON text to `out`.
    pub(crate) fn decode(&self, buf: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut r = Reader {
            buf,
            pos: 0,
            empty_items: 0,
            values: 0,
            max_values: 2 * MAX_EMPTY_ITEMS + 4 * buf.len() as u64,
        };
        self.value(&self.root, &mut r, out, 0)?;
        if r.pos != buf.len() {
            return Err(format!("{} bytes after the value", buf.len() - r.pos));
        }
        Ok(())
    }

    fn value(
        &self,
        node: &Node,
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        r.values += 1;
        if r.values > r.max_values {
            return Err(format!(
                "more than {} values in {} bytes",
                r.max_values,
                r.buf.len()
            ));
        }
        match node {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Boolean => match r.take(1)?[0] {
                0 => out.extend_from_slice(b"false"),
                1 => out.extend_from_slice(b"true"),
                b => return Err(format!("boolean byte {b} at byte {}", r.pos - 1)),
            },
            Node::Int => text::int(out, i64::from(r.int()?)),
            Node::Long => text::int(out, r.long()?),
            Node::Float => {
                let b = r.take(4)?;
                text::float(out, f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            }
            Node::Double => {
                let b: [u8; 8] = r.take(8)?.try_into().map_err(|_| r.truncated())?;
                text::double(out, f64::from_le_bytes(b));
            }
            Node::Bytes => {
                let n = r.len()?;
                text::base64(out, r.take(n)?);
            }
            Node::String => {
                let n = r.len()?;
                let at = r.pos;
                let s = std::str::from_utf8(r.take(n)?)
                    .map_err(|_| format!("string at byte {at} is not UTF-8"))?;
                text::string(out, s);
            }
            Node::Date => text::date(out, i64::from(r.int()?))?,
            Node::TimestampMillis => text::timestamp(out, r.long()?, 1_000, 3)?,
            Node::TimestampMicros => text::timestamp(out, r.long()?, 1_000_000, 6)?,
            Node::Decimal { scale, fixed, .. } => {
                let n = match fixed {
                    Some(i) => self.fixed_size(*i),
                    None => r.len()?,
                };
                decimal(out, r.take(n)?, *scale)?;
            }
            Node::Named(i) => self.read_named(*i, r, out, depth)?,
            Node::Array(items) | Node::Map(items) => {
                if depth >= MAX_DEPTH {
                    return Err("values nested too deeply".into());
                }
                self.blocks(node, items, r, out, depth + 1)?;
            }
            Node::Union(branches) => self.read_union(branches, r, out, depth)?,
        }
        Ok(())
    }

    fn fixed_size(&self, i: usize) -> usize {
        match &self.named[i] {
            Named::Fixed { size, .. } => *size,
            _ => 0,
        }
    }

    fn read_named(
        &self,
        i: usize,
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        match &self.named[i] {
            Named::Record { fields, .. } => {
                if depth >= MAX_DEPTH {
                    return Err("values nested too deeply".into());
                }
                out.push(b'{');
                for (n, f) in fields.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    text::string(out, &f.name);
                    out.push(b':');
                    self.value(&f.node, r, out, depth + 1)?;
                }
                out.push(b'}');
            }
            Named::Enum { symbols, .. } => {
                let at = r.pos;
                let idx = r.long()?;
                let s = usize::try_from(idx)
                    .ok()
                    .and_then(|i| symbols.get(i))
                    .ok_or_else(|| format!("enum index {idx} at byte {at} out of range"))?;
                text::string(out, s);
            }
            Named::Fixed { size, .. } => text::base64(out, r.take(*size)?),
            Named::Pending(name) => return Err(format!("type {name} is not defined")),
        }
        Ok(())
    }

    fn read_union(
        &self,
        branches: &[Node],
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        let at = r.pos;
        let idx = r.long()?;
        let branch = usize::try_from(idx)
            .ok()
            .and_then(|i| branches.get(i))
            .ok_or_else(|| format!("union branch {idx} at byte {at} out of range"))?;
        if matches!(branch, Node::Null) || nullable(branches).is_some() {
            return self.value(branch, r, out, depth);
        }
        if depth >= MAX_DEPTH {
            return Err("values nested too deeply".into());
        }
        out.push(b'{');
        text::string(out, self.branch_name(branch));
        out.push(b':');
        self.value(branch, r, out, depth + 1)?;
        out.push(b'}');
        Ok(())
    }

    /// An array's or a map's blocks: a count (negative: followed by the block's byte size),
    /// the items, until a count of 0.
    fn blocks(
        &self,
        node: &Node,
        items: &Node,
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        let map = matches!(node, Node::Map(_));
        out.push(if map { b'{' } else { b'[' });
        let empty = self.can_be_empty(items);
        let mut first = true;
        loop {
            let at = r.pos;
            let mut count = r.long()?;
            if count == 0 {
                break;
            }
            if count < 0 {
                count = count.checked_neg().ok_or("block count out of range")?;
                r.len()?;
            }
            let count = count.unsigned_abs();
            if empty {
                r.empty_items += count;
                if r.empty_items > MAX_EMPTY_ITEMS {
                    return Err(format!("count {count} at byte {at}: too many empty items"));
                }
            } else if count > r.left() as u64 {
                return Err(format!(
                    "count {count} at byte {at} is more than the {} bytes left",
                    r.left()
                ));
            }
            for _ in 0..count {
                if !first {
                    out.push(b',');
                }
                first = false;
                if map {
                    let n = r.len()?;
                    let at = r.pos;
                    let key = std::str::from_utf8(r.take(n)?)
                        .map_err(|_| format!("map key at byte {at} is not UTF-8"))?;
                    text::string(out, key);
                    out.push(b':');
                }
                self.value(items, r, out, depth)?;
            }
        }
        out.push(if map { b'}' } else { b']' });
        Ok(())
    }
}

/// A decimal's two's-complement big-endian unscaled value, shown with `scale` digits after
/// the point.
fn decimal(out: &mut Vec<u8>, bytes: &[u8], scale: u32) -> Result<(), String> {
    let (negative, digits) = unscaled_digits(bytes)?;
    let scale = scale as usize;
    let mut s = String::with_capacity(digits.len() + scale + 3);
    if negative {
        s.push('-');
    }
    if digits.len() > scale {
        s.push_str(&digits[..digits.len() - scale]);
    } else {
        s.push('0');
    }
    if scale > 0 {
        s.push('.');
        for _ in digits.len()..scale {
            s.push('0');
        }
        s.push_str(&digits[digits.len().saturating_sub(scale)..]);
    }
    text::string(out, &s);
    Ok(())
}

/// The sign and decimal digits of a two's-complement big-endian integer.
fn unscaled_digits(bytes: &[u8]) -> Result<(bool, String), String> {
    // (A value of MAX_DECIMAL_PRECISION digits takes 416 bytes.)
    if bytes.len() > 512 {
        return Err(format!("decimal of {} bytes is too long", bytes.len()));
    }
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    // The magnitude, base 256 big-endian.
    let mut mag: Vec<u8> = if negative {
        let mut m: Vec<u8> = bytes.iter().map(|b| !b).collect();
        for b in m.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
        m
    } else {
        bytes.to_vec()
    };
    let mut digits = Vec::new();
    while mag.iter().any(|&b| b != 0) {
        let mut rem = 0u32;
        for b in &mut mag {
            let cur = rem * 256 + u32::from(*b);
            *b = (cur / 10) as u8;
            rem = cur % 10;
        }
        digits.push(b'0' + rem as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    Ok((negative, String::from_utf8(digits).unwrap_or_default()))
}
