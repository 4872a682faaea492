"""Run the GPU policy pack the way the Pulumi CLI does, and print what it reports (tests/test_policy_pack.py).

Runs in the pack's own environment (.venv/tools/policy: pulumi-policy and the pulumi SDK it resolves with), never in
the project's: ``python policy_pack_client.py PACK_DIR REQUEST_JSON...`` (one request per stack). It starts the pack
as the CLI's ``pulumi-analyzer-policy-python`` starts a Python pack, from the virtualenv of PulumiPolicy.yaml
(``python -u -m pulumi.policy ENGINE PACK_DIR``: the pack's ``__main__`` builds its ``PolicyPack``, which serves the
Analyzer gRPC service and prints its port), then calls that service:
``GetAnalyzerInfo``, then per request ``Configure`` (its policy configuration), ``Analyze`` per resource (its
inputs) and ``AnalyzeStack`` once (every resource with its outputs). It prints one JSON document:
``{"pack": name, "sdkVersion": pulumi-policy's version, "policies": [{name, description, type, enforcementLevel}],
"results": [{"diagnostics": [{policy, urn, resource, message, enforcementLevel}]}]}``, a result per request.

REQUEST_JSON: ``{"resources": [{"type", "name", "urn", "inputs", "outputs"}], "config": {policy: {properties}}}``.
"""

import json
import subprocess
import sys

import grpc
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

LEVELS = {analyzer_pb2.ADVISORY: "advisory", analyzer_pb2.MANDATORY: "mandatory",
          analyzer_pb2.REMEDIATE: "remediate", analyzer_pb2.DISABLED: "disabled"}
TYPES = {analyzer_pb2.POLICY_TYPE_RESOURCE: "resource", analyzer_pb2.POLICY_TYPE_STACK: "stack"}


def _struct(values: dict) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(values)
    return struct


def _diagnostics(response, resource: str = "") -> list[dict]:
    """The response's violations; ``resource``: the resource an Analyze call was about (a stack policy names the
    resource by its URN instead)."""
    return [{"policy": d.policyName, "urn": d.urn, "resource": resource, "message": d.message,
             "enforcementLevel": LEVELS[d.enforcementLevel]} for d in response.diagnostics]


def _analyze(analyzer, request: dict) -> list[dict]:
    """Every violation the pack reports for one stack: Configure (an empty configuration resets the previous
    request's), Analyze per resource, AnalyzeStack once."""
    analyzer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig={
        name: analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.MANDATORY, properties=_struct(properties))
        for name, properties in (request.get("config") or {}).items()}), timeout=60)
    diagnostics = []
    for resource in request["resources"]:
        response = analyzer.Analyze(analyzer_pb2.AnalyzeRequest(
            type=resource["type"], name=resource["name"], urn=resource["urn"],
            properties=_struct(resource["inputs"])), timeout=60)
        diagnostics += _diagnostics(response, resource["name"])
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type=r["type"], name=r["name"], urn=r["urn"], properties=_struct(r["outputs"]))
        for r in request["resources"]]), timeout=120)
    return diagnostics + _diagnostics(response)


def main(pack_dir: str, *request_files: str) -> int:
    pack = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", pack_dir],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = pack.stdout.readline().strip()
        if not port.isdigit():
            print(f"the pack did not start (first line: {port!r}, exit {pack.poll()})", file=sys.stderr)
            return 2
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            analyzer = analyzer_pb2_grpc.AnalyzerStub(channel)
            info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=60)
            plugin = analyzer.GetPluginInfo(empty_pb2.Empty(), timeout=60)
            results = []
            for request_file in request_files:
                with open(request_file, encoding="utf-8") as handle:
                    results.append({"diagnostics": _analyze(analyzer, json.load(handle))})
    finally:
        pack.kill()
        pack.wait()
    print(json.dumps({
        "pack": info.name, "sdkVersion": plugin.version,
        "policies": [{"name": p.name, "description": p.description, "type": TYPES.get(p.policy_type, ""),
                      "enforcementLevel": LEVELS[p.enforcementLevel]} for p in info.policies],
        "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
