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
