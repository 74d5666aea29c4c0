//! Schema-encoded values rendered as JSON text: ~100-byte Avro values (a record of a long,
//! strings, a double, an enum, a timestamp, a nullable string and a map) decoded by
//! `Registry::decode_into`, the way every view renders them. Throughput is in wire bytes.
//! Run: `cargo bench --bench schema`; `cargo test --all-targets` runs it once as a test.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use topicfs::schema::Registry;

const SCHEMA: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
    {"name":"id","type":"long"},
    {"name":"customer","type":"string"},
    {"name":"email","type":["null","string"]},
    {"name":"total","type":"double"},
    {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
    {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
    {"name":"attrs","type":{"type":"map","values":"string"}}]}"#;

/// 1,000 values of about 100 bytes, each as Confluent's serializer writes it.
fn values(registry: &Registry) -> Vec<Vec<u8>> {
    (0..1000)
        .map(|i| {
            let json = format!(
                r#"{{"id":{},"customer":"customer-{i:08}","email":"user{i}@example.com","total":{}.25,
                "status":"PAID","at":"2026-12-04T10:00:{:02}.123Z","attrs":{{"region":"eu-west-1","tier":"gold"}}}}"#,
                1_000_000 + i,
                i * 7,
                i % 60
            );
            registry.encode("orders-value", json.as_bytes()).unwrap().unwrap()
        })
        .collect()
}

fn decode(c: &mut Criterion) {
    let registry = Registry::new();
    let key = br#"{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}"#;
    let value =
        serde_json::json!({"subject": "orders-value", "version": 1, "id": 1, "schema": SCHEMA});
    registry.apply_record(Some(key), Some(value.to_string().as_bytes()));
    let values = values(&registry);
    let bytes: usize = values.iter().map(Vec::len).sum();
    assert!(
        (80..=120).contains(&(bytes / values.len())),
        "{} bytes a value",
        bytes / values.len()
    );
    let mut g = c.benchmark_group("avro_decode");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("1000_values_100B", |b| {
        let mut out = Vec::with_capacity(256 * 1024);
        b.iter(|| {
            out.clear();
            for v in &values {
                registry.decode_into(black_box(v), &mut out).unwrap();
                out.push(b'\n');
            }
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
