"""Confluent's own Python serdes as the oracle of topicfs's schema codec.

`oracle.py generate`: registers the test schemas in confluent-kafka's mock registry,
serializes sample values with AvroSerializer, ProtobufSerializer and JSONSerializer, and
prints JSON: the registry's schemas as `_schemas` records, and each sample's bytes (hex) with
what the matching deserializer returns, converted to topicfs's shown form.

`oracle.py readback`: reads [{"case": name, "hex": bytes}] on stdin (values topicfs encoded)
and prints what the deserializers make of them, in the same form.
"""

import base64
import datetime
import decimal
import json
import os
import sys
import uuid

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import (
    ProtobufDeserializer,
    ProtobufSerializer,
)
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf.json_format import MessageToDict
from serdes import compile_protos, schema_records

HERE = os.path.dirname(os.path.abspath(__file__))
UTC = datetime.timezone.utc

CARD = {
    "type": "record",
    "name": "Card",
    "fields": [
        {"name": "last4", "type": "string"},
        {"name": "expires", "type": {"type": "int", "logicalType": "date"}},
    ],
}
LINE = {
    "type": "record",
    "name": "Line",
    "fields": [
        {"name": "sku", "type": "string"},
        {"name": "n", "type": "int"},
        {"name": "sub", "type": {"type": "map", "values": {"type": "array", "items": ["null", "double"]}}},
    ],
}
AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "ok", "type": "boolean"},
        {"name": "qty", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "price", "type": "double"},
        {"name": "note", "type": "string"},
        {"name": "raw", "type": "bytes"},
        {"name": "nothing", "type": "null"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {"name": "payment", "type": ["null", "string", "long", CARD]},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "fee", "type": {"type": "fixed", "name": "Fee", "size": 8, "logicalType": "decimal", "precision": 12, "scale": 3}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "span", "type": {"type": "fixed", "name": "Span", "size": 12, "logicalType": "duration"}},
        {"name": "lines", "type": {"type": "array", "items": LINE}},
        {"name": "maybe_card", "type": ["null", "shop.Card"]},
        {"name": "choice", "type": ["int", {"type": "array", "items": "string"}, {"type": "map", "values": "double"}]},
        {"name": "either", "type": ["string", "null"]},
        {"name": "extra", "type": "string", "default": "x"},
    ],
}


def avro_samples():
    base = {
        "id": 1,
        "ok": True,
        "qty": -7,
        "ratio": 1.5,
        "price": 19.99,
        "note": "quote \" backslash \\ tab \t newline \n é ✓",
        "raw": b"\x00\x01\xfe\xff",
        "nothing": None,
        "status": "PAID",
        "hash": b"abcd",
        "tags": ["a", "b"],
        "attrs": {"k": 1, "big": 2**62},
        "coupon": None,
        "payment": None,
        "amount": decimal.Decimal("12.34"),
        "fee": decimal.Decimal("-0.005"),
        "day": datetime.date(2026, 12, 4),
        "at_ms": datetime.datetime(2026, 12, 4, 10, 0, 0, 123000, tzinfo=UTC),
        "at_us": datetime.datetime(1969, 7, 20, 20, 17, 40, 654321, tzinfo=UTC),
        "uid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "t_ms": datetime.time(12, 30, 1, 5000),
        "local_ms": datetime.datetime(2026, 1, 2, 3, 4, 5, 6000),
        "t_us": datetime.time(23, 59, 59, 999999),
        "local_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 1),
        "span": b"\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00",
        "lines": [],
        "maybe_card": None,
        "extra": "y",
        "choice": 7,
        "either": "there",
    }
    second = dict(base)
    second.update(
        id=-(2**63),
        ok=False,
        qty=2**31 - 1,
        price=-1e300,
        note="",
        raw=b"",
        status="NEW",
        tags=[],
        attrs={},
        coupon="SAVE10",
        payment={"last4": "4242", "expires": datetime.date(2030, 1, 31)},
        amount=decimal.Decimal("-99999999.99"),
        fee=decimal.Decimal("123456789.000"),
        day=datetime.date(1, 1, 1),
        at_ms=datetime.datetime(1900, 2, 28, 23, 59, 59, 999000, tzinfo=UTC),
        lines=[
            {"sku": "X-1", "n": 3, "sub": {"p": [None, 2.25, -0.5]}},
            {"sku": "Y", "n": 0, "sub": {}},
        ],
        maybe_card={"last4": "0000", "expires": datetime.date(1970, 1, 1)},
    )
    third = dict(base)
    second.update(choice=["p", "q"], either=None)
    third.update(choice={"w": 0.125}, payment="cash", amount=decimal.Decimal("0.01"), fee=decimal.Decimal("0"))
    fourth = dict(base)
    fourth.update(payment=2**40, amount=decimal.Decimal("-0.10"))
    return [base, second, third, fourth]


def named_types(schema, names, ns=""):
    if isinstance(schema, list):
        for b in schema:
            named_types(b, names, ns)
    elif isinstance(schema, dict):
        t = schema["type"]
        if t in ("record", "enum", "fixed"):
            full = schema["name"] if "." in schema["name"] or not ns else ns + "." + schema["name"]
            names[full] = schema
            names[schema["name"]] = schema
            ns = schema.get("namespace", full.rsplit(".", 1)[0] if "." in full else ns)
            for f in schema.get("fields", []):
                named_types(f["type"], names, ns)
        elif t == "array":
            named_types(schema["items"], names, ns)
        elif t == "map":
            named_types(schema["values"], names, ns)


def avro_name(schema, names):
    if isinstance(schema, str):
        schema = names.get(schema, schema)
    if isinstance(schema, str):
        return schema
    if schema["type"] in ("record", "enum", "fixed"):
        full = [k for k, v in names.items() if v is schema and "." in k]
        return full[0] if full else schema["name"]
    return schema["type"] if isinstance(schema["type"], str) else avro_name(schema["type"], names)


def python_type_fits(schema, v, names):
    if isinstance(schema, str):
        schema = names.get(schema, schema)
    t = schema if isinstance(schema, str) else schema["type"]
    if isinstance(v, dict):
        return t in ("record", "map")
    if isinstance(v, list):
        return t == "array"
    if isinstance(v, bool):
        return t == "boolean"
    if isinstance(v, int):
        return t in ("int", "long")
    if isinstance(v, str):
        return t in ("string", "enum")
    return False


def avro_shown(schema, v, names):
    """What the deserializer returned, in topicfs's shown form."""
    if isinstance(schema, str):
        schema = names.get(schema, schema)
    if isinstance(schema, list):
        if v is None:
            return None
        rest = [b for b in schema if b != "null"]
        if len(schema) == 2 and len(rest) == 1:
            return avro_shown(rest[0], v, names)
        branch = next(b for b in rest if python_type_fits(b, v, names))
        return {avro_name(branch, names): avro_shown(branch, v, names)}
    if isinstance(schema, str):
        if schema == "bytes":
            return {"base64": base64.b64encode(v).decode()}
        return v
    logical = schema.get("logicalType")
    t = schema["type"]
    if logical == "decimal":
        return format(v, "f")
    if logical == "date":
        return v.isoformat()
    if logical == "timestamp-millis":
        return v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (v.microsecond // 1000)
    if logical == "timestamp-micros":
        return v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if logical == "uuid":
        return str(v)
    if logical == "time-millis":
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
    if logical == "local-timestamp-millis":
        epoch = datetime.datetime(1970, 1, 1)
        return (v - epoch) // datetime.timedelta(milliseconds=1)
    if logical == "time-micros":
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000000 + v.microsecond
    if logical == "local-timestamp-micros":
        epoch = datetime.datetime(1970, 1, 1)
        return (v - epoch) // datetime.timedelta(microseconds=1)
    if t == "record":
        return {f["name"]: avro_shown(f["type"], v[f["name"]], names) for f in schema["fields"]}
    if t == "fixed":
        return {"base64": base64.b64encode(v).decode()}
    if t == "array":
        return [avro_shown(schema["items"], x, names) for x in v]
    if t == "map":
        return {k: avro_shown(schema["values"], x, names) for k, x in v.items()}
    if isinstance(t, (dict, list)) or t in names:
        return avro_shown(t, v, names)
    return v


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Event",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
        "kind": {"enum": ["a", "b"]},
    },
    "required": ["name", "count"],
    "additionalProperties": False,
}


class Oracle:
    def __init__(self):
        self.client = MockSchemaRegistryClient({"url": "mock://oracle"})
        (self.pb,) = compile_protos("oracle")
        self.names = {}
        named_types(AVRO, self.names)
        avro_text = json.dumps(AVRO)
        self.avro_ser = AvroSerializer(schema_registry_client=self.client, schema_str=avro_text)
        self.avro_de = AvroDeserializer(schema_registry_client=self.client)
        self.json_ser = JSONSerializer(schema_str=json.dumps(JSON_SCHEMA), schema_registry_client=self.client)
        self.json_de = JSONDeserializer(schema_str=None, schema_registry_client=self.client)
        self.pb_ser = {
            m: ProtobufSerializer(m, self.client, {"use.deprecated.format": False})
            for m in (self.pb.Order, self.pb.Refund, self.pb.Order.Item)
        }
        self.pb_de = {
            m: ProtobufDeserializer(m, {"use.deprecated.format": False})
            for m in (self.pb.Order, self.pb.Refund, self.pb.Order.Item)
        }

    def ctx(self, topic):
        return SerializationContext(topic, MessageField.VALUE)

    def cases(self):
        """(case name, topic, bytes) of every sample, serialized by Confluent's serializers."""
        out = []
        for i, v in enumerate(avro_samples()):
            out.append(("avro", "orders", self.avro_ser(v, self.ctx("orders"))))
        pb = self.pb
        orders = [
            pb.Order(id=5, customer_name="Ann", items=[pb.Order.Item(sku="a", qty=2), pb.Order.Item(sku="b")],
                     counts={"x": 1, "y": -2}, card="visa", status=pb.Order.PAID, blob=b"\x00\xff",
                     total=2.5, gift=True, big=2**64 - 1, delta=-3, notes=["n1", "n2"]),
            pb.Order(account=-(2**63), customer_name="", created_at={"seconds": 1796378400, "nanos": 123000000},
                     wrapped={"value": 0}, ratio=0.1, by_id={-4: pb.Order.Item(sku="m")},
                     meta={"a": [1.5, "x", None, True], "b": {"c": "d"}},
                     history=[pb.Order.NEW, pb.Order.SHIPPED]),
            pb.Order(),
        ]
        for o in orders:
            out.append(("order", "proto", self.pb_ser[pb.Order](o, self.ctx("proto"))))
        out.append(("refund", "proto", self.pb_ser[pb.Refund](pb.Refund(order_ref="o-1", cents=-250), self.ctx("proto"))))
        out.append(("item", "proto", self.pb_ser[pb.Order.Item](pb.Order.Item(sku="z", qty=9), self.ctx("proto"))))
        events = [
            {"name": "e1", "count": 3, "tags": ["t"], "where": {"lat": 1.25, "lon": -2}},
            {"name": "e2", "count": 0, "kind": "b"},
        ]
        for e in events:
            out.append(("json", "events", self.json_ser(e, self.ctx("events"))))
        return out

    def shown(self, case, data, topic):
        if case == "avro":
            return avro_shown(AVRO, self.avro_de(data, self.ctx(topic)), self.names)
        if case == "json":
            return self.json_de(data, self.ctx(topic))
        msg = {"order": self.pb.Order, "refund": self.pb.Refund, "item": self.pb.Order.Item}[case]
        return MessageToDict(self.pb_de[msg](data, self.ctx(topic)))

    def schema_records(self):
        return schema_records(self.client)


def main():
    oracle = Oracle()
    cases = oracle.cases()
    topics = {case: topic for case, topic, _ in cases}
    if sys.argv[1] == "generate":
        # The same .proto as text, registered as a schema of its own: topicfs compiles it.
        with open(os.path.join(HERE, "oracle.proto")) as f:
            text_id = oracle.client.register_schema("prototext-value", Schema(f.read(), "PROTOBUF"))
        out = {
            "records": oracle.schema_records(),
            "protoTextId": text_id,
            "cases": [
                {"case": case, "subject": topic + "-value", "hex": data.hex(),
                 "expected": oracle.shown(case, data, topic)}
                for case, topic, data in cases
            ],
        }
    else:
        asked = json.load(sys.stdin)
        out = [oracle.shown(a["case"], bytes.fromhex(a["hex"]), topics[a["case"]]) for a in asked]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
