//! The registry's bookkeeping and its refusals of hostile bytes and JSON. Agreement with
//! Confluent's own serializers is proven in tests/schema_oracle.rs.

use super::*;

fn key(subject: &str, version: u32) -> Vec<u8> {
    format!(r#"{{"keytype":"SCHEMA","subject":"{subject}","version":{version},"magic":1}}"#)
        .into_bytes()
}

fn value(subject: &str, version: u32, id: u32, schema: &str, kind: Option<&str>) -> Vec<u8> {
    let mut v = serde_json::json!({"subject": subject, "version": version, "id": id,
        "schema": schema, "deleted": false});
    if let Some(k) = kind {
        v["schemaType"] = k.into();
    }
    v.to_string().into_bytes()
}

fn register(r: &Registry, subject: &str, version: u32, id: u32, schema: &str) {
    r.apply_record(
        Some(&key(subject, version)),
        Some(&value(subject, version, id, schema, None)),
    );
}

fn wire(id: u32, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0];
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn decode(r: &Registry, bytes: &[u8]) -> Result<String, DecodeError> {
    let mut out = b"kept".to_vec();
    let res = r.decode_into(bytes, &mut out);
    if res.is_err() {
        assert_eq!(out, b"kept", "an error leaves out as it was");
    }
    res.map(|_| String::from_utf8(out[4..].to_vec()).unwrap())
}

const USER: &str = r#"{"type":"record","name":"User","namespace":"t","fields":[
    {"name":"name","type":"string"},{"name":"age","type":"int"},
    {"name":"tags","type":{"type":"array","items":"string"},"default":[]},
    {"name":"score","type":"float","default":1.5}]}"#;

fn bad(res: Result<String, DecodeError>) -> String {
    match res {
        Err(DecodeError::Bad { reason, .. }) => reason,
        other => panic!("expected Bad, got {other:?}"),
    }
}

#[test]
fn records_apply_delete_and_bump_the_generation() {
    let r = Registry::new();
    let g0 = r.generation();
    register(&r, "u-value", 1, 7, USER);
    assert!(r.generation() > g0);
    assert_eq!(r.latest_id("u-value"), Some(7));
    // Ignored record kinds and junk change nothing.
    let g1 = r.generation();
    r.apply_record(
        Some(br#"{"keytype":"CONFIG","subject":null,"magic":0}"#),
        Some(b"{}"),
    );
    r.apply_record(Some(br#"{"keytype":"NOOP","magic":0}"#), None);
    r.apply_record(Some(b"\xff junk"), Some(b"junk"));
    r.apply_record(None, Some(b"{}"));
    assert_eq!(r.generation(), g1);
    // The same id under a second subject outlives the first's deletion.
    register(&r, "other-value", 3, 7, USER);
    r.apply_record(Some(&key("u-value", 1)), None);
    assert_eq!(r.latest_id("u-value"), None);
    assert!(r.knows(7));
    let deleted = serde_json::json!({"subject": "other-value", "version": 3, "id": 7,
        "schema": USER, "deleted": true});
    r.apply_record(
        Some(&key("other-value", 3)),
        Some(deleted.to_string().as_bytes()),
    );
    assert!(!r.knows(7));
    assert_eq!(
        decode(&r, &wire(7, b"\x02a\x02\x00\x00\x00\xc0\x3f")),
        Err(DecodeError::UnknownId(7))
    );
}

#[test]
fn delete_subject_removes_versions_up_to_the_one_named() {
    let r = Registry::new();
    for v in 1..=3 {
        register(&r, "s", v, 10 + v, USER);
    }
    r.apply_record(
        Some(br#"{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}"#),
        Some(br#"{"subject":"s","version":2}"#),
    );
    assert!(!r.knows(11) && !r.knows(12) && r.knows(13));
    assert_eq!(r.latest_id("s"), Some(13));
    r.apply_record(
        Some(br#"{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}"#),
        Some(br#"{"subject":"s"}"#),
    );
    assert_eq!(r.latest_id("s"), None);
}

#[test]
fn ten_thousand_versions_of_one_subject() {
    let r = Registry::new();
    for v in 1..=10_000u32 {
        register(&r, "big", v, v, r#""long""#);
    }
    assert_eq!(r.latest_id("big"), Some(10_000));
    assert_eq!(decode(&r, &wire(5_000, b"\x02")).unwrap(), "1");
    r.apply_record(
        Some(br#"{"keytype":"DELETE_SUBJECT","subject":"big","magic":0}"#),
        Some(br#"{"subject":"big","version":9999}"#),
    );
    assert_eq!(r.latest_id("big"), Some(10_000));
    assert!(!r.knows(5_000));
}

#[test]
fn wrong_magic_short_and_truncated_bodies() {
    let r = Registry::new();
    register(&r, "u", 1, 1, USER);
    assert_eq!(
        decode(&r, b"\x01\x00\x00\x00\x01\x02a"),
        Err(DecodeError::NotWire)
    );
    assert_eq!(decode(&r, b"\x00\x00\x00"), Err(DecodeError::NotWire));
    let whole = wire(1, b"\x02a\x54\x02\x02x\x00\x00\x00\xc0\x3f");
    assert_eq!(
        decode(&r, &whole).unwrap(),
        r#"{"name":"a","age":42,"tags":["x"],"score":1.5}"#
    );
    for cut in 5..whole.len() {
        bad(decode(&r, &whole[..cut]));
    }
    let mut trailing = whole.clone();
    trailing.push(0);
    assert!(bad(decode(&r, &trailing)).contains("after the value"));
}

#[test]
fn a_schema_that_does_not_parse_fails_only_its_id() {
    let r = Registry::new();
    register(
        &r,
        "broken",
        1,
        1,
        r#"{"type":"record","name":"X","fields":[{"name":"a","type":"nope"}]}"#,
    );
    register(&r, "fine", 1, 2, r#""string""#);
    bad(decode(&r, &wire(1, b"\x02")));
    assert_eq!(decode(&r, &wire(2, b"\x04hi")).unwrap(), r#""hi""#);
    let proto = value(
        "p",
        1,
        3,
        "syntax = \"proto3\"; message {",
        Some("PROTOBUF"),
    );
    r.apply_record(Some(&key("p", 1)), Some(&proto));
    bad(decode(&r, &wire(3, b"\x00")));
    assert!(matches!(
        r.encode("p", b"{}"),
        Err(EncodeError::Invalid { id: 3, .. })
    ));
}

#[test]
fn huge_claimed_lengths_and_counts_are_refused() {
    let r = Registry::new();
    register(&r, "b", 1, 1, r#""bytes""#);
    register(&r, "a", 1, 2, r#"{"type":"array","items":"long"}"#);
    register(&r, "n", 1, 3, r#"{"type":"array","items":"null"}"#);
    register(&r, "m", 1, 4, r#"{"type":"map","values":"string"}"#);
    // A length of 2^62 bytes in a 10-byte value.
    let huge = b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f";
    assert!(bad(decode(&r, &wire(1, huge))).contains("more than"));
    assert!(bad(decode(&r, &wire(2, huge))).contains("more than"));
    assert!(bad(decode(&r, &wire(4, huge))).contains("more than"));
    // Items that take no bytes are bounded by count.
    assert!(bad(decode(&r, &wire(3, huge))).contains("too many"));
    // A negative block count with a byte size that claims too much.
    assert!(bad(decode(&r, &wire(2, b"\x01\xfe\xff\xff\xff\x0f"))).contains("more than"));
    // A varint that never ends.
    bad(decode(&r, &wire(2, &[0xff; 20])));
}

#[test]
fn deep_nesting_is_bounded() {
    let r = Registry::new();
    let list = r#"{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}"#;
    register(&r, "l", 1, 1, list);
    // 100,000 levels of "branch 1" then a null: refused, no stack overflow.
    let mut body = vec![2u8; 100_000];
    body.push(0);
    assert!(bad(decode(&r, &wire(1, &body))).contains("deeply"));
    assert_eq!(
        decode(&r, &wire(1, b"\x02\x00")).unwrap(),
        r#"{"next":{"next":null}}"#
    );
    let deep = format!("{}null{}", r#"{"next":"#.repeat(5000), "}".repeat(5000));
    assert!(r.encode("l", deep.as_bytes()).is_err());
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    register(&r, "j", 1, 2, r#""string""#);
    assert!(r.encode("j", nested.as_bytes()).is_err());
    let json = value("js", 1, 3, r#"{"type":"array"}"#, Some("JSON"));
    r.apply_record(Some(&key("js", 1)), Some(&json));
    bad(decode(&r, &wire(3, nested.as_bytes())));
}

fn invalid(r: &Registry, subject: &str, json: &str) -> String {
    match r.encode(subject, json.as_bytes()) {
        Err(EncodeError::Invalid { reason, .. }) => reason,
        other => panic!("{json} encoded: {other:?}"),
    }
}

#[test]
fn json_that_does_not_match_names_the_field() {
    let r = Registry::new();
    register(&r, "u", 1, 9, USER);
    let ok = r.encode("u", br#"{"name":"a","age":42}"#).unwrap().unwrap();
    assert_eq!(ok, wire(9, b"\x02a\x54\x00\x00\x00\xc0\x3f"));
    assert_eq!(r.encode("none", b"{}"), Ok(None));
    assert!(invalid(&r, "u", r#"{"name":"a","age":1,"extra":1}"#).contains("extra"));
    assert!(invalid(&r, "u", r#"{"name":"a"}"#).contains("field age: missing"));
    assert!(invalid(&r, "u", r#"{"name":1,"age":1}"#).contains("field name: expected a string"));
    assert!(invalid(&r, "u", r#"{"name":"a","age":2147483648}"#).contains("out of range"));
    assert!(invalid(&r, "u", r#"{"name":"a","age":1.5}"#).contains("field age"));
    assert!(invalid(&r, "u", r#"{"name":"a","age":1,"score":1e39}"#).contains("out of range"));
    assert!(invalid(&r, "u", r#"{"name":"a","age":1,"tags":["x",2]}"#).contains("tags[1]"));
    register(&r, "l", 1, 10, r#""long""#);
    assert!(invalid(&r, "l", "9223372036854775808").contains("out of range"));
    assert!(invalid(&r, "l", "-9223372036854775809").contains("out of range"));
    assert!(r.encode("l", b"-9223372036854775808").unwrap().is_some());
    assert!(invalid(&r, "l", "{").contains("not JSON"));
}

#[test]
fn json_schema_subset_checks_the_value() {
    let r = Registry::new();
    let schema = r#"{"type":"object","properties":{"id":{"type":"integer","minimum":0},
        "kind":{"enum":["a","b"]},"tags":{"type":"array","items":{"type":"string"}}},
        "required":["id"],"additionalProperties":false}"#;
    let rec = value("j", 1, 5, schema, Some("JSON"));
    r.apply_record(Some(&key("j", 1)), Some(&rec));
    let out = r
        .encode("j", br#"{ "id": 3, "kind": "a" }"#)
        .unwrap()
        .unwrap();
    assert_eq!(out, wire(5, br#"{"id":3,"kind":"a"}"#));
    assert_eq!(decode(&r, &out).unwrap(), r#"{"id":3,"kind":"a"}"#);
    assert!(invalid(&r, "j", r#"{"kind":"a"}"#).contains("field id: missing"));
    assert!(invalid(&r, "j", r#"{"id":-1}"#).contains("field id"));
    assert!(invalid(&r, "j", r#"{"id":1,"kind":"c"}"#).contains("field kind"));
    assert!(invalid(&r, "j", r#"{"id":1,"x":1}"#).contains("field x"));
    assert!(invalid(&r, "j", r#"{"id":1,"tags":[1]}"#).contains("tags[0]"));
    bad(decode(&r, &wire(5, b"{not json")));
}

#[test]
fn protobuf_indexes_are_checked() {
    let r = Registry::new();
    let proto = "syntax = \"proto3\"; message A { int64 x = 1; message B { string s = 1; } }";
    r.apply_record(
        Some(&key("p", 1)),
        Some(&value("p", 1, 4, proto, Some("PROTOBUF"))),
    );
    assert_eq!(
        decode(&r, &wire(4, b"\x00\x08\x05")).unwrap(),
        r#"{"x":"5"}"#
    );
    // Indexes [0, 0]: A.B.
    assert_eq!(
        decode(&r, &wire(4, b"\x04\x00\x00\x0a\x01z")).unwrap(),
        r#"{"s":"z"}"#
    );
    assert!(bad(decode(&r, &wire(4, b"\x02\x06\x08\x05"))).contains("no message"));
    assert!(bad(decode(&r, &wire(4, b"\xfe\xff\xff\xff\x0f"))).contains("out of range"));
    bad(decode(&r, &wire(4, b"\x00\x08")));
    let enc = r.encode("p", br#"{"x":"7"}"#).unwrap().unwrap();
    assert_eq!(enc, wire(4, b"\x00\x08\x07"));
    assert!(invalid(&r, "p", r#"{"y":1}"#).contains('y'));
}

fn register_with_refs(
    r: &Registry,
    subject: &str,
    id: u32,
    schema: &str,
    kind: Option<&str>,
    refs: serde_json::Value,
) {
    let mut v: serde_json::Value =
        serde_json::from_slice(&value(subject, 1, id, schema, kind)).unwrap();
    v["references"] = refs;
    r.apply_record(Some(&key(subject, 1)), Some(v.to_string().as_bytes()));
}

#[test]
fn references_resolve_through_the_subjects_named() {
    let r = Registry::new();
    // Referenced after the referring schema: the id compiles once the reference is there.
    let refs = serde_json::json!([{"name": "t.Money", "subject": "money", "version": 1}]);
    let order = r#"{"type":"record","name":"Order","namespace":"t","fields":[{"name":"m","type":"Money"}]}"#;
    register_with_refs(&r, "order-value", 2, order, None, refs);
    bad(decode(&r, &wire(2, b"\x02\x06EUR")));
    let money = r#"{"type":"record","name":"Money","namespace":"t","fields":[
        {"name":"cents","type":"long"},{"name":"ccy","type":"string"}]}"#;
    register(&r, "money", 1, 1, money);
    assert_eq!(
        decode(&r, &wire(2, b"\x02\x06EUR")).unwrap(),
        r#"{"m":{"cents":1,"ccy":"EUR"}}"#
    );

    let common = "syntax = \"proto3\"; package c; message Money { int64 cents = 1; }";
    register_with_refs(
        &r,
        "common.proto",
        3,
        common,
        Some("PROTOBUF"),
        serde_json::json!([]),
    );
    let pay =
        "syntax = \"proto3\"; import \"common.proto\"; import \"google/protobuf/duration.proto\";
        message Pay { c.Money amount = 1; google.protobuf.Duration wait = 2; }";
    let refs =
        serde_json::json!([{"name": "common.proto", "subject": "common.proto", "version": -1}]);
    register_with_refs(&r, "pay-value", 4, pay, Some("PROTOBUF"), refs);
    let enc = r
        .encode("pay-value", br#"{"amount":{"cents":"12"},"wait":"1.5s"}"#)
        .unwrap()
        .unwrap();
    assert_eq!(
        decode(&r, &enc).unwrap(),
        r#"{"amount":{"cents":"12"},"wait":"1.500s"}"#
    );
}

#[test]
fn inserted_ids_stay_and_subject_versions_count() {
    let r = Registry::new();
    let g = r.generation();
    r.insert(40, None, Kind::Avro, r#""int""#, &[]);
    r.insert(
        41,
        Some(("s-value", 3)),
        Kind::Json,
        r#"{"type":"string"}"#,
        &[],
    );
    assert!(r.generation() >= g + 2);
    assert_eq!(r.kind(41), Some(Kind::Json));
    assert_eq!(decode(&r, &wire(40, b"\x54")).unwrap(), "42");
    assert_eq!(r.latest_id("s-value"), Some(41));
    let g = r.generation();
    r.insert(40, None, Kind::Avro, r#""int""#, &[]);
    assert_eq!(r.generation(), g, "the same schema again changes nothing");
    assert!(invalid(&r, "s-value", "1").contains("not of type"));
}

#[test]
fn hostile_protobuf_bodies_and_big_decimals() {
    let r = Registry::new();
    let proto = "syntax = \"proto3\"; message A { string s = 1; A next = 2; }";
    r.apply_record(
        Some(&key("p", 1)),
        Some(&value("p", 1, 1, proto, Some("PROTOBUF"))),
    );
    // A string claiming 2^40 bytes.
    bad(decode(&r, &wire(1, b"\x00\x0a\x80\x80\x80\x80\x80\x20")));
    // 2,000 nested messages: refused by depth, no stack overflow.
    let mut body: Vec<u8> = Vec::new();
    for _ in 0..2_000 {
        let mut outer = vec![0x12];
        let mut n = body.len();
        while n >= 0x80 {
            outer.push((n as u8) | 0x80);
            n >>= 7;
        }
        outer.push(n as u8);
        outer.extend_from_slice(&body);
        body = outer;
    }
    bad(decode(&r, &wire(1, &[&[0u8][..], &body].concat())));
    // A 20-byte decimal (beyond 128 bits) is shown exactly.
    let dec = r#"{"type":"bytes","logicalType":"decimal","precision":60,"scale":3}"#;
    register(&r, "d", 1, 2, dec);
    let mut body = vec![40u8];
    body.extend_from_slice(&[0xff; 20]);
    assert_eq!(decode(&r, &wire(2, &body)).unwrap(), r#""-0.001""#);
    // 2^152, checked in Python.
    let mut body = vec![40u8, 0x01];
    body.extend_from_slice(&[0; 19]);
    assert_eq!(
        decode(&r, &wire(2, &body)).unwrap(),
        r#""5708990770823839524233143877797980545530986.496""#
    );
}

#[test]
fn json_schema_combinators_over_themselves_are_bounded() {
    let r = Registry::new();
    let schema = r##"{"anyOf":[{"$ref":"#/definitions/x"},{"$ref":"#/definitions/x"}],
        "definitions":{"x":{"anyOf":[{"$ref":"#"},{"$ref":"#"},{"type":"null"}]}}}"##;
    let rec = value("loop", 1, 1, schema, Some("JSON"));
    r.apply_record(Some(&key("loop", 1)), Some(&rec));
    assert!(invalid(&r, "loop", "1").contains("too many checks"));
}

#[test]
fn one_registry_serves_every_thread() {
    fn shared<T: Send + Sync>() {}
    shared::<Registry>();
    let r = std::sync::Arc::new(Registry::new());
    register(&r, "u", 1, 1, USER);
    let body = wire(1, b"\x02a\x54\x00\x00\x00\xc0\x3f");
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (r, body) = (r.clone(), body.clone());
            std::thread::spawn(move || decode(&r, &body).unwrap())
        })
        .collect();
    for t in threads {
        assert_eq!(
            t.join().unwrap(),
            r#"{"name":"a","age":42,"tags":[],"score":1.5}"#
        );
    }
}

#[test]
fn decimals_wider_than_128_bits_are_written_and_huge_scales_allocate_nothing() {
    let r = Registry::new();
    let dec = r#"{"type":"bytes","logicalType":"decimal","precision":60,"scale":3}"#;
    register(&r, "d", 1, 1, dec);
    let fix =
        r#"{"type":"fixed","name":"F","size":24,"logicalType":"decimal","precision":57,"scale":0}"#;
    register(&r, "f", 1, 2, fix);
    // 2^152 as shown (checked in Python), and its negation: written back to the same bytes.
    let mut pos = vec![40u8, 0x01];
    pos.extend_from_slice(&[0; 19]);
    let shown = "5708990770823839524233143877797980545530986.496";
    assert_eq!(
        r.encode("d", format!("\"{shown}\"").as_bytes()),
        Ok(Some(wire(1, &pos)))
    );
    let mut neg = vec![40u8, 0xff];
    neg.extend_from_slice(&[0; 19]);
    assert_eq!(decode(&r, &wire(1, &neg)).unwrap(), format!("\"-{shown}\""));
    assert_eq!(
        r.encode("d", format!("\"-{shown}\"").as_bytes()),
        Ok(Some(wire(1, &neg)))
    );
    // Sign-extended to a fixed's size; too many digits refused.
    let mut f = vec![0xffu8; 4];
    f.push(0xfe);
    f.extend_from_slice(&[0; 19]);
    let text = decode(&r, &wire(2, &f)).unwrap();
    assert_eq!(r.encode("f", text.as_bytes()), Ok(Some(wire(2, &f))));
    assert!(invalid(&r, "d", &format!("\"{}\"", "9".repeat(61))).contains("precision 60"));
    assert!(invalid(&r, "f", &format!("\"{}\"", "9".repeat(58))).contains("precision 57"));
    // A scale of 50 million, as a registry takes it: no 50 MB text per value, none
    // allocated to write one.
    let huge = r#"{"type":"bytes","logicalType":"decimal","precision":50000000,"scale":50000000}"#;
    register(&r, "h", 1, 3, huge);
    let shown = decode(&r, &wire(3, b"\x02\x01")).unwrap_or_default();
    assert!(shown.len() < 100, "{} bytes shown", shown.len());
    let written = r
        .encode("h", b"\"0.1\"")
        .unwrap_or_default()
        .unwrap_or_default();
    assert!(written.len() < 100, "{} bytes written", written.len());
}

#[test]
fn the_largest_float_as_shown_is_written_back() {
    let r = Registry::new();
    register(&r, "f", 1, 1, r#""float""#);
    let max = wire(1, &f32::MAX.to_le_bytes());
    let shown = decode(&r, &max).unwrap();
    assert_eq!(shown, "3.4028235e+38");
    assert_eq!(r.encode("f", shown.as_bytes()), Ok(Some(max)));
    assert!(invalid(&r, "f", "3.5e38").contains("out of range for a float"));
    assert!(invalid(&r, "f", "-1e39").contains("out of range for a float"));
}

#[test]
fn timestamps_at_the_edges_of_years_1_and_9999_are_written_back() {
    let r = Registry::new();
    let ms = r#"{"type":"long","logicalType":"timestamp-millis"}"#;
    register(&r, "ms", 1, 1, ms);
    // 9999-12-31T23:59:59.999Z, 0001-01-01T00:00:00.000Z, and one millisecond before 1970.
    for millis in [253_402_300_799_999i64, -62_135_596_800_000, -1] {
        let mut body = Vec::new();
        let z = ((millis << 1) ^ (millis >> 63)) as u64;
        let mut n = z;
        while n >= 0x80 {
            body.push((n as u8) | 0x80);
            n >>= 7;
        }
        body.push(n as u8);
        let bytes = wire(1, &body);
        let shown = decode(&r, &bytes).unwrap();
        assert_eq!(r.encode("ms", shown.as_bytes()), Ok(Some(bytes)), "{shown}");
    }
    // Any offset: the same instant.
    let utc = r.encode("ms", br#""9999-12-31T23:59:59.999Z""#).unwrap();
    let east = r.encode("ms", br#""10000-01-01T01:59:59.999+02:00""#);
    assert!(
        east.is_err() || east.as_ref().ok() == Some(&utc),
        "{east:?}"
    );
    let west = r
        .encode("ms", br#""9999-12-31T13:59:59.999-10:00""#)
        .unwrap();
    assert_eq!(west, utc);
}

#[test]
fn json_schema_refs_to_referenced_subjects_are_checked_in_their_own_document() {
    let r = Registry::new();
    // As Confluent's clients register them: the referenced schema under its reference name,
    // its own `$ref`s local to it.
    let address = r##"{"$id":"address.json","type":"object","properties":{"city":{"type":"string"},
        "zip":{"$ref":"#/definitions/zip"}},"required":["city"],"additionalProperties":false,
        "definitions":{"zip":{"type":"integer","minimum":0}}}"##;
    register_with_refs(
        &r,
        "address",
        1,
        address,
        Some("JSON"),
        serde_json::json!([]),
    );
    let customer = r##"{"type":"object","properties":{"name":{"type":"string"},
        "home":{"$ref":"address.json"},"zip":{"$ref":"address.json#/definitions/zip"},
        "definitions":{"type":"null"}}}"##;
    let refs = serde_json::json!([{"name": "address.json", "subject": "address", "version": 1}]);
    register_with_refs(&r, "cust-value", 2, customer, Some("JSON"), refs);
    let ok = br#"{"name":"a","home":{"city":"x","zip":5},"zip":0}"#;
    assert_eq!(r.encode("cust-value", ok), Ok(Some(wire(2, ok))));
    let neg = invalid(
        &r,
        "cust-value",
        r#"{"name":"a","home":{"city":"x","zip":-5}}"#,
    );
    assert!(
        neg.contains("field home.zip") && neg.contains("minimum"),
        "{neg}"
    );
    assert!(invalid(&r, "cust-value", r#"{"home":{"city":"x","y":1}}"#).contains("home.y"));
    assert!(invalid(&r, "cust-value", r#"{"home":{}}"#).contains("home.city"));
    assert!(invalid(&r, "cust-value", r#"{"zip":-1}"#).contains("field zip"));
    // A reference the schema does not name: refused, naming it.
    let stray = r#"{"type":"object","properties":{"a":{"$ref":"other.json"}}}"#;
    register_with_refs(
        &r,
        "stray-value",
        3,
        stray,
        Some("JSON"),
        serde_json::json!([]),
    );
    assert!(invalid(&r, "stray-value", r#"{"a":1}"#).contains("other.json"));
    assert_eq!(r.encode("stray-value", b"{}"), Ok(Some(wire(3, b"{}"))));
}

#[test]
fn named_types_referenced_twice_at_every_level_do_not_expand_without_bound() {
    // N0 holds two N1, N1 two N2 ... N39 is empty: a value of N0 takes no bytes and is 2^40
    // objects. A read answers at once (shown raw), and an array of them too.
    let mut schema = r#"{"type":"record","name":"N39","fields":[]}"#.to_string();
    for i in (0..39).rev() {
        schema = format!(
            r#"{{"type":"record","name":"N{i}","fields":[{{"name":"a","type":{schema}}},{{"name":"b","type":"N{}"}}]}}"#,
            i + 1
        );
    }
    let r = Registry::new();
    register(&r, "bomb", 1, 1, &schema);
    register(
        &r,
        "bombs",
        1,
        2,
        &format!(r#"{{"type":"array","items":{schema}}}"#),
    );
    let started = std::time::Instant::now();
    bad(decode(&r, &wire(1, b"")));
    bad(decode(&r, &wire(2, b"\x02\x00")));
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    // A small value of a wide schema still decodes.
    let small = r#"{"type":"record","name":"S","fields":[{"name":"a","type":{"type":"record",
        "name":"E","fields":[]}},{"name":"b","type":"E"},{"name":"n","type":"null"}]}"#;
    register(&r, "small", 1, 3, small);
    assert_eq!(
        decode(&r, &wire(3, b"")).unwrap(),
        r#"{"a":{},"b":{},"n":null}"#
    );
}

#[test]
fn protobuf_imports_of_confluent_and_google_type_files_need_no_reference() {
    let r = Registry::new();
    // As Confluent's clients and registry take them: confluent/*, google/type/* and
    // google/protobuf/* are known without a reference.
    let pay = r#"syntax = "proto3";
        package shop;
        import "confluent/meta.proto";
        import "confluent/type/decimal.proto";
        import "google/type/date.proto";
        import "google/type/money.proto";
        message Pay {
          option (confluent.message_meta) = { doc: "a payment" };
          google.type.Date day = 1;
          confluent.type.Decimal amount = 2;
          string card = 3 [(confluent.field_meta) = { tags: ["PII"] }];
          google.type.Money fee = 4;
          // As Kafka Connect's Protobuf converter writes its types.
          int32 small = 5 [(confluent.field_meta) = { params: [{ key: "connect.type", value: "int16" }] }];
        }"#;
    r.apply_record(
        Some(&key("pay-value", 1)),
        Some(&value("pay-value", 1, 1, pay, Some("PROTOBUF"))),
    );
    let body = b"\x00\x0a\x07\x08\xea\x0f\x10\x0c\x18\x04\x12\x08\x0a\x02\x04\xd2\x10\x06\x18\x02\x1a\x01x";
    let shown = decode(&r, &wire(1, body)).unwrap();
    assert_eq!(
        shown,
        r#"{"day":{"year":2026,"month":12,"day":4},"amount":{"value":"BNI=","precision":6,"scale":2},"card":"x"}"#
    );
    assert_eq!(
        r.encode("pay-value", shown.as_bytes()),
        Ok(Some(wire(1, body)))
    );
}

#[test]
fn every_file_imported_without_a_reference_compiles() {
    let r = Registry::new();
    for (i, (name, _)) in protobuf::BUILTIN.iter().enumerate() {
        let id = 100 + i as u32;
        let schema =
            format!("syntax = \"proto3\"; import \"{name}\"; message M {{ string s = 1; }}");
        r.apply_record(
            Some(&key(name, 1)),
            Some(&value(name, 1, id, &schema, Some("PROTOBUF"))),
        );
        assert_eq!(
            decode(&r, &wire(id, b"\x00\x0a\x01y")),
            Ok(r#"{"s":"y"}"#.into()),
            "{name}"
        );
    }
}

#[test]
fn json_schema_values_keep_their_numbers_as_written() {
    let r = Registry::new();
    let schema = r#"{"type":"object","properties":{"id":{"type":"integer","minimum":0}}}"#;
    r.apply_record(
        Some(&key("j", 1)),
        Some(&value("j", 1, 1, schema, Some("JSON"))),
    );
    // An id beyond 64 bits (Jackson writes it so): stored and shown digit for digit.
    let text = "{ \"id\" : 123456789012345678901234567890,\n \"s\": \"a b\\\" \\u00e9\", \"n\": [1.50, -0, 1e300] }";
    let compact = r#"{"id":123456789012345678901234567890,"s":"a b\" \u00e9","n":[1.50,-0,1e300]}"#;
    let stored = r.encode("j", text.as_bytes()).unwrap().unwrap();
    assert_eq!(stored, wire(1, compact.as_bytes()));
    assert_eq!(decode(&r, &stored).unwrap(), compact);
    let spaced = wire(1, b" {\"id\" :\t7 } \n");
    assert_eq!(decode(&r, &spaced).unwrap(), r#"{"id":7}"#);
    assert!(invalid(&r, "j", r#"{"id":-123456789012345678901234567890}"#).contains("field id"));
}

#[test]
fn json_schema_checks_of_a_large_value_are_not_cut_short() {
    let r = Registry::new();
    let schema = r#"{"type":"object","properties":{"xs":{"type":"array","items":{"type":"object",
        "properties":{"v":{"type":"integer"}},"required":["v"]}}}}"#;
    r.apply_record(
        Some(&key("big", 1)),
        Some(&value("big", 1, 1, schema, Some("JSON"))),
    );
    // 100,000 items, each two checks: a 1.2 MB value, as a producer may well write.
    let items: Vec<String> = (0..100_000).map(|i| format!(r#"{{"v":{i}}}"#)).collect();
    let text = format!(r#"{{"xs":[{}]}}"#, items.join(","));
    assert!(r.encode("big", text.as_bytes()).is_ok());
    let bad_item = text.replacen(r#"{"v":99999}"#, r#"{"v":"x"}"#, 1);
    assert!(invalid(&r, "big", &bad_item).contains("field xs[99999].v"));
}

#[test]
fn a_deeply_nested_schema_text_is_refused_without_overflowing_the_stack() {
    let r = Registry::new();
    let n = 20_000;
    let proto = format!(
        "syntax = \"proto3\"; {} {}",
        "message A { ".repeat(n),
        "}".repeat(n)
    );
    r.apply_record(
        Some(&key("deep", 1)),
        Some(&value("deep", 1, 1, &proto, Some("PROTOBUF"))),
    );
    bad(decode(&r, &wire(1, b"\x00")));
    let avro = format!(
        "{}\"int\"{}",
        "{\"type\":\"array\",\"items\":".repeat(n),
        "}".repeat(n)
    );
    register(&r, "deep-avro", 1, 2, &avro);
    bad(decode(&r, &wire(2, b"\x00")));
    let json = format!("{}true{}", "{\"not\":".repeat(n), "}".repeat(n));
    r.apply_record(
        Some(&key("deep-json", 1)),
        Some(&value("deep-json", 1, 3, &json, Some("JSON"))),
    );
    assert!(r.encode("deep-json", b"1").is_err());
}

#[test]
fn decimals_written_as_json_numbers_in_exponent_form() {
    let r = Registry::new();
    let dec = r#"{"type":"bytes","logicalType":"decimal","precision":12,"scale":9}"#;
    register(&r, "d", 1, 1, dec);
    let shown = |json: &str| decode(&r, &r.encode("d", json.as_bytes()).unwrap().unwrap()).unwrap();
    // serde_json and Python print 0.0000001 as 1e-07 / 1e-7.
    assert_eq!(shown("0.0000001"), r#""0.000000100""#);
    assert_eq!(shown(r#""1e-7""#), r#""0.000000100""#);
    assert_eq!(shown(r#""-1.5E2""#), r#""-150.000000000""#);
    assert_eq!(shown("12e0"), r#""12.000000000""#);
    assert!(invalid(&r, "d", r#""1e-10""#).contains("scale 9"));
    assert!(invalid(&r, "d", r#""1e3""#).contains("precision 12"));
    assert!(invalid(&r, "d", r#""1e4000000000""#).contains("precision 12"));
    assert!(invalid(&r, "d", r#""1e""#).contains("not a decimal"));
}
