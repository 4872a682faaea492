"""The inference app runs on a read-only root filesystem: started with the environment its Deployment sets, it
writes nowhere but the directory standing in for the pod's ``/tmp`` emptyDir.

Every Python process of the app (the server and its spawned model worker) gets a ``sys.addaudithook`` hook through
``sitecustomize`` that records each file opened for writing, and each mkdir, rename, remove or chmod, outside the
allowed directories. The server answers requests and drains on SIGTERM; then the record must be empty.
"""

import os
import signal
from pathlib import Path

import pytest
from test_inference_app import Server, build  # its import puts examples/inference-app on sys.path

from gpu_platform.pools import GpuPool
from gpu_platform.serving import inference_objects as objects

AUDIT_HOOK = '''
import os
import sys

_ALLOWED = tuple(os.environ["WRITE_AUDIT_ALLOWED"].split(os.pathsep))
_LOG = os.environ["WRITE_AUDIT_LOG"]
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_EVENTS = {"os.mkdir": 0, "os.rename": 1, "os.remove": 0, "os.rmdir": 0, "os.symlink": 1, "os.link": 1,
                "os.truncate": 0, "os.chmod": 0, "os.chown": 0, "os.utime": 0}
_busy = []


def _outside(path):
    if isinstance(path, int) or path is None:
        return False  # an already open descriptor: its open was checked
    path = os.path.abspath(os.fsdecode(path))
    return not any(path == root or path.startswith(root + os.sep) for root in _ALLOWED)


def _record(line):
    _busy.append(1)
    try:
        fd = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.write(fd, (line + "\\n").encode())
        os.close(fd)
    finally:
        _busy.pop()


def _hook(event, args):
    if _busy:
        return
    if event == "open" and isinstance(args[2], int) and args[2] & _WRITES and _outside(args[0]):
        _record(f"{os.getpid()} open {args[0]!r}")
    elif event in _PATH_EVENTS and _outside(args[_PATH_EVENTS[event]]):
        _record(f"{os.getpid()} {event} {args[_PATH_EVENTS[event]]!r}")


sys.addaudithook(_hook)
_record(f"{os.getpid()} audited")  # the log is allowed: proves the hook runs in this process
'''

TEXTS = ["I love using this product!", "terrible service, never again"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build(tmp_path_factory.mktemp("model") / "tiny-distilbert", "tiny")


def deployment_env(writable: Path) -> dict[str, str]:
    """The Deployment's container environment on a CPU, with the pod's /tmp emptyDir moved to ``writable``."""
    pool = GpuPool("l4", "aws", "g6.xlarge", "l4", 1, 24, 0, 2)
    env = {e["name"]: e["value"] for e in objects.deployment(objects.InferenceSpec(pool=pool))["spec"]["template"][
        "spec"]["containers"][0]["env"]}
    env = {k: v.replace(objects.TMP_PATH, str(writable), 1) if v.startswith(objects.TMP_PATH) else v
           for k, v in env.items()}
    assert env["HOME"] == str(writable) and env["HF_HOME"] == str(writable / "hf")
    # What examples/inference-app/Dockerfile adds (no bytecode files), and what the test machine needs: its CPU.
    return {**env, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(writable), "DEVICE": "cpu", "TORCH_THREADS": "1"}


def test_the_app_writes_only_to_its_tmp_volume(tmp_path, model_dir, monkeypatch):
    # Importing torch in this test process exported its compile-cache directory (under the machine's /tmp);
    # the pod has no such variable, so neither does the app here: its caches follow TMPDIR and HOME.
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    writable = tmp_path / "tmp-volume"
    writable.mkdir()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(AUDIT_HOOK)
    log = writable / "write-audit.log"
    env = {**deployment_env(writable), "WRITE_AUDIT_ALLOWED": os.pathsep.join([str(writable), "/dev"]),
           "WRITE_AUDIT_LOG": str(log), "PYTHONPATH": str(hooks)}
    server = Server(model_dir, {**env, "MODEL_PATH": str(model_dir)})
    try:
        server.wait_ready()
        status, _, body = server.analyze({"text": TEXTS})
        assert status == 200 and len(body["results"]) == 2
        assert server.call("GET", "/metrics")[0] == 200
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=60) == 0, "".join(server.lines)
    finally:
        server.stop()
    lines = log.read_text().splitlines()
    audited = {line.split()[0] for line in lines if line.endswith(" audited")}
    assert len(audited) >= 2, lines  # the server and its spawned model worker
    assert [line for line in lines if not line.endswith(" audited")] == []
