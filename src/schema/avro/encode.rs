//! JSON in the shown form to an Avro binary body. A value that does not match fails with
//! the path of the field (`order.items[2].price`) and what was wrong.

use base64::Engine;
use serde_json::Value;

use super::{Avro, MAX_DECIMAL_PRECISION, MAX_DEPTH, Named, Node, nullable};
use crate::schema::text;

/// A mismatch, with the path to it gathered as the error returns.
pub(crate) struct Mismatch {
    path: Vec<String>,
    what: String,
}

impl Mismatch {
    fn new(what: impl Into<String>) -> Mismatch {
        Mismatch {
            path: Vec::new(),
            what: what.into(),
        }
    }

    fn at(mut self, seg: String) -> Mismatch {
        self.path.push(seg);
        self
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut path = String::new();
        for seg in self.path.iter().rev() {
            if !seg.starts_with('[') && !path.is_empty() {
                path.push('.');
            }
            path.push_str(seg);
        }
        if path.is_empty() {
            write!(f, "the value: {}", self.what)
        } else {
            write!(f, "field {path}: {}", self.what)
        }
    }
}

fn long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected(what: &str, v: &Value) -> Mismatch {
    Mismatch::new(format!("expected {what}, got {}", kind(v)))
}

/// Whether the value is a field's default (Avro's default JSON: a union's first branch,
/// bytes as a string of code points 0-255) rather than the shown form.
#[derive(Clone, Copy)]
enum Form {
    Shown,
    Default,
}

impl Avro {
    pub(crate) fn encode(&self, v: &Value, out: &mut Vec<u8>) -> Result<(), Mismatch> {
        self.write(&self.root, v, out, Form::Shown, 0)
    }

    fn write(
        &self,
        node: &Node,
        v: &Value,
        out: &mut Vec<u8>,
        form: Form,
        depth: usize,
    ) -> Result<(), Mismatch> {
        if depth > MAX_DEPTH {
            return Err(Mismatch::new("nested too deeply"));
        }
        match node {
            Node::Null => v
                .is_null()
                .then_some(())
                .ok_or_else(|| expected("null", v))?,
            Node::Boolean => out.push(u8::from(
                v.as_bool().ok_or_else(|| expected("a boolean", v))?,
            )),
            Node::Int => long(
                out,
                int_in(v, i64::from(i32::MIN), i64::from(i32::MAX), "an int")?,
            ),
            Node::Long => long(out, int_in(v, i64::MIN, i64::MAX, "a long")?),
            Node::Float => {
                let f = number(v, "a float")?;
                // Beyond the largest float once rounded to one (the largest float shows as
                // 3.4028235e38, a little more than it).
                if f.is_finite() && !(f as f32).is_finite() {
                    return Err(Mismatch::new(format!("{f} is out of range for a float")));
                }
                out.extend_from_slice(&(f as f32).to_le_bytes());
            }
            Node::Double => out.extend_from_slice(&number(v, "a double")?.to_le_bytes()),
            Node::Bytes => {
                let b = bytes(v, form)?;
                long(out, b.len() as i64);
                out.extend_from_slice(&b);
            }
            Node::String => {
                let s = v.as_str().ok_or_else(|| expected("a string", v))?;
                long(out, s.len() as i64);
                out.extend_from_slice(s.as_bytes());
            }
            Node::Date => long(out, date(v)?),
            Node::TimestampMillis => long(out, timestamp(v, 1_000)?),
            Node::TimestampMicros => long(out, timestamp(v, 1_000_000)?),
            Node::Decimal {
                precision,
                scale,
                fixed,
            } => self.decimal(v, *precision, *scale, *fixed, out, form)?,
            Node::Named(i) => self.named(*i, v, out, form, depth)?,
            Node::Array(items) => {
                let list = v.as_array().ok_or_else(|| expected("an array", v))?;
                if !list.is_empty() {
                    long(out, list.len() as i64);
                    for (n, item) in list.iter().enumerate() {
                        self.write(items, item, out, form, depth + 1)
                            .map_err(|e| e.at(format!("[{n}]")))?;
                    }
                }
                out.push(0);
            }
            Node::Map(values) => {
                let map = v.as_object().ok_or_else(|| expected("an object", v))?;
                if !map.is_empty() {
                    long(out, map.len() as i64);
                    for (k, item) in map {
                        long(out, k.len() as i64);
                        out.extend_from_slice(k.as_bytes());
                        self.write(values, item, out, form, depth + 1)
                            .map_err(|e| e.at(k.clone()))?;
                    }
                }
                out.push(0);
            }
            Node::Union(branches) => self.union(branches, v, out, form, depth)?,
        }
        Ok(())
    }

    fn named(
        &self,
        i: usize,
        v: &Value,
        out: &mut Vec<u8>,
        form: Form,
        depth: usize,
    ) -> Result<(), Mismatch> {
        match &self.named[i] {
            Named::Record { fields, .. } => {
                let obj = v.as_object().ok_or_else(|| expected("an object", v))?;
                if let Some(extra) = obj.keys().find(|k| !fields.iter().any(|f| &f.name == *k)) {
                    return Err(Mismatch::new("not in the schema").at(extra.clone()));
                }
                for f in fields {
                    let res = match (obj.get(&f.name), &f.default) {
                        (Some(fv), _) => self.write(&f.node, fv, out, form, depth + 1),
                        (None, Some(d)) => self.write(&f.node, d, out, Form::Default, depth + 1),
                        (None, None) => Err(Mismatch::new("missing, and it has no default")),
                    };
                    res.map_err(|e| e.at(f.name.clone()))?;
                }
            }
            Named::Enum { symbols, name } => {
                let s = v.as_str().ok_or_else(|| expected("a string", v))?;
                let idx = symbols
                    .iter()
                    .position(|x| x == s)
                    .ok_or_else(|| Mismatch::new(format!("{s:?} is not a symbol of {name}")))?;
                long(out, idx as i64);
            }
            Named::Fixed { size, name } => {
                let b = bytes(v, form)?;
                if b.len() != *size {
                    return Err(Mismatch::new(format!(
                        "{name} holds {size} bytes, not {}",
                        b.len()
                    )));
                }
                out.extend_from_slice(&b);
            }
            Named::Pending(name) => {
                return Err(Mismatch::new(format!("type {name} is not defined")));
            }
        }
        Ok(())
    }

    fn union(
        &self,
        branches: &[Node],
        v: &Value,
        out: &mut Vec<u8>,
        form: Form,
        depth: usize,
    ) -> Result<(), Mismatch> {
        let null = branches.iter().position(|b| matches!(b, Node::Null));
        let (idx, inner, tagged) = match (form, v, nullable(branches)) {
            (Form::Default, _, _) => (0, v, false),
            (_, Value::Null, _) => (
                null.ok_or_else(|| expected("a non-null value", v))?,
                v,
                false,
            ),
            (_, _, Some(t)) => (t, v, false),
            (_, Value::Object(obj), None) if obj.len() == 1 => {
                let (name, inner) = obj.iter().next().expect("one entry");
                let idx = branches
                    .iter()
                    .position(|b| self.branch_name(b) == name)
                    .ok_or_else(|| Mismatch::new(format!("{name:?} is not a type of the union")))?;
                (idx, inner, true)
            }
            _ => {
                let names: Vec<_> = branches.iter().map(|b| self.branch_name(b)).collect();
                return Err(Mismatch::new(format!(
                    "expected null or {{\"type\": value}} with a type of {names:?}, got {}",
                    kind(v)
                )));
            }
        };
        long(out, idx as i64);
        let res = self.write(&branches[idx], inner, out, form, depth + 1);
        if tagged {
            res.map_err(|e| e.at(self.branch_name(&branches[idx]).to_owned()))
        } else {
            res
        }
    }

    fn decimal(
        &self,
        v: &Value,
        precision: u32,
        scale: u32,
        fixed: Option<usize>,
        out: &mut Vec<u8>,
        form: Form,
    ) -> Result<(), Mismatch> {
        let mut b = match (form, v) {
            (Form::Default, Value::String(_)) => {
                return self.write(&fixed.map_or(Node::Bytes, Node::Named), v, out, form, 0);
            }
            (_, Value::String(s)) => unscaled_bytes(s, precision, scale)?,
            (_, Value::Number(n)) => unscaled_bytes(&n.to_string(), precision, scale)?,
            _ => return Err(expected("a decimal string", v)),
        };
        match fixed {
            Some(i) => {
                let size = self.fixed_size_of(i);
                if b.len() > size {
                    return Err(Mismatch::new(format!("decimal does not fit {size} bytes")));
                }
                let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
                b.splice(..0, std::iter::repeat_n(fill, size - b.len()));
            }
            None => long(out, b.len() as i64),
        }
        out.extend_from_slice(&b);
        Ok(())
    }

    fn fixed_size_of(&self, i: usize) -> usize {
        match &self.named[i] {
            Named::Fixed { size, .. } => *size,
            _ => 0,
        }
    }
}

fn int_in(v: &Value, min: i64, max: i64, what: &str) -> Result<i64, Mismatch> {
    match v.as_i64() {
        Some(i) if (min..=max).contains(&i) => Ok(i),
        Some(i) => Err(Mismatch::new(format!("{i} is out of range for {what}"))),
        None if v.is_u64()
            || v.as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() > 9e15) =>
        {
            Err(Mismatch::new(format!("{v} is out of range for {what}")))
        }
        None => Err(expected(what, v)),
    }
}

fn number(v: &Value, what: &str) -> Result<f64, Mismatch> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| expected(what, v)),
        Value::String(s) if s == "NaN" => Ok(f64::NAN),
        Value::String(s) if s == "Infinity" => Ok(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => Err(expected(what, v)),
    }
}

fn bytes(v: &Value, form: Form) -> Result<Vec<u8>, Mismatch> {
    match (form, v) {
        (Form::Default, Value::String(s)) => s
            .chars()
            .map(|c| {
                u8::try_from(u32::from(c)).map_err(|_| Mismatch::new("a default byte above 255"))
            })
            .collect(),
        (_, Value::Object(o)) if o.len() == 1 => {
            let s = o
                .get("base64")
                .and_then(Value::as_str)
                .ok_or_else(|| expected("{\"base64\": ...}", v))?;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| Mismatch::new(format!("not base64: {e}")))
        }
        _ => Err(expected("{\"base64\": ...}", v)),
    }
}

fn date(v: &Value) -> Result<i64, Mismatch> {
    let days = match v {
        Value::String(s) => text::parse_date(s)
            .ok_or_else(|| Mismatch::new(format!("{s:?} is not a date YYYY-MM-DD")))?,
        _ => int_in(v, i64::from(i32::MIN), i64::from(i32::MAX), "a date")?,
    };
    i32::try_from(days)
        .map(i64::from)
        .map_err(|_| Mismatch::new("date out of range"))
}

fn timestamp(v: &Value, unit: i64) -> Result<i64, Mismatch> {
    match v {
        Value::String(s) => text::parse_timestamp(s, unit)
            .ok_or_else(|| Mismatch::new(format!("{s:?} is not an ISO 8601 timestamp"))),
        _ => int_in(v, i64::MIN, i64::MAX, "a timestamp"),
    }
}

/// A decimal string's unscaled value at `scale`, as the shortest two's complement big-endian
/// bytes; refused when it has more fraction digits than the scale keeps or more digits than
/// the precision.
fn unscaled_bytes(s: &str, precision: u32, scale: u32) -> Result<Vec<u8>, Mismatch> {
    let bad = || {
        Mismatch::new(format!(
            "{s:?} is not a decimal of precision {precision}, scale {scale}"
        ))
    };
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    // An exponent (`1e-7`, as JSON numbers print) moves the point.
    let (body, exp) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().map_err(|_| bad())?),
        None => (body, 0),
    };
    let (whole, frac) = body.split_once('.').unwrap_or((body, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
        || exp.unsigned_abs() > u64::from(2 * MAX_DECIMAL_PRECISION) + body.len() as u64
    {
        return Err(bad());
    }
    let (whole, frac) = shift_point(whole, frac, exp);
    let frac = frac.trim_end_matches('0');
    let whole = whole.trim_start_matches('0');
    // Digits of the unscaled value: the whole part, the fraction, zeros up to the scale.
    let pad = (scale as usize).checked_sub(frac.len()).ok_or_else(bad)?;
    let significant = match whole.is_empty() {
        true => frac.trim_start_matches('0').len() + pad,
        false => whole.len() + frac.len() + pad,
    };
    if significant > precision as usize {
        return Err(bad());
    }
    let digits = whole
        .bytes()
        .chain(frac.bytes())
        .chain(std::iter::repeat_n(b'0', pad));
    // The magnitude, base 256, least significant byte first.
    let mut mag: Vec<u8> = Vec::new();
    for d in digits {
        let mut carry = u32::from(d - b'0');
        for b in &mut mag {
            let v = u32::from(*b) * 10 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
        if carry > 0 {
            mag.push(carry as u8);
        }
    }
    while mag.last() == Some(&0) {
        mag.pop();
    }
    mag.reverse();
    if negative && !mag.is_empty() {
        // Two's complement: inverted, plus one.
        for b in &mut mag {
            *b = !*b;
        }
        for b in mag.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
        if mag[0] & 0x80 == 0 {
            mag.insert(0, 0xff);
        }
    } else if mag.first().is_none_or(|b| b & 0x80 != 0) {
        mag.insert(0, 0);
    }
    Ok(mag)
}

/// The whole and fraction digits of `whole.frac` times ten to the `exp`.
fn shift_point(whole: &str, frac: &str, exp: i64) -> (String, String) {
    let digits = format!("{whole}{frac}");
    let point = whole.len() as i64 + exp;
    if point <= 0 {
        let zeros = "0".repeat(point.unsigned_abs() as usize);
        (String::new(), zeros + &digits)
    } else if point as usize >= digits.len() {
        let zeros = "0".repeat(point as usize - digits.len());
        (digits + &zeros, String::new())
    } else {
        let (w, f) = digits.split_at(point as usize);
        (w.to_owned(), f.to_owned())
    }
}
