#!/usr/bin/env python3
"""Figure 15's data and its Python side: Avro values of about 100 bytes in Confluent's wire
format (byte 0, schema id 1, the Avro body), and Confluent's own AvroDeserializer over the same
bytes.

Usage: avro.py gen PREFIX N      writes PREFIX.schemas.jsonl (the `_schemas` record to append
                                 to `_schemas/append.jsonl`), PREFIX.values.jsonl (the N values
                                 as `{"value": {"base64": ...}}` lines for `append.jsonl`) and
                                 PREFIX.bin (the same values, each after a 4-byte length)
       avro.py deserialize FILE  reads FILE.bin's values, then times confluent-kafka's
                                 AvroDeserializer over all of them -> prints the seconds
       avro.py first FILE K      the first K values as the deserializer returns them (JSON lines)
"""

import base64
import io
import json
import struct
import sys
import time

import fastavro

SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "qty", "type": "int"},
    ],
}
SUBJECT = "avro-value"


def value(i):
    return {
        "id": 1_000_000_000 + i,
        "customer": "customer-%08d" % (i * 7919 % 100_000_000),
        "amount": (i % 100_000) / 100,
        "paid": i % 3 == 0,
        "status": ("NEW", "PAID", "SHIPPED")[i % 3],
        "tags": ["tag-%d" % (i % 17), "region-%d" % (i % 5)],
        "note": None if i % 2 else "note %d for order" % i,
        "qty": i % 1000,
    }


def gen(prefix, n):
    parsed = fastavro.parse_schema(SCHEMA)
    key = {"keytype": "SCHEMA", "subject": SUBJECT, "version": 1, "magic": 1}
    reg = {"subject": SUBJECT, "version": 1, "id": 1, "schema": json.dumps(SCHEMA), "deleted": False}
    with open(prefix + ".schemas.jsonl", "w") as f:
        f.write(json.dumps({"key": json.dumps(key), "value": json.dumps(reg)}) + "\n")
    with open(prefix + ".values.jsonl", "w") as vj, open(prefix + ".bin", "wb") as vb:
        for i in range(n):
            buf = io.BytesIO()
            buf.write(b"\0\0\0\0\1")
            fastavro.schemaless_writer(buf, parsed, value(i))
            b = buf.getvalue()
            vj.write('{"value":{"base64":"%s"}}\n' % base64.b64encode(b).decode())
            vb.write(struct.pack(">I", len(b)) + b)


def values(prefix):
    data = open(prefix + ".bin", "rb").read()
    out, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from(">I", data, at)
        out.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return out


def deserializer():
    from confluent_kafka.schema_registry import Schema
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
        MockSchemaRegistryClient,
    )
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = MockSchemaRegistryClient({"url": "mock://bench"})
    assert client.register_schema(SUBJECT, Schema(json.dumps(SCHEMA), "AVRO")) == 1
    return AvroDeserializer(client), SerializationContext("avro", MessageField.VALUE)


def main():
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "deserialize":
        vs = values(sys.argv[2])
        de, ctx = deserializer()
        t0 = time.perf_counter()
        for v in vs:
            de(v, ctx)
        print("%.6f" % (time.perf_counter() - t0))
    else:
        de, ctx = deserializer()
        for v in values(sys.argv[2])[:int(sys.argv[3])]:
            print(json.dumps(de(v, ctx)))


if __name__ == "__main__":
    main()
