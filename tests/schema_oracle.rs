//! The schema codec against Confluent's own serializers: tests/schema/oracle.py serializes
//! sample values with confluent-kafka's AvroSerializer, ProtobufSerializer and JSONSerializer
//! (its mock registry holding the schemas) and says what the matching deserializers return.
//! The registry, fed the same schemas as `_schemas` records, must show the same values; what
//! it encodes from that JSON, Confluent's deserializers must read back the same.
//! Needs python3 with confluent-kafka[schemaregistry,avro,protobuf,json] and grpcio-tools
//! (scripts/install-deps.sh): without them the test fails.

mod common;

use serde_json::{Value, json};
use topicfs::schema::Registry;

use common::schema::{hex, oracle, unhex};

fn decoded(registry: &Registry, bytes: &[u8]) -> (String, Value) {
    let mut out = Vec::new();
    let id = registry.decode_into(bytes, &mut out);
    assert_eq!(id.ok(), Registry::wire_id(bytes), "{}", hex(bytes));
    let text = String::from_utf8(out).unwrap();
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    (text, value)
}

#[test]
fn confluent_serdes_and_the_registry_agree_both_ways() {
    let generated = oracle("generate", None);
    let registry = Registry::new();
    for r in generated["records"].as_array().unwrap() {
        let key = r["key"].as_str().unwrap().as_bytes();
        registry.apply_record(Some(key), Some(r["value"].as_str().unwrap().as_bytes()));
    }
    let text_id = u32::try_from(generated["protoTextId"].as_u64().unwrap()).unwrap();
    let cases = generated["cases"].as_array().unwrap();
    let kinds: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    for kind in ["avro", "order", "refund", "item", "json"] {
        assert!(kinds.contains(&kind), "the oracle made no {kind} sample");
    }
    let mut asked = Vec::new();
    let mut expected = Vec::new();
    for case in cases {
        let kind = case["case"].as_str().unwrap();
        let bytes = unhex(case["hex"].as_str().unwrap());
        let (text, shown) = decoded(&registry, &bytes);
        assert_eq!(
            shown, case["expected"],
            "{kind} {}: topicfs shows {text}",
            case["hex"]
        );
        assert!(
            !text.contains(": ") && !text.contains('\n'),
            "compact: {text}"
        );
        if kind != "avro" && kind != "json" {
            // The same body under the .proto text of the same file: compiled by topicfs.
            let mut again = bytes.clone();
            again[1..5].copy_from_slice(&text_id.to_be_bytes());
            assert_eq!(
                decoded(&registry, &again).1,
                case["expected"],
                "{kind} from .proto text"
            );
        }
        // Encoding writes the subject's latest schema's first message: a nested or second
        // message of a Protobuf file is decoded only.
        if kind == "refund" || kind == "item" {
            continue;
        }
        let subject = case["subject"].as_str().unwrap();
        let encoded = registry
            .encode(subject, text.as_bytes())
            .unwrap_or_else(|e| panic!("{text}: {e:?}"))
            .expect("the subject has a schema");
        assert_eq!(Registry::wire_id(&encoded), Registry::wire_id(&bytes));
        assert_eq!(decoded(&registry, &encoded).1, case["expected"]);
        asked.push(json!({"case": kind, "hex": hex(&encoded)}));
        expected.push(case["expected"].clone());
    }
    let read_back = oracle("readback", Some(&Value::Array(asked)));
    assert_eq!(
        read_back,
        Value::Array(expected),
        "Confluent's deserializers read back"
    );
}

/// The corners production topics hit, against Confluent's serdes (tests/schema/hostile.py):
/// Avro recursive and twice-named types, records of one short name in two namespaces in one
/// union, decimals of 38 and 40 digits, timestamps and dates before 1970 and near years 1 and
/// 9999, NaN and the infinities; Protobuf messages nested after a map (message indexes
/// `[0, 1, 0]`), oneof and `optional` at their default, open enums, well-known types (`Any`,
/// `Duration`, `FieldMask`, `Empty`, `Value`, wrappers) and an import by reference, as
/// Confluent registers it and as `.proto` text; JSON Schema with local `$ref`s and `$ref`s
/// to another subject's schema.
#[test]
fn confluent_serdes_and_the_registry_agree_on_hostile_schemas() {
    let generated = common::schema::script_oracle("hostile.py", "generate", None);
    let registry = Registry::new();
    for r in generated["records"].as_array().unwrap() {
        let key = r["key"].as_str().unwrap().as_bytes();
        registry.apply_record(Some(key), Some(r["value"].as_str().unwrap().as_bytes()));
    }
    let text_id = u32::try_from(generated["protoTextId"].as_u64().unwrap()).unwrap();
    let mut failures = Vec::new();
    let mut asked = Vec::new();
    let mut expected = Vec::new();
    for case in generated["cases"].as_array().unwrap() {
        let kind = case["case"].as_str().unwrap();
        let bytes = unhex(case["hex"].as_str().unwrap());
        let mut out = Vec::new();
        let shown = match registry.decode_into(&bytes, &mut out) {
            Ok(_) => String::from_utf8(out).unwrap(),
            Err(e) => {
                failures.push(format!("{kind} {}: not decoded: {e:?}", case["hex"]));
                continue;
            }
        };
        let value: Value = serde_json::from_str(&shown).unwrap();
        if value != case["expected"] {
            failures.push(format!(
                "{kind}: topicfs shows {shown}\n  Confluent: {}",
                case["expected"]
            ));
        }
        if !matches!(kind, "avro" | "json" | "jsonref") {
            let mut again = bytes.clone();
            again[1..5].copy_from_slice(&text_id.to_be_bytes());
            let mut out = Vec::new();
            match registry.decode_into(&again, &mut out) {
                Ok(_) if serde_json::from_slice::<Value>(&out).unwrap() == case["expected"] => {}
                other => failures.push(format!(
                    "{kind} from .proto text: {other:?} {}",
                    String::from_utf8_lossy(&out)
                )),
            }
        }
        if !matches!(kind, "avro" | "json" | "jsonref" | "outer") {
            continue;
        }
        let subject = case["subject"].as_str().unwrap();
        match registry.encode(subject, shown.as_bytes()) {
            Ok(Some(encoded)) => {
                asked.push(json!({"case": kind, "hex": hex(&encoded)}));
                expected.push(case["expected"].clone());
            }
            other => failures.push(format!("{kind}: {shown} not encoded: {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let read_back =
        common::schema::script_oracle("hostile.py", "readback", Some(&Value::Array(asked)));
    assert_eq!(
        read_back,
        Value::Array(expected),
        "Confluent's deserializers read back"
    );
}
