//! JSON text written straight into a byte buffer (strings, numbers, base64) and the calendar
//! arithmetic of the shown dates and timestamps.

use base64::Engine;

/// Appends `s` as a JSON string.
pub(super) fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

pub(super) fn int(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// A double as JSON: the shortest text that reads back the same; NaN and the infinities,
/// which JSON has no number for, as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
pub(super) fn double(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
    } else {
        out.extend_from_slice(non_finite(v).as_bytes());
    }
}

/// A float as JSON: the shortest text that reads back the same float.
pub(super) fn float(out: &mut Vec<u8>, v: f32) {
    if v.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
    } else {
        out.extend_from_slice(non_finite(f64::from(v)).as_bytes());
    }
}

fn non_finite(v: f64) -> &'static str {
    if v.is_nan() {
        "\"NaN\""
    } else if v > 0.0 {
        "\"Infinity\""
    } else {
        "\"-Infinity\""
    }
}

/// `{"base64":"..."}`.
pub(super) fn base64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"{\"base64\":\"");
    let start = out.len();
    out.resize(start + bytes.len().div_ceil(3) * 4, 0);
    let n = base64::engine::general_purpose::STANDARD
        .encode_slice(bytes, &mut out[start..])
        .unwrap_or(0);
    out.truncate(start + n);
    out.extend_from_slice(b"\"}");
}

/// The civil date of a day count since 1970-01-01 (proleptic Gregorian).
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The day count since 1970-01-01 of a civil date.
pub(super) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `"YYYY-MM-DD"`, for years 1 to 9999 (what ISO 8601's basic form and Python can show).
pub(super) fn date(out: &mut Vec<u8>, days: i64) -> Result<(), String> {
    let (y, m, d) = civil_from_days(days);
    if !(1..=9999).contains(&y) {
        return Err(format!("date {days} is outside years 1-9999"));
    }
    out.push(b'"');
    ymd(out, y, m, d);
    out.push(b'"');
    Ok(())
}

/// An instant as ISO 8601 UTC with `digits` (3 or 6) fraction digits, from a count of
/// `1/unit` seconds since the epoch.
pub(super) fn timestamp(
    out: &mut Vec<u8>,
    count: i64,
    unit: i64,
    digits: usize,
) -> Result<(), String> {
    let secs = count.div_euclid(unit);
    let frac = count.rem_euclid(unit);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    if !(1..=9999).contains(&y) {
        return Err(format!("timestamp {count} is outside years 1-9999"));
    }
    out.push(b'"');
    ymd(out, y, mo, d);
    out.push(b'T');
    digits_of(out, sod / 3600, 2);
    out.push(b':');
    digits_of(out, sod / 60 % 60, 2);
    out.push(b':');
    digits_of(out, sod % 60, 2);
    out.push(b'.');
    digits_of(out, frac, digits);
    out.extend_from_slice(b"Z\"");
    Ok(())
}

/// `YYYY-MM-DD` of a year 1-9999.
fn ymd(out: &mut Vec<u8>, y: i64, m: u32, d: u32) {
    digits_of(out, y, 4);
    out.push(b'-');
    digits_of(out, i64::from(m), 2);
    out.push(b'-');
    digits_of(out, i64::from(d), 2);
}

/// A non-negative number as exactly `n` digits (zero-padded; `v` has no more than `n`).
fn digits_of(out: &mut Vec<u8>, mut v: i64, n: usize) {
    let start = out.len();
    out.resize(start + n, b'0');
    for slot in out[start..].iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Parses `YYYY-MM-DD` into days since the epoch.
pub(super) fn parse_date(s: &str) -> Option<i64> {
    let d: jiff::civil::Date = s.parse().ok()?;
    Some(days_from_civil(
        i64::from(d.year()),
        d.month() as u32,
        d.day() as u32,
    ))
}

/// Parses an RFC 3339 instant into `1/unit` seconds since the epoch (rounded down). Its
/// civil time and offset are read apart: an instant of 9999-12-31 in UTC is past what
/// `jiff::Timestamp` holds, yet shown (and taken back) as Python shows it.
pub(super) fn parse_timestamp(s: &str, unit: i64) -> Option<i64> {
    let pieces = jiff::fmt::temporal::Pieces::parse(s).ok()?;
    let offset = pieces.offset()?.to_numeric_offset();
    let (d, t) = (pieces.date(), pieces.time()?);
    let days = days_from_civil(i64::from(d.year()), d.month() as u32, d.day() as u32);
    let secs = days * 86_400
        + i64::from(t.hour()) * 3_600
        + i64::from(t.minute()) * 60
        + i64::from(t.second())
        - i64::from(offset.seconds());
    let nanos = i128::from(secs) * 1_000_000_000 + i128::from(t.subsec_nanosecond());
    let per = i128::from(1_000_000_000 / unit);
    i64::try_from(nanos.div_euclid(per)).ok()
}
