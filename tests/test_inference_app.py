"""Inference app served for real: a tiny DistilBERT (random weights, a WordPiece vocabulary written here) behind
``python -m sentiment`` on 127.0.0.1, called over HTTP. No downloads.

Two servers start in parallel once per module: ``main`` for the endpoints, bad input and mixed concurrent load;
``drain`` (tiny queue, long batch wait) for overload and SIGTERM; ``rollout`` for SIGTERM with keep-alive
connections open. Every loop is bounded in count and time.
"""

import asyncio
import contextlib
import http.client
import json
import os
import re
import signal
import socket
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

MAIN_ENV = {"MAX_BATCH_SIZE": "8", "MAX_QUEUE": "256", "MODEL_WORKERS": "2", "MAX_TEXTS_PER_REQUEST": "16",
            "MAX_TEXT_CHARS": "1000", "MAX_BODY_BYTES": "65536", "TORCH_THREADS": "1",
            "HEADER_TIMEOUT_S": "1", "BODY_TIMEOUT_S": "1", "SHUTDOWN_DELAY_S": "2"}
# The main server runs the model in two worker processes, the drain server in-process: both paths.
DRAIN_ENV = {"MAX_BATCH_SIZE": "64", "MAX_WAIT_MS": "30000", "DEADLINE_MS": "60000", "MAX_QUEUE": "8",
             "MAX_TEXTS_PER_REQUEST": "4", "SHUTDOWN_DELAY_S": "4", "TORCH_THREADS": "1", "MODEL_WORKER": "thread"}
# SIGTERM with keep-alive connections open (a rolling update).
ROLLOUT_ENV = {"MAX_WAIT_MS": "1", "SHUTDOWN_DELAY_S": "3", "KEEPALIVE_TIMEOUT_S": "4", "TORCH_THREADS": "1",
               "MODEL_WORKER": "thread"}
TEXTS = ["I love using this product!", "terrible service, never again", "the delivery was late",
         "great quality for the price", "it works", "would not recommend", "okay i guess", "best app ever"]


class Server:
    """A ``python -m sentiment`` subprocess; its log lines are kept for assertions."""

    def __init__(self, model_dir: Path, env: dict, command: tuple = ("-m", "sentiment")):
        full_env = {**os.environ, "MODEL_PATH": str(model_dir), "HOST": "127.0.0.1", "PORT": "0",
                    "PYTHONPATH": str(APP_DIR), **env}
        self.proc = subprocess.Popen([sys.executable, *command], cwd=APP_DIR, env=full_env,
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


@contextlib.contextmanager
def running(servers: dict[str, Server]):
    """The servers (started in parallel), once all are ready; stopped afterwards whatever happened."""
    try:
        for server in servers.values():
            server.wait_ready()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="module")
def servers(model_dir):
    with running({"main": Server(model_dir, MAIN_ENV), "drain": Server(model_dir, DRAIN_ENV),
                  "rollout": Server(model_dir, ROLLOUT_ENV)}) as started:
        yield started


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


@pytest.mark.parametrize(("threads", "variable", "value"),
                         [(1, "TOKENIZERS_PARALLELISM", "false"), (2, "RAYON_NUM_THREADS", "2")])
def test_a_model_process_keeps_its_tokenizer_within_its_thread_budget(model_dir, expected, monkeypatch, threads,
                                                                      variable, value):
    from sentiment.classifier import Classifier

    # monkeypatch restores both afterwards: the settings are process-wide (process_tuning.py).
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    monkeypatch.delenv("RAYON_NUM_THREADS", raising=False)
    model = Classifier(str(model_dir), "cpu", threads=threads)
    assert os.environ.get(variable) == value
    got = model.predict(TEXTS)
    assert [p.label for p in got] == [expected[t][0] for t in TEXTS]
    assert [p.score for p in got] == pytest.approx([expected[t][1] for t in TEXTS], abs=1e-5)


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


def test_a_lone_request_starts_its_forward_pass_at_once(main):
    before = main.metrics()
    latencies = []
    for text in TEXTS * 3:
        started = time.perf_counter()
        status, _, _ = main.analyze({"text": text})
        latencies.append(time.perf_counter() - started)
        assert status == 200
    after = main.metrics()
    # One forward pass per request (nobody to batch with), each started at once: no waiting for company.
    assert after["inference_batch_size_count"] - before["inference_batch_size_count"] == len(TEXTS) * 3
    assert sorted(latencies)[len(latencies) // 2] < 0.05


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
            await asyncio.sleep(0.2)  # the client sees the keep-alive connections the server closed on SIGTERM
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
# connection hygiene (the ``main`` server: HEADER_TIMEOUT_S=1, BODY_TIMEOUT_S=1)


def raw_exchange(port: int, data: bytes, wait: float = 5.0) -> bytes:
    """Send ``data`` on a fresh socket and read until the server closes it (bounded by ``wait``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
        return got


def new_lines(server, since: int) -> str:
    time.sleep(0.3)  # the log reader thread
    return "".join(server.lines[since:])


def test_client_leaving_mid_upload_is_client_aborted_not_model_error_and_one_log_line(main):
    before, mark = main.metrics(), len(main.lines)
    with socket.create_connection(("127.0.0.1", main.port), timeout=5) as sock:
        sock.sendall(b"POST /analyze HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"text\": \"half")
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while main.metrics()['inference_errors_total{reason="client_aborted"}'] == before[
            'inference_errors_total{reason="client_aborted"}'] and time.monotonic() < deadline:
        time.sleep(0.05)
    after = main.metrics()
    for key, delta in [('inference_errors_total{reason="client_aborted"}', 1),
                       ('inference_errors_total{reason="model_error"}', 0),
                       ('inference_requests_total{status="499"}', 1), ('inference_requests_total{status="500"}', 0)]:
        assert after[key] - before[key] == delta, key
    log = new_lines(main, mark)
    assert "Traceback" not in log
    assert len([line for line in log.splitlines() if "closed the connection" in line]) == 1, log


def test_request_head_sent_byte_by_byte_slower_than_header_timeout_is_disconnected(main):
    head = b"POST /analyze HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 20\r\n\r\n"
    mark = len(main.lines)
    started = time.monotonic()
    closed_after = None
    with socket.create_connection(("127.0.0.1", main.port), timeout=5) as sock:
        try:
            for byte in head:  # 0.25 s a byte: the head would take 16 s, the timeout is 1 s
                sock.sendall(bytes([byte]))
                time.sleep(0.25)
                if time.monotonic() - started > 6:
                    break
            closed_after = time.monotonic() - started if sock.recv(1) == b"" else None
        except OSError:  # reset while sending into the closed connection
            closed_after = time.monotonic() - started
    assert closed_after is not None and closed_after < 4
    assert "request head not complete after 1s (HEADER_TIMEOUT_S)" in new_lines(main, mark)


def test_body_slower_than_body_timeout_is_408(main):
    before = main.metrics()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", main.port), timeout=10) as sock:
        sock.sendall(b"POST /analyze HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"te")
        got = b""
        while b"}}" not in got:  # the whole JSON error (aiohttp then lingers a while for the rest of the body)
            chunk = sock.recv(65536)
            assert chunk, got
            got += chunk
    assert got.startswith(b"HTTP/1.1 408 ")
    assert b'"reason": "body_timeout"' in got and b"Connection: close" in got
    assert time.monotonic() - started < 4
    after = main.metrics()
    assert after['inference_errors_total{reason="body_timeout"}'] - before[
        'inference_errors_total{reason="body_timeout"}'] == 1


def analyze_bytes(text_or_texts) -> bytes:
    body = json.dumps({"text": text_or_texts}).encode()
    return b"POST /analyze HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def read_one_response(sock: socket.socket, buffered: bytearray) -> tuple[str, dict, dict]:
    """(status line, headers, JSON body) of the next response on a keep-alive socket."""
    while b"\r\n\r\n" not in buffered:
        buffered += sock.recv(65536)
    head, _, rest = bytes(buffered).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers["content-length"])
    while len(rest) < length:
        rest += sock.recv(65536)
    buffered[:] = rest[length:]
    return lines[0], headers, json.loads(rest[:length])


@pytest.mark.parametrize("texts", ["a plain request, one text", ["a list", "of two texts"]])
def test_the_fast_path_answers_exactly_as_aiohttp_does(main, texts):
    request = analyze_bytes(texts)
    answers = []
    for chunks in ([request], [request[:30], request[30:]]):  # one chunk: the fast path; two: aiohttp
        with socket.create_connection(("127.0.0.1", main.port), timeout=10) as sock:
            for chunk in chunks:
                sock.sendall(chunk)
                time.sleep(0.05)
            answers.append(read_one_response(sock, bytearray()))
    (fast_status, fast_headers, fast_body), (slow_status, slow_headers, slow_body) = answers
    assert "server" not in fast_headers and "aiohttp" in slow_headers["server"]  # which path answered
    assert fast_status == slow_status == "HTTP/1.1 200 OK"
    assert fast_headers["content-type"] == slow_headers["content-type"] == "application/json; charset=utf-8"
    assert fast_body == slow_body
    assert (len(fast_body["results"]) == 2) if isinstance(texts, list) else set(fast_body) == {"label", "score"}


@pytest.mark.parametrize("rounds", range(3))
def test_requests_pipelined_on_one_connection_are_answered_in_order(main, rounds):
    # Written before the previous ones are answered: alone (the fast path takes the first), two in one write
    # (aiohttp parses both), alone again (aiohttp may still hold the pair's second one: it must stay aiohttp's).
    writes = [[1], [3, 2], [1], [4], [2, 2]]
    request = lambda size: analyze_bytes(["pipelined text"] * size if size > 1 else "pipelined text")  # noqa: E731
    with socket.create_connection(("127.0.0.1", main.port), timeout=10) as sock:
        for sizes in writes:
            sock.sendall(b"".join(request(size) for size in sizes))
            time.sleep(0.002)
        buffered = bytearray()
        answers = [read_one_response(sock, buffered) for sizes in writes for _ in sizes]
    assert [len(body["results"]) if "results" in body else 1 for _, _, body in answers] == [
        size for sizes in writes for size in sizes]
    assert {status for status, _, _ in answers} == {"HTTP/1.1 200 OK"}


@pytest.mark.parametrize("request_bytes", [b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nBad Header\r\n\r\n"],
                         ids=["garbage-request-line", "bad-header"])
def test_a_malformed_request_is_a_400_and_one_log_line_without_traceback(main, request_bytes):
    mark = len(main.lines)
    assert raw_exchange(main.port, request_bytes).startswith(b"HTTP/1.0 400 ")
    log = new_lines(main, mark)
    assert "Traceback" not in log
    assert len(log.splitlines()) == 1 and "WARNING aiohttp.server: bad HTTP request from 127.0.0.1: 400" in log, log


def test_expect_100_continue_with_an_oversized_content_length_is_413_without_100_continue(main):
    before = main.metrics()
    got = raw_exchange(main.port, b"POST /analyze HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n"
                                  b"Expect: 100-continue\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 413 ") and b"100 Continue" not in got
    assert b'"reason": "body_too_large"' in got
    assert main.metrics()['inference_errors_total{reason="body_too_large"}'] == before[
        'inference_errors_total{reason="body_too_large"}'] + 1
    # Within the limit the client still gets its 100 Continue, then the answer.
    body = b'{"text": "fine"}'
    got = raw_exchange(main.port, b"POST /analyze HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: "
                       + str(len(body)).encode() + b"\r\nExpect: 100-continue\r\n\r\n" + body)
    assert got.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 ")


def test_a_number_of_60000_digits_is_reported_as_such_not_as_nesting(main):
    # 60,000 digits: the main server's MAX_BODY_BYTES is 64 KiB (100,000 digits: the unit test).
    status, _, body = main.analyze(b'{"text": ' + b"7" * 60_000 + b"}")
    assert (status, body["error"]["reason"]) == (400, "invalid_json")
    assert body["error"]["message"] == "body has a number with more than 4300 digits"


@pytest.mark.parametrize(("env", "message"), [
    ({"PORT": "99999"}, "configuration error: PORT: must be <= 65535, got 99999"),
    ({"MAX_WAIT_MS": "inf"}, "configuration error: MAX_WAIT_MS: must be a finite number, got 'inf'"),
    ({"MAX_WAIT_MS": "nan"}, "configuration error: MAX_WAIT_MS: must be a finite number, got 'nan'"),
])
def test_bad_settings_exit_2_with_the_documented_line(model_dir, env, message):
    proc = subprocess.run([sys.executable, "-m", "sentiment"], cwd=APP_DIR, capture_output=True, text=True,
                          env={**os.environ, "MODEL_PATH": str(model_dir), **env}, timeout=60)
    assert (proc.returncode, proc.stderr.strip()) == (2, message)


# ---------------------------------------------------------------------------------------------------------
# a rolling update: SIGTERM with keep-alive connections open (the ``rollout`` server, SHUTDOWN_DELAY_S=3,
# KEEPALIVE_TIMEOUT_S=4). The 64-client rollouts are in test_inference_app_rollout.py.


def test_sigterm_keeps_kept_connections_open_answers_their_next_request_with_close_and_closes_idle_ones_late(servers):
    server = servers["rollout"]
    url = f"http://127.0.0.1:{server.port}/analyze"
    n = 16
    request = (b"POST /analyze HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n"
               b'{"text": "good"}')

    def read_response(sock: socket.socket) -> bytes:
        got = b""
        while b"\r\n\r\n" not in got or len(got.split(b"\r\n\r\n", 1)[1]) < int(
                re.search(rb"Content-Length: (\d+)", got).group(1)):
            chunk = sock.recv(4096)
            assert chunk, got
            got += chunk
        return got

    def open_after(sock: socket.socket, wait: float) -> bool:
        """No EOF (and no bytes) from the server within ``wait`` seconds."""
        sock.settimeout(wait)
        try:
            return sock.recv(1) != b""
        except TimeoutError:
            return True
        except OSError:
            return False

    async def scenario():
        timeout = aiohttp.ClientTimeout(total=10)
        connector = aiohttp.TCPConnector(limit=n, force_close=False, keepalive_timeout=60)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:

            async def post(i):
                try:
                    async with session.post(url, json={"text": TEXTS[i % len(TEXTS)]}) as resp:
                        await resp.read()
                        return resp.status, resp.headers.get("Connection", ""), resp.headers.get("Keep-Alive", "")
                except (aiohttp.ClientError, OSError) as err:
                    return "error", repr(err), ""

            first = await asyncio.gather(*(post(i) for i in range(n)))  # n keep-alive connections (fast path)
            raw, heads = [], []  # n + 1 more on raw sockets (through aiohttp: GET /healthz), then idle
            for _ in range(n + 1):
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                heads.append(read_response(sock).split(b"\r\n\r\n")[0])
                raw.append(sock)
            answered_at = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            for _ in range(40):  # until the signal is handled (bounded: 2 s)
                if server.call("GET", "/readyz")[0] == 503:
                    break
                await asyncio.sleep(0.05)
            kept = [open_after(sock, 0.3 / len(raw)) for sock in raw]  # none closed as idle at SIGTERM
            during = await asyncio.gather(*(post(i) for i in range(n)))  # the next request on each kept connection
            on_raw = []
            for sock in raw[:n]:  # and on the raw ones
                sock.settimeout(5)
                sock.sendall(request)
                on_raw.append(read_response(sock).split(b"\r\n\r\n")[0])
                on_raw[-1] += b" | eof" if sock.recv(1) == b"" else b" | open"
            # The last one stays idle: open past the listener's close (SHUTDOWN_DELAY_S=3), closed by the server
            # once idle for its Keep-Alive timeout (4 s), not before.
            last = raw[n]
            open_until_timeout = open_after(last, max(0.0, answered_at + 3.8 - time.monotonic()))
            last.settimeout(3)
            closed = last.recv(1) == b""
            closed_after = time.monotonic() - answered_at
            for sock in raw:
                sock.close()
            return first, heads, kept, during, on_raw, open_until_timeout, closed, closed_after

    first, heads, kept, during, on_raw, open_until_timeout, closed, closed_after = asyncio.run(scenario())
    assert first == [(200, "", "timeout=4")] * n  # keep-alive before SIGTERM, its idle bound told
    assert all(head.startswith(b"HTTP/1.1 200 ") and b"\r\nKeep-Alive: timeout=4" in head for head in heads)
    assert kept == [True] * (n + 1)
    assert during == [(200, "close", "")] * n  # no reset, no connection error; every answer says Connection: close
    assert all(answer.startswith(b"HTTP/1.1 200 ") and b"\r\nConnection: close" in answer
               and answer.endswith(b" | eof") for answer in on_raw), on_raw
    assert open_until_timeout and closed and 3.8 <= closed_after < 6, closed_after
    assert server.proc.wait(timeout=30) == 0
    log = "".join(server.lines)
    opened = re.search(r"draining: 0 texts pending, (\d+) connections open", log)
    assert opened and int(opened.group(1)) >= 2 * n + 1, log
    drained = re.search(r"connections drained in [\d.]+s: (\d+) closed idle after the keep-alive timeout, "
                        r"(\d+) quiet ones closed at the drain timeout, 0 busy left", log)
    assert drained and int(drained.group(1)) <= 1 and int(drained.group(2)) == 0, log


# ---------------------------------------------------------------------------------------------------------
# Last: a dead model worker (kills the main server's model process)


def test_a_dead_model_worker_fails_readiness_at_once_then_the_process_exits_3(main):
    # The worker is spawned from the forward-pass thread: look in every thread's children (the other child is
    # multiprocessing's resource tracker).
    children = [c for task in Path(f"/proc/{main.proc.pid}/task").iterdir()
                for c in (task / "children").read_text().split()
                if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    assert len(children) == 2, children  # MODEL_WORKERS=2; one dies, the pod is restarted
    assert "2 worker(s)" in "".join(main.lines)
    killed_at = time.monotonic()
    os.kill(int(children[0]), signal.SIGKILL)
    while main.call("GET", "/readyz")[0] != 503 and time.monotonic() < killed_at + 5:
        time.sleep(0.02)
    # At once (the worker's sentinel), not after a probe period; the server still answers (SHUTDOWN_DELAY_S=2).
    assert time.monotonic() - killed_at < 1
    assert main.call("GET", "/readyz")[::2] == (503, {"status": "failed"})
    assert main.call("GET", "/healthz")[::2] == (503, {"status": "failed"})
    status, headers, body = main.analyze({"text": "anyone there?"})
    assert (status, body["error"]["reason"], headers["Retry-After"], headers["Connection"]) == (
        503, "not_ready", "1", "close")
    assert body["error"]["message"] == "model worker died"
    # Then the process exits non-zero, so Kubernetes restarts the container (a fresh worker, a fresh model).
    assert main.proc.wait(timeout=30) == 3
    log = "".join(main.lines)
    assert "model worker exited (code -9)" in log and "stopped (exit code 3)" in log, log
