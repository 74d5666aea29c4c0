//! JSON Lines records: what `append.jsonl` accepts and what `by-offset/N.jsonl` shows.
//!
//! Bytes that are valid UTF-8 are JSON strings; any other bytes are `{"base64": "..."}`
//! (standard alphabet, padded). A string is always literal text, so the two never collide.
//! Input: `{"key": .., "value": .., "headers": {"k": v, ..} or [["k", v], ..], "timestamp": ms}`,
//! every field optional (missing key/value = null). Output starts with `topic` and
//! `partition`, adds `offset` and `timestampType`, and always writes headers as an array of
//! pairs (it keeps order and repeated keys).

use base64::Engine;
use serde_json::{Map, Value};

use crate::record::{Record, RecordInput, TimestampType};
use crate::schemas::Schemas;

/// Owned header (key, value) pairs.
pub type Headers = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// One record parsed from a JSON line, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JsonRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Headers,
    pub timestamp: Option<i64>,
}

/// What a key (`true`) or value given as JSON (any but null and `{"base64": ...}`) is stored
/// as: `Ok(Some(bytes))` when its topic's subject encodes it, `Ok(None)` when the topic has
/// no subject (a string is then stored as its text), `Err(reason)` when it does not match.
pub type Encode<'a> = dyn FnMut(bool, &Value) -> Result<Option<Vec<u8>>, String> + 'a;

fn bytes_field(
    name: &str,
    v: &Value,
    encode: Option<(&mut Encode<'_>, bool)>,
) -> Result<Option<Vec<u8>>, String> {
    let is_base64 = matches!(v, Value::Object(m) if m.len() == 1 && m.contains_key("base64"));
    if let Some((encode, key)) = encode
        && !v.is_null()
        && !is_base64
        && let Some(bytes) = encode(key, v).map_err(|e| format!("{name}: {e}"))?
    {
        return Ok(Some(bytes));
    }
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.as_bytes().to_vec())),
        Value::Object(m) if m.len() == 1 && m.contains_key("base64") => match &m["base64"] {
            Value::String(b) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map(Some)
                .map_err(|e| format!("{name}: invalid base64: {e}")),
            _ => Err(format!("{name}: \"base64\" must be a string")),
        },
        _ => Err(format!(
            "{name}: expected a string, null or {{\"base64\": \"...\"}}"
        )),
    }
}

/// Parses one line (without its newline).
pub fn parse_line(line: &[u8]) -> Result<JsonRecord, String> {
    parse_line_with(line, None)
}

/// [`parse_line`], with the key and value given as JSON stored as `encode` says (a topic
/// with schemas).
pub fn parse_line_with(
    line: &[u8],
    mut encode: Option<&mut Encode<'_>>,
) -> Result<JsonRecord, String> {
    let v: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(obj) = v else {
        return Err("expected a JSON object".into());
    };
    let mut r = JsonRecord::default();
    for (k, v) in &obj {
        match k.as_str() {
            "key" => r.key = bytes_field("key", v, encode.as_deref_mut().map(|e| (e, true)))?,
            "value" => {
                r.value = bytes_field("value", v, encode.as_deref_mut().map(|e| (e, false)))?
            }
            "timestamp" => {
                r.timestamp = match v {
                    Value::Null => None,
                    Value::Number(n) => Some(
                        n.as_i64()
                            .ok_or("timestamp: expected an integer number of ms")?,
                    ),
                    _ => return Err("timestamp: expected an integer number of ms".into()),
                }
            }
            "headers" => r.headers = parse_headers(v)?,
            // What `format_record` writes besides: output can be fed back.
            "topic" | "partition" | "offset" | "timestampType" | "keySchemaId"
            | "valueSchemaId" => {}
            other => return Err(format!("unknown field {other:?}")),
        }
    }
    Ok(r)
}

fn parse_headers(v: &Value) -> Result<Headers, String> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| Ok((k.as_bytes().to_vec(), bytes_field("header value", v, None)?)))
            .collect(),
        Value::Array(a) => a
            .iter()
            .map(|pair| match pair {
                Value::Array(kv) if kv.len() == 2 => match &kv[0] {
                    Value::String(k) => Ok((
                        k.as_bytes().to_vec(),
                        bytes_field("header value", &kv[1], None)?,
                    )),
                    _ => Err("header key must be a string".to_string()),
                },
                _ => Err("headers: expected [key, value] pairs".to_string()),
            })
            .collect(),
        _ => Err("headers: expected an object or an array of [key, value] pairs".into()),
    }
}

impl JsonRecord {
    /// Borrowed form for the encoder; `headers` must outlive it.
    pub fn headers_ref(&self) -> Vec<(&[u8], Option<&[u8]>)> {
        self.headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect()
    }

    pub fn as_input<'a>(
        &'a self,
        headers: &'a [(&'a [u8], Option<&'a [u8]>)],
        now: i64,
    ) -> RecordInput<'a> {
        RecordInput {
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            headers,
            timestamp: self.timestamp.unwrap_or(now),
        }
    }
}

fn bytes_value(b: Option<&[u8]>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => Value::String(s.to_string()),
            Err(_) => {
                let mut m = Map::new();
                m.insert(
                    "base64".into(),
                    Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
                );
                Value::Object(m)
            }
        },
    }
}

/// A key or value as a JSON line shows it: the JSON of a schema-encoded one that `schemas`
/// decode (with its schema id), else [`bytes_value`].
fn shown_value(
    schemas: Option<&Schemas>,
    topic: &str,
    b: Option<&[u8]>,
    scratch: &mut Vec<u8>,
) -> (Value, Option<u32>) {
    if let (Some(s), Some(b)) = (schemas, b) {
        scratch.clear();
        if let Some(id) = s.show(topic, b, scratch)
            && let Ok(v) = serde_json::from_slice(scratch)
        {
            return (v, Some(id));
        }
    }
    (bytes_value(b), None)
}

/// Appends one record of `topic`'s `partition` as a JSON line (with its newline) to `out`:
/// where it is (`topic`, `partition`, `offset`) first, then what it holds. A key or value
/// that `schemas` decode is its JSON, and `keySchemaId`/`valueSchemaId` end the line.
pub fn format_record(
    topic: &str,
    partition: u32,
    r: &Record<'_>,
    ts_type: TimestampType,
    out: &mut Vec<u8>,
    schemas: Option<&Schemas>,
) {
    let mut m = Map::new();
    m.insert("topic".into(), topic.into());
    m.insert("partition".into(), partition.into());
    m.insert("offset".into(), r.offset.into());
    m.insert("timestamp".into(), r.timestamp.into());
    m.insert("timestampType".into(), ts_type.name().into());
    let mut scratch = Vec::new();
    let (key, key_id) = shown_value(schemas, topic, r.key, &mut scratch);
    let (value, value_id) = shown_value(schemas, topic, r.value, &mut scratch);
    m.insert("key".into(), key);
    m.insert("value".into(), value);
    let headers: Vec<Value> = r
        .headers()
        .into_iter()
        .map(|(k, v)| Value::Array(vec![bytes_value(Some(k)), bytes_value(v)]))
        .collect();
    m.insert("headers".into(), Value::Array(headers));
    if let Some(id) = key_id {
        m.insert("keySchemaId".into(), id.into());
    }
    if let Some(id) = value_id {
        m.insert("valueSchemaId".into(), id.into());
    }
    serde_json::to_writer(&mut *out, &Value::Object(m)).expect("writing to a Vec");
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BatchBuilder, BatchOptions, BatchView};

    #[test]
    fn parses_every_form_and_refuses_bad_lines() {
        let r = parse_line(
            br#"{"key":"k","value":{"base64":"AP8K"},"headers":{"h":"x","n":null},"timestamp":5}"#,
        )
        .unwrap();
        assert_eq!(r.key.as_deref(), Some(&b"k"[..]));
        assert_eq!(r.value.as_deref(), Some(&[0u8, 0xff, b'\n'][..]));
        assert_eq!(
            r.headers,
            vec![(b"h".to_vec(), Some(b"x".to_vec())), (b"n".to_vec(), None)]
        );
        assert_eq!(r.timestamp, Some(5));
        let r = parse_line(br#"{"headers":[["a","1"],["a","2"]]}"#).unwrap();
        assert_eq!(r.value, None);
        assert_eq!(r.headers.len(), 2);
        for bad in [
            &br#"{"value":1}"#[..],
            b"[1]",
            b"{",
            br#"{"timestamp":"x"}"#,
            br#"{"bogus":1}"#,
            br#"{"value":{"base64":"!!"}}"#,
        ] {
            assert!(parse_line(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn json_keys_and_values_go_through_the_encoder_base64_and_null_do_not() {
        let mut seen = Vec::new();
        let mut enc = |key: bool, v: &Value| -> Result<Option<Vec<u8>>, String> {
            seen.push((key, v.to_string()));
            match v {
                Value::Object(m) if m.contains_key("bad") => Err("field bad: no".into()),
                Value::String(s) if s == "plain" => Ok(None),
                _ => Ok(Some(format!("enc:{v}").into_bytes())),
            }
        };
        let r = parse_line_with(
            br#"{"key":{"id":1},"value":{"n":2},"headers":{"h":"x"}}"#,
            Some(&mut enc),
        )
        .unwrap();
        assert_eq!(r.key.as_deref(), Some(&br#"enc:{"id":1}"#[..]));
        assert_eq!(r.value.as_deref(), Some(&br#"enc:{"n":2}"#[..]));
        assert_eq!(r.headers, vec![(b"h".to_vec(), Some(b"x".to_vec()))]);
        // Raw bytes and tombstones are stored as they are; a string the encoder leaves is
        // its text.
        let r = parse_line_with(
            br#"{"key":"plain","value":{"base64":"AAE="}}"#,
            Some(&mut enc),
        )
        .unwrap();
        assert_eq!(r.key.as_deref(), Some(&b"plain"[..]));
        assert_eq!(r.value.as_deref(), Some(&[0u8, 1][..]));
        let r = parse_line_with(br#"{"value":null}"#, Some(&mut enc)).unwrap();
        assert_eq!(r.value, None);
        // A value that does not match: the field is named.
        let e = parse_line_with(br#"{"value":{"bad":1}}"#, Some(&mut enc)).unwrap_err();
        assert!(e.starts_with("value: field bad"), "{e}");
        assert_eq!(
            seen,
            vec![
                (true, r#"{"id":1}"#.to_string()),
                (false, r#"{"n":2}"#.to_string()),
                (true, r#""plain""#.to_string()),
                (false, r#"{"bad":1}"#.to_string()),
            ]
        );
    }

    /// The JSON line `format_record` prints for `r`, stored at offset `offset` of `t`-0.
    fn line_of(offset: i64, r: &RecordInput<'_>) -> Vec<u8> {
        let mut b = BatchBuilder::new();
        b.begin(offset, BatchOptions::default());
        b.add(r);
        let bytes = b.finish().unwrap().to_vec();
        let v = BatchView::new(&bytes).unwrap();
        let mut s = Vec::new();
        let rec = v.records(&mut s).unwrap().next().unwrap().unwrap();
        let mut out = Vec::new();
        format_record("t", 0, &rec, TimestampType::CreateTime, &mut out, None);
        out
    }

    #[test]
    fn formats_text_binary_null_and_headers() {
        let hdrs: [(&[u8], Option<&[u8]>); 2] = [(b"h", Some(b"v")), (b"z", None)];
        let out = line_of(
            7,
            &RecordInput {
                key: None,
                value: Some(&[0xff, b'\n']),
                headers: &hdrs,
                timestamp: 9,
            },
        );
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "{\"topic\":\"t\",\"partition\":0,\"offset\":7,\"timestamp\":9,\"timestampType\":\"CreateTime\",\"key\":null,\"value\":{\"base64\":\"/wo=\"},\"headers\":[[\"h\",\"v\"],[\"z\",null]]}\n"
        );
        // Fed back, the line is the same record.
        let back = parse_line(out.trim_ascii_end()).unwrap();
        assert_eq!(back.key, None);
        assert_eq!(back.value.as_deref(), Some(&[0xff, b'\n'][..]));
        assert_eq!(
            back.headers,
            vec![(b"h".to_vec(), Some(b"v".to_vec())), (b"z".to_vec(), None)]
        );
        assert_eq!(back.timestamp, Some(9));
    }

    /// The names of the fields `format_record` prints, in its order.
    fn printed_fields() -> Vec<String> {
        let out = line_of(
            0,
            &RecordInput {
                key: Some(b"k"),
                value: Some(b"v"),
                headers: &[],
                timestamp: 1,
            },
        );
        let Value::Object(m) = serde_json::from_slice(&out).unwrap() else {
            panic!("a record is an object")
        };
        m.keys().cloned().collect()
    }

    /// What a JSON sample of the docs is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Sample {
        /// A record as `.jsonl` shows it.
        Shown,
        /// A line written to `append.jsonl`.
        Written,
        /// Other JSON (a decoded value, a line written to `append`).
        Json,
    }

    /// The JSON samples of the docs: the lines of code blocks that start with `{` (a record
    /// as shown when it starts with `{"topic"`), the quoted argument of an `echo '{...}'` in a
    /// code block (a line written when it goes to an `append.jsonl`), and inline spans that
    /// start with `{"topic"` (a record as shown). (doc, line, text, what it is).
    fn doc_samples() -> Vec<(&'static str, usize, String, Sample)> {
        let docs = [
            ("README.md", include_str!("../README.md")),
            ("docs/contract.md", include_str!("../docs/contract.md")),
            ("docs/format.md", include_str!("../docs/format.md")),
            (
                "docs/architecture.md",
                include_str!("../docs/architecture.md"),
            ),
        ];
        let mut out = Vec::new();
        for (doc, text) in docs {
            let mut in_code = false;
            for (i, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("```") {
                    in_code = !in_code;
                    continue;
                }
                if in_code && line.starts_with('{') {
                    let kind = match line.starts_with("{\"topic\"") {
                        true => Sample::Shown,
                        false => Sample::Json,
                    };
                    out.push((doc, i + 1, line.to_string(), kind));
                } else if in_code && let Some(at) = line.find("echo '{") {
                    let rest = &line[at + "echo '".len()..];
                    let end = rest.find('\'').expect("the quote closes");
                    let kind = match rest[end..].contains("append.jsonl") {
                        true => Sample::Written,
                        false => Sample::Json,
                    };
                    out.push((doc, i + 1, rest[..end].to_string(), kind));
                } else if !in_code {
                    for span in line.split('`').skip(1).step_by(2) {
                        if span.starts_with("{\"topic\"") {
                            out.push((doc, i + 1, span.to_string(), Sample::Shown));
                        }
                    }
                }
            }
        }
        out
    }

    /// Every JSON sample of the docs parses; a record as shown has exactly the fields the
    /// code prints, in its order (and the schema ids of decoded ones after them); a line
    /// written is one `append.jsonl` takes.
    #[test]
    fn the_docs_json_samples_parse_with_the_fields_in_the_printed_order() {
        let fields = printed_fields();
        let samples = doc_samples();
        let count = |k: Sample| samples.iter().filter(|s| s.3 == k).count();
        assert!(count(Sample::Shown) >= 4, "{samples:?}");
        assert!(count(Sample::Written) >= 1, "{samples:?}");
        for (doc, line, text, kind) in samples {
            let at = format!("{doc}:{line}: {text}");
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{at}: {e}"));
            match kind {
                Sample::Shown => {
                    let Value::Object(m) = &v else {
                        panic!("{at}: not an object")
                    };
                    let keys: Vec<String> = m
                        .keys()
                        .filter(|k| *k != "keySchemaId" && *k != "valueSchemaId")
                        .cloned()
                        .collect();
                    assert_eq!(keys, fields, "{at}");
                    let ids: Vec<&String> = m.keys().skip(fields.len()).collect();
                    assert!(
                        ids.iter()
                            .all(|k| *k == "keySchemaId" || *k == "valueSchemaId"),
                        "{at}"
                    );
                    assert!(m["headers"].is_array(), "{at}");
                    // What is shown as stored can be written back (a decoded value needs
                    // its topic's schema).
                    if ids.is_empty() {
                        parse_line(text.as_bytes()).unwrap_or_else(|e| panic!("{at}: {e}"));
                    }
                }
                Sample::Written => {
                    parse_line(text.as_bytes()).unwrap_or_else(|e| panic!("{at}: {e}"));
                }
                Sample::Json => {}
            }
        }
    }
}
