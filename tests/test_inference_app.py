"""Inference app served for real: a tiny DistilBERT (random weights, a WordPiece vocabulary written here) behind
``python -m sentiment`` on 127.0.0.1, called over HTTP. No downloads.

Two servers start in parallel once per module: ``main`` for the endpoints, bad input and mixed concurrent load;
``drain`` (tiny queue, long batch wait) for overload and SIGTERM. Every loop is bounded in count and time.
"""

import asyncio
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import aiohttp
import pytest

APP_DIR = Path(__file__).resolve().parents[1] / "examples" / "inference-app"
sys.path.insert(0, str(APP_DIR))

from make_model import build  # noqa: E402

MAIN_ENV = {"MAX_BATCH_SIZE": "8", "MAX_WAIT_MS": "5", "MAX_QUEUE": "256", "MAX_TEXTS_PER_REQUEST": "16",
            "MAX_TEXT_CHARS": "1000", "MAX_BODY_BYTES": "65536", "TORCH_THREADS": "1"}
# The main server runs the model in its worker process (the default), the drain server in-process: both paths.
DRAIN_ENV = {"MAX_BATCH_SIZE": "64", "MAX_WAIT_MS": "30000", "MAX_QUEUE": "8", "MAX_TEXTS_PER_REQUEST": "4",
             "SHUTDOWN_DELAY_S": "4", "TORCH_THREADS": "1", "MODEL_WORKER": "thread"}
TEXTS = ["I love using this product!", "terrible service, never again", "the delivery was late",
         "great quality for the price", "it works", "would not recommend", "okay i guess", "best app ever"]


class Server:
    """A ``python -m sentiment`` subprocess; its log lines are kept for assertions."""

    def __init__(self, model_dir: Path, env: dict):
        full_env = {**os.environ, "MODEL_PATH": str(model_dir), "HOST": "127.0.0.1", "PORT": "0", **env}
        self.proc = subprocess.Popen([sys.executable, "-m", "sentiment"], cwd=APP_DIR, env=full_env,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.port = 0
        self._listening = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)
            match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                self._listening.set()

    def wait_ready(self, timeout: float = 90.0) -> None:
        assert self._listening.wait(timeout), "".join(self.lines)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, _, _ = self.call("GET", "/readyz")
            if status == 200:
                return
            assert self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.1)
        raise AssertionError("not ready in time:\n" + "".join(self.lines))

    def call(self, method: str, path: str, body=None, headers=None, chunked: bool = False):
        """(status, headers, parsed JSON or text) of one request on a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
            resp = conn.getresponse()
            data = resp.read()
            kind = resp.getheader("Content-Type", "")
            return resp.status, dict(resp.getheaders()), json.loads(data) if "json" in kind else data.decode()
        finally:
            conn.close()

    def analyze(self, payload, **kw):
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return self.call("POST", "/analyze", body, **kw)

    def metrics(self) -> dict[str, float]:
        """``{'name{labels}': value}`` of the service's own ``inference_*`` series."""
        _, _, text = self.call("GET", "/metrics")
        return {k: float(v) for k, v in re.findall(r"^(inference_\S+) (\S+)$", text, re.M)}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build(tmp_path_factory.mktemp("model") / "tiny-distilbert", "tiny")


@pytest.fixture(scope="module")
def servers(model_dir):
    started = {"main": Server(model_dir, MAIN_ENV), "drain": Server(model_dir, DRAIN_ENV)}
    try:
        for server in started.values():
            server.wait_ready()
        yield started
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture(scope="module")
def main(servers):
    return servers["main"]


@pytest.fixture(scope="module")
def expected(model_dir):
    """Label and score of each text from the model itself, one text at a time, no server."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    out = {}
    with torch.inference_mode():
        for text in TEXTS:
            enc = tokenizer(text, return_tensors="pt", return_token_type_ids=False)
            probs = model(**enc).logits.softmax(-1)[0]
            index = int(probs.argmax())
            out[text] = (model.config.id2label[index], float(probs[index]))
    return out


# ---------------------------------------------------------------------------------------------------------
# endpoints


def test_health_and_readiness(main):
    assert main.call("GET", "/healthz")[::2] == (200, {"status": "ok"})
    assert main.call("GET", "/readyz")[::2] == (200, {"status": "ready"})


def test_classic_curl_form_post_returns_label_and_score(main, expected):
    # curl -X POST -d '{"text": "..."}' sends application/x-www-form-urlencoded.
    status, _, body = main.analyze({"text": "I love using this product!"},
                                   headers={"Content-Type": "application/x-www-form-urlencoded"})
    label, score = expected["I love using this product!"]
    assert status == 200
    assert body["label"] == label and body["label"] in ("NEGATIVE", "POSITIVE")
    assert body["score"] == pytest.approx(score, abs=1e-5)
    assert 0.5 <= body["score"] <= 1.0


def test_list_of_texts_answers_each_in_order_and_batching_does_not_change_scores(main, expected):
    status, _, body = main.analyze({"text": TEXTS})
    assert status == 200
    got = [(r["label"], r["score"]) for r in body["results"]]
    assert [g[0] for g in got] == [expected[t][0] for t in TEXTS]
    # Padded together with longer texts, each text still scores as it does alone (attention mask honoured).
    assert [g[1] for g in got] == pytest.approx([expected[t][1] for t in TEXTS], abs=1e-5)


def test_metrics_expose_the_contract_names_and_types(main):
    main.analyze({"text": "good"})
    _, headers, text = main.call("GET", "/metrics")
    assert headers["Content-Type"].startswith("text/plain; version=")
    for name, kind in [("inference_requests_total", "counter"), ("inference_request_duration_seconds", "histogram"),
                       ("inference_batch_size", "histogram"), ("inference_queue_depth", "gauge"),
                       ("inference_errors_total", "counter")]:
        assert f"# TYPE {name} {kind}\n" in text
    series = main.metrics()
    assert series['inference_requests_total{status="200"}'] >= 1
    assert series["inference_request_duration_seconds_count"] >= 1
    assert series["inference_batch_size_count"] >= 1
    assert series["inference_queue_depth"] == 0
    assert 'inference_errors_total{reason="overloaded"}' in series


BAD_REQUESTS = [
    # (id, method, path, body, status, reason)
    ("malformed-json", "POST", "/analyze", b'{"text": "unterminated', 400, "invalid_json"),
    ("empty-body", "POST", "/analyze", b"", 400, "invalid_json"),
    ("deeply-nested", "POST", "/analyze", b"[" * 60000, 400, "invalid_json"),
    ("non-utf8", "POST", "/analyze", '{"text": "café"}'.encode("latin-1"), 400, "invalid_utf8"),
    ("utf16", "POST", "/analyze", '{"text": "hi"}'.encode("utf-16"), 400, "invalid_utf8"),
    ("not-an-object", "POST", "/analyze", b'["I love it"]', 400, "wrong_type"),
    ("text-is-number", "POST", "/analyze", b'{"text": 42}', 400, "wrong_type"),
    ("list-with-number", "POST", "/analyze", b'{"text": ["fine", 3]}', 400, "wrong_type"),
    ("no-text-field", "POST", "/analyze", b'{"txt": "hello"}', 400, "missing_text"),
    ("lone-surrogate", "POST", "/analyze", b'{"text": "\\udc80 hi"}', 400, "invalid_text"),
    ("empty-text", "POST", "/analyze", b'{"text": ""}', 422, "empty_text"),
    ("blank-text", "POST", "/analyze", b'{"text": "   "}', 422, "empty_text"),
    ("empty-list", "POST", "/analyze", b'{"text": []}', 422, "empty_text"),
    ("text-too-long", "POST", "/analyze", json.dumps({"text": "a" * 1001}).encode(), 422, "text_too_long"),
    ("too-many-texts", "POST", "/analyze", json.dumps({"text": ["a"] * 17}).encode(), 422, "too_many_texts"),
    ("oversized-body", "POST", "/analyze", b" " * 70000, 413, "body_too_large"),
    ("get-analyze", "GET", "/analyze", None, 405, "method_not_allowed"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "reason"), [b[1:] for b in BAD_REQUESTS],
                         ids=[b[0] for b in BAD_REQUESTS])
def test_bad_input_is_a_4xx_json_error_and_counted(main, method, path, body, status, reason):
    before = main.metrics()
    got_status, _, got = main.call(method, path, body)
    assert got_status == status
    assert got["error"]["reason"] == reason and got["error"]["message"]
    after = main.metrics()
    key = f'inference_errors_total{{reason="{reason}"}}'
    assert after[key] == before[key] + 1
    status_key = f'inference_requests_total{{status="{status}"}}'
    assert after[status_key] == before[status_key] + 1
    assert main.call("GET", "/healthz")[0] == 200


def test_oversized_chunked_body_without_content_length_is_413(main):
    chunks = (b" " * 8192 for _ in range(10))  # 80 KiB > 64 KiB limit, no Content-Length
    status, _, body = main.call("POST", "/analyze", chunks, chunked=True)
    assert (status, body["error"]["reason"]) == (413, "body_too_large")


def test_unknown_path_is_a_json_404(main):
    status, _, body = main.call("GET", "/nope")
    assert (status, body["error"]["reason"]) == (404, "not_found")


# ---------------------------------------------------------------------------------------------------------
# load


def test_concurrent_load_mixed_with_bad_requests_no_5xx_and_every_good_request_answered(main, expected):
    bad_bodies = [b[3] for b in BAD_REQUESTS if b[1] == "POST"]
    before = main.metrics()

    async def worker(session, index, results):
        for i in range(25):
            n = index * 25 + i
            if n % 3 == 0:  # a bad request
                body, want = bad_bodies[n % len(bad_bodies)], None
            elif n % 3 == 1:
                text = TEXTS[n % len(TEXTS)]
                body, want = json.dumps({"text": text}).encode(), [text]
            else:
                texts = [TEXTS[(n + k) % len(TEXTS)] for k in range(1 + n % 5)]
                body, want = json.dumps({"text": texts}).encode(), texts
            async with session.post(f"http://127.0.0.1:{main.port}/analyze", data=body) as resp:
                results.append((want, resp.status, await resp.json(content_type=None)))

    async def load():
        results: list = []
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=24)) as session:
            await asyncio.wait_for(asyncio.gather(*(worker(session, w, results) for w in range(24))), 45)
        return results

    results = asyncio.run(load())
    assert len(results) == 24 * 25
    assert [r for r in results if r[1] >= 500] == []
    good = [r for r in results if r[0] is not None]
    for want, status, body in good:
        assert status == 200
        answers = body.get("results", [body])
        assert [a["label"] for a in answers] == [expected[t][0] for t in want]
        assert [a["score"] for a in answers] == pytest.approx([expected[t][1] for t in want], abs=1e-5)
    assert all(400 <= r[1] < 500 for r in results if r[0] is None)
    after = main.metrics()
    assert after['inference_requests_total{status="200"}'] - before['inference_requests_total{status="200"}'] == len(
        good)
    # Micro-batching happened: fewer forward passes than texts.
    texts = sum(len(w) for w, _, _ in good)
    batches = after["inference_batch_size_count"] - before["inference_batch_size_count"]
    assert after["inference_batch_size_sum"] - before["inference_batch_size_sum"] == texts
    assert batches < texts


# ---------------------------------------------------------------------------------------------------------
# overload and SIGTERM (the ``drain`` server: queue of 8 texts, batches wait up to 30 s to fill)


def test_overload_is_503_with_retry_after_then_sigterm_drains_in_flight_requests(servers):
    server = servers["drain"]

    async def scenario():
        url = f"http://127.0.0.1:{server.port}/analyze"
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout) as session:

            async def post(text):
                async with session.post(url, json={"text": text}) as resp:
                    return resp.status, dict(resp.headers), await resp.json(content_type=None)

            in_flight = [asyncio.ensure_future(post(TEXTS[i])) for i in range(8)]
            for _ in range(100):  # until all 8 texts sit in the queue (bounded: 10 s)
                await asyncio.sleep(0.1)
                if server.metrics()["inference_queue_depth"] == 8:
                    break
            assert server.metrics()["inference_queue_depth"] == 8

            overloaded = await post("one too many")

            sent_at = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            # During SHUTDOWN_DELAY_S the pod is unready but still serves whoever still routes here.
            for _ in range(40):  # until the signal is handled (bounded: 2 s)
                ready_while_draining = server.call("GET", "/readyz")
                if ready_while_draining[0] == 503:
                    break
                await asyncio.sleep(0.05)
            answered = await asyncio.wait_for(asyncio.gather(*in_flight), 20)
            drained_in = time.monotonic() - sent_at
            late = await post("still routed here")
            return overloaded, answered, drained_in, ready_while_draining, late

    overloaded, answered, drained_in, ready_while_draining, late = asyncio.run(scenario())
    status, headers, body = overloaded
    assert (status, body["error"]["reason"], headers["Retry-After"]) == (503, "overloaded", "1")
    assert [a[0] for a in answered] == [200] * 8
    assert all(a[2]["label"] in ("NEGATIVE", "POSITIVE") for a in answered)
    assert drained_in < 15  # flushed at once, not after the 30 s batch wait
    assert ready_while_draining[::2] == (503, {"status": "draining"})
    assert late[0] == 200
    assert server.proc.wait(timeout=30) == 0
    log = "".join(server.lines)
    assert "draining: 8 texts pending" in log and "stopped" in log
    with pytest.raises(OSError):
        server.call("GET", "/healthz")


# ---------------------------------------------------------------------------------------------------------
# Last: a dead model worker (kills the main server's model process)


def test_a_dead_model_worker_fails_liveness_and_answers_500_not_a_hang(main):
    # The worker is spawned from the forward-pass thread: look in every thread's children (the other child is
    # multiprocessing's resource tracker).
    children = [c for task in Path(f"/proc/{main.proc.pid}/task").iterdir()
                for c in (task / "children").read_text().split()
                if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    assert len(children) == 1, children  # the model worker
    os.kill(int(children[0]), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while main.call("GET", "/healthz")[0] != 503 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert main.call("GET", "/healthz")[::2] == (503, {"status": "failed"})
    status, _, body = main.analyze({"text": "anyone there?"})
    assert (status, body["error"]["reason"]) == (500, "model_error")
    assert main.metrics()['inference_errors_total{reason="model_error"}'] == 1
