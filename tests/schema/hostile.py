"""Confluent's own Python serdes against the corners production topics hit (tests/schema_oracle.rs).

`hostile.py generate`: registers the schemas below in confluent-kafka's mock registry
(Avro with recursive and twice-referenced named types, same short names in two namespaces,
decimals, dates and timestamps before 1970; Protobuf with nested messages after a map, oneof,
optional, well-known types and an import by reference; JSON Schema with local `$ref`s,
integers near the 64-bit limits, and a `$ref` to another subject's schema), serializes
samples with AvroSerializer, ProtobufSerializer and JSONSerializer, and prints JSON: the
registry's schemas as `_schemas` records (the Protobuf file once more as `.proto` text, its
import by reference as text too) and each sample's bytes (hex) with what the matching
deserializer returns, in topicfs's shown form.

`hostile.py readback`: reads [{"case": name, "hex": bytes}] on stdin and prints what the
deserializers make of them, in the same form.
"""

import base64
import datetime
import decimal
import json
import math
import os
import struct
import sys
import uuid

import fastavro
from confluent_kafka.schema_registry import Schema, SchemaReference
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

ADDR = {
    "type": "record",
    "name": "Addr",
    "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"], "default": None}],
}
TREE = {
    "type": "record",
    "name": "Tree",
    "namespace": "h.t",
    "aliases": ["OldTree"],
    "fields": [
        {"name": "label", "type": "string", "aliases": ["name"]},
        {"name": "kids", "type": {"type": "array", "items": "Tree"}, "default": []},
        {"name": "next", "type": ["null", "Tree"], "default": None},
        {"name": "home", "type": ADDR},
        {"name": "work", "type": "Addr"},
        {"name": "by_name", "type": {"type": "map", "values": "Addr"}, "default": {}},
        {"name": "other", "type": {"type": "record", "name": "Addr", "namespace": "h.o",
                                    "fields": [{"name": "x", "type": "long"}]}},
        {"name": "pick", "type": ["null", "h.t.Addr", "h.o.Addr", "string"]},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"], "default": "RED"},
         "default": "GREEN"},
        {"name": "colors", "type": {"type": "array", "items": "Color"}},
        {"name": "d0", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0}},
        {"name": "d9", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 9}},
        {"name": "dfix", "type": {"type": "fixed", "name": "Big", "size": 20, "logicalType": "decimal",
                                   "precision": 40, "scale": 4}},
        {"name": "ts_neg", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsu_neg", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "old", "type": {"type": "int", "logicalType": "date"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "f", "type": "float"},
        {"name": "dd", "type": "double"},
        {"name": "tsn", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None},
        {"name": "un", "type": ["null", "string", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "money", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}],
         "default": None},
        {"name": "flag", "type": "boolean", "default": True},
        {"name": "blob", "type": "bytes", "default": "\u00ff\u0000A"},
    ],
}


def tree_samples():
    leaf = {"label": "leaf", "kids": [], "next": None, "home": {"city": "A", "zip": None},
            "work": {"city": "B", "zip": 1}, "by_name": {}, "other": {"x": -1}, "pick": None,
            "color": "RED", "colors": [], "d0": decimal.Decimal(0), "d9": decimal.Decimal("0.000000001"),
            "dfix": decimal.Decimal("0.0001"),
            "ts_neg": datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
            "tsu_neg": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            "old": datetime.date(1969, 12, 31), "uid": uuid.UUID(int=0), "lts": datetime.datetime(1969, 12, 31, 0, 0),
            "f": 0.1, "dd": -0.0, "tsn": None, "un": None, "money": None, "flag": False, "blob": b""}
    root = dict(leaf)
    root.update(
        label="root \u2603 \"q\"",
        kids=[dict(leaf, label="k1"), dict(leaf, label="k2", kids=[dict(leaf, label="k2a")])],
        next=dict(leaf, label="n", next=dict(leaf, label="nn")),
        by_name={"x": {"city": "X", "zip": -5}, "": {"city": "", "zip": None}},
        pick=("h.o.Addr", {"x": 2**62}),
        color="GREEN",
        colors=["GREEN", "RED", "GREEN"],
        d0=decimal.Decimal("-99999999999999999999999999999999999999"),
        d9=decimal.Decimal("-0.123456789"),
        dfix=decimal.Decimal("-123456789012345678901234567890123456.7890"),
        ts_neg=datetime.datetime(1583, 10, 15, 0, 0, 0, 1000, tzinfo=UTC),
        tsu_neg=datetime.datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        old=datetime.date(1600, 2, 29),
        uid=uuid.UUID("ffffffff-0000-4000-8000-123456789abc"),
        lts=datetime.datetime(1900, 1, 1, 12, 0, 0, 5000),
        f=3.4028234663852886e38,
        dd=5e-324,
        tsn=datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
        un=datetime.datetime(1960, 6, 1, tzinfo=UTC),
        money=decimal.Decimal("-9999.99"),
        flag=True,
        blob=b"\x00\xff",
    )
    third = dict(leaf, label="t", pick=("h.t.Addr", {"city": "C", "zip": 0}), un="text", f=float("-inf"),
                 dd=float("nan"), money=decimal.Decimal("0.10"))
    fourth = dict(leaf, label="s", pick="just a string", f=float("nan"), dd=float("inf"))
    return [root, leaf, third, fourth]


def shortest_float32(v):
    """A float's value as topicfs shows it: the shortest decimal that reads back the same
    float (fastavro widens it to the nearest double, 0.1 to 0.10000000149011612)."""
    bits = struct.pack("<f", v)
    for digits in range(1, 18):
        t = float("%.*g" % (digits, v))
        try:
            if struct.pack("<f", t) == bits:
                return t
        except OverflowError:
            continue
    return v


class AvroShown:
    def __init__(self, schema):
        self.parsed = fastavro.parse_schema(schema)
        self.named = self.parsed["__named_schemas"]

    def resolve(self, s):
        if not isinstance(s, str):
            return s
        # fastavro leaves a record's reference to itself as written: in the root's namespace.
        return self.named.get(s) or self.named.get(TREE["namespace"] + "." + s) or s

    @staticmethod
    def number(v):
        if isinstance(v, float) and not math.isfinite(v):
            return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
        return v

    def branch_name(self, s):
        if isinstance(s, str):
            return s
        if s["type"] in ("record", "enum", "fixed"):
            return s["name"]
        t = s["type"]
        return t if isinstance(t, str) else self.branch_name(t)

    def fits(self, s, v):
        s = self.resolve(s)
        t = s if isinstance(s, str) else s["type"]
        lt = None if isinstance(s, str) else s.get("logicalType")
        if lt in ("timestamp-millis", "timestamp-micros"):
            return isinstance(v, datetime.datetime)
        if isinstance(v, dict):
            return t in ("record", "map")
        if isinstance(v, str):
            return t in ("string", "enum")
        if isinstance(v, bool):
            return t == "boolean"
        if isinstance(v, int):
            return t in ("int", "long")
        return False

    def shown(self, s, v):
        s = self.resolve(s)
        if isinstance(s, list):
            if v is None:
                return None
            rest = [b for b in s if b != "null"]
            if isinstance(v, tuple):
                name, v = v
                branch = next(b for b in rest if self.branch_name(self.resolve(b)) == name)
            elif len(rest) == 1:
                branch = rest[0]
            else:
                branch = next(b for b in rest if self.fits(b, v))
            if len(s) == 2 and len(rest) == 1:
                return self.shown(branch, v)
            return {self.branch_name(self.resolve(branch)): self.shown(branch, v)}
        if isinstance(s, str):
            if s == "bytes":
                return {"base64": base64.b64encode(v).decode()}
            if s == "float" and math.isfinite(v):
                return shortest_float32(v)
            return self.number(v)
        lt = s.get("logicalType")
        t = s["type"]
        if lt == "decimal":
            return format(v, "f")
        if lt == "date":
            return v.isoformat()
        if lt in ("timestamp-millis", "timestamp-micros"):
            v = v.astimezone(UTC)
            # (strftime's %Y does not pad years before 1000.)
            day = "%04d-%02d-%02dT%02d:%02d:%02d." % (v.year, v.month, v.day, v.hour, v.minute, v.second)
            if lt == "timestamp-millis":
                return day + "%03dZ" % (v.microsecond // 1000)
            return day + "%06dZ" % v.microsecond
        if lt == "uuid":
            return str(v)
        if lt == "local-timestamp-millis":
            return (v - datetime.datetime(1970, 1, 1)) // datetime.timedelta(milliseconds=1)
        if t == "record":
            return {f["name"]: self.shown(f["type"], v[f["name"]]) for f in s["fields"]}
        if t == "fixed":
            return {"base64": base64.b64encode(v).decode()}
        if t == "array":
            return [self.shown(s["items"], x) for x in v]
        if t == "map":
            return {k: self.shown(s["values"], x) for k, x in v.items()}
        if t == "enum":
            return v
        return self.shown(t, v)


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Ev",
    "type": "object",
    "definitions": {"pt": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
    "properties": {
        "z": {"type": "string"},
        "a": {"$ref": "#/definitions/pt"},
        "pts": {"type": "array", "items": {"$ref": "#/definitions/pt"}},
        "big": {"type": "integer"},
        "n": {"type": "number"},
    },
}


ADDRESS = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$id": "address.json",
    "type": "object",
    "properties": {"city": {"type": "string"}, "zip": {"$ref": "#/definitions/zip"}},
    "required": ["city"],
    "additionalProperties": False,
    "definitions": {"zip": {"type": "integer", "minimum": 0}},
}
CUSTOMER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"},
                   "zips": {"type": "array", "items": {"$ref": "address.json#/definitions/zip"}}},
    "required": ["name"],
}


class Oracle:
    def __init__(self):
        self.client = MockSchemaRegistryClient({"url": "mock://hostile"})
        self.common, self.pb = compile_protos("hostile_common", "hostile")
        self.tree = AvroShown(TREE)
        self.avro_ser = AvroSerializer(self.client, json.dumps(TREE))
        self.avro_de = AvroDeserializer(self.client, return_record_name=True)
        self.json_ser = JSONSerializer(json.dumps(JSON_SCHEMA), self.client)
        self.json_de = JSONDeserializer(None, schema_registry_client=self.client)
        # A JSON Schema referring to another subject's, as Confluent's clients register it.
        self.client.register_schema("address", Schema(json.dumps(ADDRESS), "JSON"))
        customer = Schema(json.dumps(CUSTOMER), "JSON", [SchemaReference("address.json", "address", 1)])
        self.client.register_schema("custs-value", customer)
        self.ref_ser = JSONSerializer(customer, self.client,
                                      conf={"auto.register.schemas": False, "use.latest.version": True})
        pb = self.pb
        self.msgs = {"outer": pb.Outer, "second": pb.Second, "deep": pb.Outer.Inner.Deep, "inner": pb.Outer.Inner}
        conf = {"use.deprecated.format": False}
        self.pb_ser = {k: ProtobufSerializer(m, self.client, conf) for k, m in self.msgs.items()}
        self.pb_de = {k: ProtobufDeserializer(m, conf) for k, m in self.msgs.items()}

    def ctx(self, topic):
        return SerializationContext(topic, MessageField.VALUE)

    def outers(self):
        pb, c = self.pb, self.common
        inner = pb.Outer.Inner(deep=pb.Outer.Inner.Deep(xs=[1, -2, 2**31 - 1], level=c.HIGH), flags={True: "t", False: ""})
        full = pb.Outer(
            inners={"a": inner, "": pb.Outer.Inner()},
            inner=inner,
            maybe=0,
            levels=[c.HIGH, c.LOW, 7],
            price=c.Money(currency="EUR", units=-(2**63)),
            took={"seconds": -3, "nanos": -500000000},
            mask={"paths": ["a.b_c", "d"]},
            nothing={},
            sv={"value": ""},
            bv={"value": False},
            byv={"value": b"\x00\x01"},
            f64=2**64 - 1,
            sf32=-(2**31),
            neg=-1,
            u32=2**32 - 1,
            renamed="r",
            lv={-1: c.HIGH, 5: c.LOW},
            when={"seconds": -62135596800, "nanos": 1000},
            dd=float("inf"),
            ff=0.1,
            u64v={"value": 2**64 - 1},
        )
        full.any.Pack(c.Money(currency="USD", units=7))
        full.val.list_value.values.add().string_value = "s"
        full.val.list_value.values.add().null_value = 0
        full.list.values.add().number_value = 1.5
        full.list.values.add().struct_value.update({"k": [True]})
        texts = pb.Outer(text="", maybe=-5, dd=float("nan"), ff=float("-inf"))
        nums = pb.Outer(num=0, when={"seconds": 253402300799, "nanos": 999999999})
        return [full, texts, nums, pb.Outer()]

    def cases(self):
        out = []
        for v in tree_samples():
            out.append(("avro", "trees", self.avro_ser(v, self.ctx("trees"))))
        for o in self.outers():
            out.append(("outer", "protos", self.pb_ser["outer"](o, self.ctx("protos"))))
        pb, c = self.pb, self.common
        deep = pb.Outer.Inner.Deep(xs=[3], level=c.HIGH)
        out.append(("second", "protos", self.pb_ser["second"](pb.Second(deep=deep), self.ctx("protos"))))
        out.append(("deep", "protos", self.pb_ser["deep"](deep, self.ctx("protos"))))
        out.append(("inner", "protos", self.pb_ser["inner"](pb.Outer.Inner(flags={True: "x"}), self.ctx("protos"))))
        events = [
            {"z": "\u00e9 \u2713 \u0000 \"", "a": {"x": 1}, "big": 2**64 - 1, "n": 1.5,
             "pts": [{"x": -(2**63)}, {"x": 2**64 - 1}]},
            {"n": -2, "z": ""},
        ]
        for e in events:
            out.append(("json", "jsons", self.json_ser(e, self.ctx("jsons"))))
        for c in [{"name": "a", "home": {"city": "x", "zip": 5}, "zips": [0, 7]}, {"name": ""}]:
            out.append(("jsonref", "custs", self.ref_ser(c, self.ctx("custs"))))
        return out

    def shown(self, case, data, topic):
        if case == "avro":
            return self.tree.shown(TREE, self.avro_de(data, self.ctx(topic)))
        if case in ("json", "jsonref"):
            return self.json_de(data, self.ctx(topic))
        return MessageToDict(self.pb_de[case](data, self.ctx(topic)))

    def records(self):
        return schema_records(self.client)


def main():
    oracle = Oracle()
    cases = oracle.cases()
    topics = {case: topic for case, topic, _ in cases}
    if sys.argv[1] == "generate":
        # The Protobuf file as .proto text too, its import by reference as text.
        with open(os.path.join(HERE, "hostile_common.proto")) as f:
            common = Schema(f.read(), "PROTOBUF")
        common_id = oracle.client.register_schema("hostile-common-text", common)
        with open(os.path.join(HERE, "hostile.proto")) as f:
            ref = SchemaReference("hostile_common.proto", "hostile-common-text", 1)
            text_id = oracle.client.register_schema("prototext-value", Schema(f.read(), "PROTOBUF", [ref]))
        out = {
            "records": oracle.records(),
            "protoTextId": text_id,
            "commonTextId": common_id,
            "cases": [
                {"case": case, "subject": topic + "-value", "hex": data.hex(),
                 "expected": oracle.shown(case, data, topic)}
                for case, topic, data in cases
            ],
        }
    else:
        asked = json.load(sys.stdin)
        out = [oracle.shown(a["case"], bytes.fromhex(a["hex"]), topics[a["case"]]) for a in asked]
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
