"""What the Confluent-serdes oracles (oracle.py, hostile.py) share: .proto files compiled by
grpc_tools for the Python Protobuf serdes, and a mock registry's schemas as `_schemas`
records, as Confluent's Schema Registry writes them to its topic."""

import importlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_protos(*names):
    """Compiles tests/schema/<name>.proto for each name; their `<name>_pb2` modules."""
    out = tempfile.mkdtemp(prefix="serdes-proto-")
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I" + HERE, "--python_out=" + out]
        + [os.path.join(HERE, n + ".proto") for n in names],
        check=True,
    )
    sys.path.insert(0, out)
    return [importlib.import_module(n + "_pb2") for n in names]


def schema_record(subject, version, id, schema):
    """The `_schemas` record of one registered version: key and value as JSON text."""
    value = {"subject": subject, "version": version, "id": id, "schema": schema.schema_str, "deleted": False}
    if schema.schema_type != "AVRO":
        value["schemaType"] = schema.schema_type
    refs = schema.references or []
    if refs:
        value["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]
    key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
    return {"key": json.dumps(key), "value": json.dumps(value)}


def schema_records(client):
    """Every version a (mock) registry client holds, as `_schemas` records."""
    records = []
    for subject in sorted(client.get_subjects()):
        for version in client.get_versions(subject):
            reg = client.get_version(subject, version)
            records.append(schema_record(subject, version, reg.schema_id, reg.schema))
    return records
