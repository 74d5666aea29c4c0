"""Part 17's oracle: confluent-kafka's Python Producer and Consumer with its AvroSerializer and
AvroDeserializer (the schemas in its MockSchemaRegistryClient, under the same ids as the
`_schemas` records this script produces, as a registry would).

  schemacheck.py produce BOOT TOPIC N   the registry's records of TOPIC-value into `_schemas`
                                        (made compacted, one partition, as a registry makes it),
                                        then N Avro values into TOPIC; prints them as JSON lines
  schemacheck.py consume BOOT TOPIC     every value of TOPIC read by the deserializer, as JSON
                                        lines (from the beginning to the end)
"""

import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

SCHEMA = {
    "type": "record",
    "name": "Reading",
    "namespace": "interop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "sensor", "type": "string"},
        {"name": "value", "type": "double"},
        {"name": "unit", "type": {"type": "enum", "name": "Unit", "symbols": ["C", "F"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


# A later subject's schema (ids are global: it gets id 2).
LATE = dict(SCHEMA, name="Late", fields=SCHEMA["fields"] + [{"name": "late", "type": "boolean", "default": False}])


def schema_of(topic):
    return SCHEMA if topic == "av17" else LATE


def registry(topic):
    """The mock registry as the registry of the test: av17-value (id 1), then TOPIC-value
    (id 2) for another topic."""
    client = MockSchemaRegistryClient({"url": "mock://part17-" + topic})
    client.register_schema("av17-value", Schema(json.dumps(SCHEMA), "AVRO"))
    if topic != "av17":
        client.register_schema(topic + "-value", Schema(json.dumps(LATE), "AVRO"))
    return client


def schema_records(client):
    for subject in client.get_subjects():
        for version in client.get_versions(subject):
            reg = client.get_version(subject, version)
            key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
            value = {"subject": subject, "version": version, "id": reg.schema_id,
                     "schema": reg.schema.schema_str, "deleted": False}
            yield json.dumps(key), json.dumps(value)


def produce(boot, topic, n):
    admin = AdminClient({"bootstrap.servers": boot})
    if "_schemas" not in admin.list_topics(timeout=30).topics:
        fs = admin.create_topics([NewTopic("_schemas", 1, 1, config={"cleanup.policy": "compact"})])
        for f in fs.values():
            f.result()
    client = registry(topic)
    p = Producer({"bootstrap.servers": boot})
    for k, v in schema_records(client):
        p.produce("_schemas", key=k.encode(), value=v.encode())
    ser = AvroSerializer(client, json.dumps(schema_of(topic)), conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    for i in range(n):
        v = {"id": i, "sensor": "s-%d" % (i % 3), "value": i * 1.5, "unit": "C" if i % 2 else "F",
             "note": None if i % 2 else "n%d" % i}
        if topic != "av17":
            v["late"] = True
        p.produce(topic, value=ser(v, ctx))
        print(json.dumps(v))
    assert p.flush(30) == 0


def consume(boot, topic):
    client = registry(topic)
    de = AvroDeserializer(client)
    c = Consumer({"bootstrap.servers": boot, "group.id": "part17-check", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.subscribe([topic])
    ctx = SerializationContext(topic, MessageField.VALUE)
    eof = set()
    while True:
        m = c.poll(30)
        if m is None:
            break
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                if len(eof) == len(c.assignment()):
                    break
                continue
            raise SystemExit(str(m.error()))
        print(json.dumps(de(m.value(), ctx)))
    c.close()


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        produce(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        consume(sys.argv[2], sys.argv[3])
