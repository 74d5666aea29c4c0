"""A small stand-in for a schema registry's REST API, for the tests: no real registry is served
on the test machine. It answers Confluent's documented endpoints `GET /schemas/ids/{id}`,
`GET /subjects/{subject}/versions/latest` and `GET /subjects/{subject}/versions/{version}`
from the `_schemas` records of `oracle.py generate`'s output (argv[1]), requires HTTP basic
auth `user:secret`, prints its port on stdout, and appends each path asked to argv[2].
"""

import base64
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

generated = json.load(open(sys.argv[1]))
asked_log = sys.argv[2]
by_id = {}
versions = {}
for r in generated["records"]:
    v = json.loads(r["value"])
    by_id[v["id"]] = v
    versions.setdefault(v["subject"], {})[v["version"]] = v
AUTH = "Basic " + base64.b64encode(b"user:secret").decode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with open(asked_log, "a") as f:
            f.write(self.path + "\n")
        if self.headers.get("Authorization") != AUTH:
            return self.answer(401, {"error_code": 401, "message": "Unauthorized"})
        parts = [urllib.parse.unquote(p) for p in self.path.strip("/").split("/")]
        found = None
        if len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
            v = by_id.get(int(parts[2]))
            if v:
                found = {"schema": v["schema"]}
                for k in ("schemaType", "references"):
                    if k in v:
                        found[k] = v[k]
        elif len(parts) == 4 and parts[0] == "subjects" and parts[2] == "versions":
            vs = versions.get(parts[1], {})
            if parts[3] == "latest" and vs:
                found = vs[max(vs)]
            elif parts[3].isdigit():
                found = vs.get(int(parts[3]))
        if found is None:
            return self.answer(404, {"error_code": 40403, "message": "Schema not found"})
        self.answer(200, found)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
