"""Inference app, pure parts: request validation, settings, and the micro-batcher with a fake model (no torch)."""

import asyncio
import json
import platform
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "inference-app"))

from sentiment.batcher import DeadlineExceeded, MicroBatcher, Overloaded, on_thread  # noqa: E402
from sentiment.settings import Settings, SettingsError, from_env  # noqa: E402
from sentiment.validation import BadRequest, Limits, parse_body, timeout_ms  # noqa: E402

LIMITS = Limits(max_body_bytes=1000, max_texts=3, max_text_chars=30)


# ---------------------------------------------------------------------------------------------------------
# validation


def test_single_text_and_list_are_parsed():
    assert parse_body(b'{"text": "I love using this product!"}', LIMITS) == (["I love using this product!"], False)
    assert parse_body(b'{"text": ["good", "bad"], "extra": 1}', LIMITS) == (["good", "bad"], True)
    assert parse_body('{"text": "très bien"}'.encode(), LIMITS) == (["très bien"], False)


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (b"x" * 1001, 413, "body_too_large"),
        (b'{"text": "caf\xe9"}', 400, "invalid_utf8"),
        (b'\xff\xfe{"text": "x"}', 400, "invalid_utf8"),
        (b"", 400, "invalid_json"),
        (b'{"text": "unterminated', 400, "invalid_json"),
        (b"[" * 999, 400, "invalid_json"),  # RecursionError inside json, not a crash
        (b'["text"]', 400, "wrong_type"),
        (b'"text"', 400, "wrong_type"),
        (b'{"text": 42}', 400, "wrong_type"),
        (b'{"text": null}', 400, "wrong_type"),
        (b'{"text": {"a": "b"}}', 400, "wrong_type"),
        (b'{"text": ["ok", 3]}', 400, "wrong_type"),
        (b'{"txt": "x"}', 400, "missing_text"),
        (b'{"text": ""}', 422, "empty_text"),
        (b'{"text": " \\n\\t "}', 422, "empty_text"),
        (b'{"text": []}', 422, "empty_text"),
        (b'{"text": ["ok", ""]}', 422, "empty_text"),
        (b'{"text": "' + b"a" * 31 + b'"}', 422, "text_too_long"),
        (b'{"text": ["a", "b", "c", "d"]}', 422, "too_many_texts"),
        (b'{"text": "\\ud800"}', 400, "invalid_text"),
    ],
)
def test_bad_bodies_are_4xx_with_a_reason(body, status, reason):
    with pytest.raises(BadRequest) as info:
        parse_body(body, LIMITS)
    assert (info.value.status, info.value.reason) == (status, reason)
    assert json.loads(json.dumps(info.value.body()))["error"]["reason"] == reason


# ---------------------------------------------------------------------------------------------------------
# settings


def test_settings_defaults_and_overrides():
    s = from_env({"MODEL_PATH": "/models/sst2", "MAX_BATCH_SIZE": "16", "MAX_WAIT_MS": "2.5"})
    assert (s.model_source, s.max_batch_size, s.max_wait_ms) == ("/models/sst2", 16, 2.5)
    assert (s.port, s.max_queue, s.max_texts_per_request) == (8080, 1024, 64)
    assert from_env({"MODEL_ID": "distilbert/distilbert-base-uncased-finetuned-sst-2-english"}).model_source == (
        "distilbert/distilbert-base-uncased-finetuned-sst-2-english")
    assert (Settings().device, Settings().model_worker) == ("auto", "process")
    assert (Settings().header_timeout_s, Settings().body_timeout_s) == (10.0, 30.0)
    assert (from_env({"MODEL_PATH": "/m", "PORT": "65535"}).port, from_env({"MODEL_PATH": "/m", "PORT": "0"}).port) == (
        65535, 0)
    s = from_env({"MODEL_PATH": "/m", "HEADER_TIMEOUT_S": "2.5", "BODY_TIMEOUT_S": "7"})
    assert (s.header_timeout_s, s.body_timeout_s) == (2.5, 7.0)
    # A lone text starts its forward pass at once; a request may take a second, receipt to answer.
    assert (Settings().max_wait_ms, Settings().deadline_ms) == (0.0, 1000.0)
    assert from_env({"MODEL_PATH": "/m", "DEADLINE_MS": "250"}).deadline_ms == 250.0


def test_the_timeout_headers_shorten_the_deadline_never_lengthen_it():
    assert timeout_ms({}, 1000.0) == 1000.0
    assert timeout_ms({"X-Request-Timeout-Ms": "150"}, 1000.0) == 150.0
    assert timeout_ms({"X-Request-Timeout-Ms": "5000"}, 1000.0) == 1000.0
    assert timeout_ms({"X-Envoy-Expected-Rq-Timeout-Ms": "300"}, 1000.0) == 300.0
    assert timeout_ms({"X-Request-Timeout-Ms": "20", "X-Envoy-Expected-Rq-Timeout-Ms": "300"}, 1000.0) == 20.0
    for bad in ("0", "-5", "soon", "nan", "inf", ""):
        with pytest.raises(BadRequest) as info:
            timeout_ms({"X-Request-Timeout-Ms": bad}, 1000.0)
        assert (info.value.status, info.value.reason) == (400, "invalid_timeout")
        assert info.value.message.startswith("X-Request-Timeout-Ms must be a positive number of milliseconds")


def test_a_number_of_100000_digits_is_reported_as_such_and_deep_nesting_as_nesting():
    with pytest.raises(BadRequest) as info:
        parse_body(b'{"text": ' + b"9" * 100_000 + b"}", Limits(1 << 20, 3, 30))
    assert (info.value.status, info.value.reason, info.value.message) == (
        400, "invalid_json", "body has a number with more than 4300 digits")
    with pytest.raises(BadRequest) as info:
        parse_body(b"[" * 100_000, Limits(1 << 20, 3, 30))
    assert info.value.message == "body is not valid JSON: nested too deeply"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "MODEL_PATH or MODEL_ID must be set"),
        ({"MODEL_PATH": "/m", "MAX_BATCH_SIZE": "many"}, "MAX_BATCH_SIZE: expected int, got 'many'"),
        ({"MODEL_PATH": "/m", "MAX_WAIT_MS": "-1"}, "MAX_WAIT_MS: must be >= 0"),
        ({"MODEL_PATH": "/m", "MAX_BATCH_SIZE": "0"}, "MAX_BATCH_SIZE: must be >= 1"),
        ({"MODEL_PATH": "/m", "DEVICE": "tpu"}, "DEVICE: expected auto, cpu, cuda or neuron"),
        ({"MODEL_PATH": "/m", "DTYPE": "int4"}, "DTYPE: expected auto, float32"),
        ({"MODEL_PATH": "/m", "MAX_QUEUE": "8", "MAX_TEXTS_PER_REQUEST": "9"}, "MAX_TEXTS_PER_REQUEST: must be <="),
        ({"MODEL_PATH": "/m", "MODEL_WORKER": "fiber"}, "MODEL_WORKER: expected process or thread"),
        ({"MODEL_PATH": "/m", "MAX_WAIT_MS": "inf"}, "MAX_WAIT_MS: must be a finite number, got 'inf'"),
        ({"MODEL_PATH": "/m", "MAX_WAIT_MS": "nan"}, "MAX_WAIT_MS: must be a finite number, got 'nan'"),
        ({"MODEL_PATH": "/m", "SHUTDOWN_DELAY_S": "-inf"}, "SHUTDOWN_DELAY_S: must be a finite number"),
        ({"MODEL_PATH": "/m", "PORT": "99999"}, "PORT: must be <= 65535, got 99999"),
        ({"MODEL_PATH": "/m", "HEADER_TIMEOUT_S": "0"}, "HEADER_TIMEOUT_S: must be > 0"),
        ({"MODEL_PATH": "/m", "BODY_TIMEOUT_S": "0"}, "BODY_TIMEOUT_S: must be > 0"),
        ({"MODEL_PATH": "/m", "DEADLINE_MS": "0"}, "DEADLINE_MS: must be > 0"),
        ({"MODEL_PATH": "/m", "DEADLINE_MS": "inf"}, "DEADLINE_MS: must be a finite number"),
        ({"MODEL_PATH": "/m", "MAX_WAIT_MS": "50", "DEADLINE_MS": "40"}, "MAX_WAIT_MS: must be < DEADLINE_MS (40)"),
        ({"MODEL_PATH": "/m", "MODEL_WORKERS": "0"}, "MODEL_WORKERS: must be >= 1"),
        ({"MODEL_PATH": "/m", "MODEL_WORKERS": "2", "MODEL_WORKER": "thread"}, "MODEL_WORKERS: more than 1 needs"),
        ({"MODEL_PATH": "/m", "EVENT_LOOP": "trio"}, "EVENT_LOOP: expected auto, uvloop or asyncio, got 'trio'"),
    ],
)
def test_settings_errors_name_the_variable(env, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        from_env(env)


def test_forward_threads_leave_a_core_to_the_http_server_and_respect_the_container_limit(tmp_path):
    from sentiment.cpus import cgroup_cpu_limit, forward_threads

    assert [forward_threads(0, 1, cpus) for cpus in (1, 2, 2.5, 8)] == [1, 1, 1, 7]
    assert [forward_threads(0, workers, 8) for workers in (2, 3, 7, 16)] == [3, 2, 1, 1]
    assert forward_threads(4, 2, 8) == 4  # TORCH_THREADS wins
    v2 = tmp_path / "cpu.max"
    v2.write_text("250000 100000\n")
    assert cgroup_cpu_limit(v2, tmp_path / "no", tmp_path / "no") == 2.5
    v2.write_text("max 100000\n")
    assert cgroup_cpu_limit(v2, tmp_path / "no", tmp_path / "no") is None
    quota, period = tmp_path / "quota", tmp_path / "period"
    quota.write_text("150000\n")
    period.write_text("100000\n")
    assert cgroup_cpu_limit(tmp_path / "no", quota, period) == 1.5
    quota.write_text("-1\n")
    assert cgroup_cpu_limit(tmp_path / "no", quota, period) is None


def test_the_tokenizer_pool_gets_the_forward_pass_thread_budget_unless_the_operator_set_one():
    from sentiment.process_tuning import limit_tokenizer_threads

    environ = {}
    limit_tokenizer_threads(1, environ)
    assert environ == {"TOKENIZERS_PARALLELISM": "false"}
    environ = {}
    limit_tokenizer_threads(3, environ)
    assert environ == {"RAYON_NUM_THREADS": "3"}
    environ = {}
    limit_tokenizer_threads(0, environ)  # no budget given (the benchmark's raw loop by default): defaults stay
    assert environ == {}
    for chosen in ({"TOKENIZERS_PARALLELISM": "true"}, {"RAYON_NUM_THREADS": "8"}):
        environ = dict(chosen)
        limit_tokenizer_threads(1, environ)
        assert environ == chosen


class FakeLibc:
    """glibc's `mallopt` as ctypes shows it, recording its calls (``accept``: what it returns)."""

    def __init__(self, accept: int = 1):
        self.calls = []
        self.accept = accept

    def gnu_get_libc_version(self) -> bytes:
        return b"2.41"

    def mallopt(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return self.accept


def test_glibc_keeps_freed_memory_with_fixed_thresholds_unless_the_operator_tuned_malloc():
    from sentiment.process_tuning import keep_freed_memory

    libc = FakeLibc()
    assert keep_freed_memory(libc, environ={}) is True
    assert libc.calls == [(-3, 32 * 1024 * 1024), (-1, 256 * 1024 * 1024)]  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
    assert keep_freed_memory(FakeLibc(accept=0), environ={}) is False
    libc = FakeLibc()
    assert keep_freed_memory(libc, environ={"MALLOC_TRIM_THRESHOLD_": "131072"}) is False
    assert libc.calls == []

    class Musl:
        def mallopt(self, parameter: int, value: int) -> int:
            raise AssertionError("not glibc: mallopt must not be called")

    assert keep_freed_memory(Musl(), environ={}) is False
    if platform.libc_ver()[0] == "glibc":
        assert keep_freed_memory(environ={}) is True  # this machine's own glibc accepts both values


# ---------------------------------------------------------------------------------------------------------
# micro-batcher


class FakeModel:
    """Uppercases texts; records every batch and when it started; can be made slow or failing."""

    def __init__(self, delay: float = 0.0, fail_on: str = ""):
        self.batches: list[list[str]] = []
        self.started: list[float] = []
        self.delay = delay
        self.fail_on = fail_on

    def __call__(self, texts):
        self.batches.append(list(texts))
        self.started.append(time.monotonic())
        if self.fail_on in texts:
            raise RuntimeError("model failed")
        time.sleep(self.delay)
        return [t.upper() for t in texts]


def batcher_for(model: FakeModel, executor: ThreadPoolExecutor, **kw) -> MicroBatcher:
    batcher = MicroBatcher(on_thread(model, executor), **{"max_wait_s": 0.0, "max_queue": 100, **kw})
    batcher.start()
    return batcher


def run(scenario):
    """``scenario(executor)`` on a fresh event loop, bounded in time."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        return asyncio.run(asyncio.wait_for(scenario(executor), timeout=20))


def test_texts_that_arrive_during_a_forward_pass_leave_together_when_it_ends():
    model = FakeModel(delay=0.05)

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=8)
        first = asyncio.ensure_future(batcher.submit(["t0"]))
        await asyncio.sleep(0.01)  # t0 is in the model now
        rest = [asyncio.ensure_future(batcher.submit([f"t{i}"])) for i in range(1, 20)]
        results = [await first] + list(await asyncio.gather(*rest))
        await batcher.close()
        return results

    results = run(scenario)
    assert results == [[f"T{i}"] for i in range(20)]
    # t0 alone at once; then full batches of what queued meanwhile; then the rest.
    assert [len(b) for b in model.batches] == [1, 8, 8, 3]


def test_a_lone_text_starts_its_forward_pass_at_once():
    model = FakeModel()

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=64)
        submitted = time.monotonic()
        await batcher.submit(["alone"])
        await batcher.close()
        return model.started[0] - submitted

    assert run(scenario) < 0.02  # no waiting for company (MAX_WAIT_MS=0)
    assert model.batches == [["alone"]]


def test_with_max_wait_an_idle_model_waits_that_long_for_company():
    model = FakeModel()

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=64, max_wait_s=0.05)
        loop = asyncio.get_running_loop()
        started = loop.time()
        first = asyncio.ensure_future(batcher.submit(["a"]))
        await asyncio.sleep(0.01)
        await asyncio.gather(first, batcher.submit(["b"]))
        waited = loop.time() - started
        await batcher.close()
        return waited

    waited = run(scenario)
    assert 0.04 <= waited < 1.0
    assert model.batches == [["a", "b"]]


def test_a_request_larger_than_a_batch_is_split_and_reassembled_in_order():
    model = FakeModel()

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=4)
        big = [f"b{i}" for i in range(10)]
        results = await asyncio.gather(batcher.submit(big), batcher.submit(["x"]))
        await batcher.close()
        return results

    big, small = run(scenario)
    assert big == [f"B{i}" for i in range(10)] and small == ["X"]
    assert all(len(b) <= 4 for b in model.batches)
    assert sum(len(b) for b in model.batches) == 11


def test_full_queue_raises_overloaded_at_once_and_drain_flushes_without_waiting():
    model = FakeModel()

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=64, max_wait_s=30.0, max_queue=3)
        waiting = [asyncio.ensure_future(batcher.submit([f"q{i}"])) for i in range(3)]
        await asyncio.sleep(0.05)
        assert batcher.queued == 3
        with pytest.raises(Overloaded, match=r"3 texts queued \(max 3\)"):
            await batcher.submit(["one too many"])
        loop = asyncio.get_running_loop()
        started = loop.time()
        batcher.drain()
        results = await asyncio.gather(*waiting)
        flushed_in = loop.time() - started
        await batcher.close()
        return results, flushed_in

    results, flushed_in = run(scenario)
    assert results == [["Q0"], ["Q1"], ["Q2"]]
    assert flushed_in < 5.0  # not the 30 s max wait


def test_admission_refuses_what_would_finish_after_its_deadline_and_says_when_the_backlog_drains():
    model = FakeModel(delay=0.5)

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=4)
        batcher.calibrate(0.4, 4)  # 0.1 s per text
        running = asyncio.ensure_future(batcher.submit(["r0", "r1", "r2", "r3"]))  # in the model: ~0.4 s
        await asyncio.sleep(0)
        queued = asyncio.ensure_future(batcher.submit(["q0", "q1", "q2", "q3", "q4", "q5"]))  # ~0.6 s more
        await asyncio.sleep(0)
        now = time.monotonic()
        wait = batcher.expected_wait(1)
        with pytest.raises(Overloaded) as refused:
            batcher.admit(1, now + 0.5)
        batcher.admit(1, now + 2.0)  # a longer deadline is admitted
        with pytest.raises(Overloaded):  # in time on average, but without the headroom an estimate needs
            batcher.admit(1, now + wait + 0.1)
        await asyncio.gather(running, queued)
        await batcher.close()
        return wait, refused.value

    wait, refused = run(scenario)
    assert 1.0 <= wait <= 1.1  # 0.4 s in the model + 7 texts x 0.1 s
    assert "beyond the deadline" in str(refused)
    assert 0.9 <= refused.retry_after_s <= 1.0  # the backlog's own drain time, without the refused text


def test_admitted_work_that_can_no_longer_make_its_deadline_is_dropped_before_its_forward_pass():
    model = FakeModel(delay=0.3)

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=4)
        batcher.calibrate(0.04, 4)  # the estimate says 10 ms per text: the request below is admitted...
        busy = asyncio.ensure_future(batcher.submit(["busy"]))
        await asyncio.sleep(0.01)
        late = asyncio.ensure_future(batcher.submit(["late"], deadline=time.monotonic() + 0.1))
        on_time = asyncio.ensure_future(batcher.submit(["on time"], deadline=time.monotonic() + 5))
        await busy  # ...but the forward pass ahead of it takes 0.3 s
        with pytest.raises(DeadlineExceeded):
            await late
        result = await on_time
        await batcher.close()
        return result

    assert run(scenario) == ["ON TIME"]
    assert model.batches == [["busy"], ["on time"]]  # "late" never reached the model


def test_the_estimate_learns_from_well_filled_batches():
    model = FakeModel(delay=0.08)

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=4)
        batcher.calibrate(0.004, 4)  # 1 ms per text: far too optimistic
        for _ in range(6):
            await asyncio.gather(*(batcher.submit([f"t{i}"]) for i in range(4)))
        await batcher.close()
        return batcher.seconds_per_text

    assert 0.012 <= run(scenario) <= 0.03  # moving towards 20 ms per text (80 ms per batch of 4)


def answers_every(interval: float, forward_clock: float):
    """A `StartForward` whose answers come ``interval`` seconds apart, one batch at a time, while the forward
    pass's own clock says ``forward_clock``: the rest is time the pass's clock misses (pipe, a busy event loop)."""
    state = {"free_at": 0.0}

    def start(texts, on_done):
        loop = asyncio.get_running_loop()
        state["free_at"] = max(state["free_at"], loop.time()) + interval
        loop.call_at(state["free_at"], on_done, [t.upper() for t in texts], None, forward_clock)

    return start


@pytest.mark.parametrize("backlog, expected", [(True, 0.005), (False, 0.00025)],
                         ids=["saturated-time-between-answers", "idle-between-batches-forward-clock"])
def test_the_speed_is_the_time_between_answers_while_the_model_side_is_saturated(backlog, expected):
    async def scenario():
        batcher = MicroBatcher(answers_every(0.02, 0.001), max_batch_size=4, max_wait_s=0.0, max_queue=100)
        batcher.start()
        if backlog:  # 40 texts at once: every answer finds the next batch already sent
            await asyncio.gather(*(batcher.submit([f"t{i}"]) for i in range(40)))
        else:  # one full batch at a time, the model idle in between
            for _ in range(10):
                await batcher.submit([f"t{i}" for i in range(4)])
                await asyncio.sleep(0.005)
        await batcher.close()
        return batcher.seconds_per_text

    assert run(lambda executor: scenario()) == pytest.approx(expected, rel=0.3)


def test_a_full_batch_waiting_is_sent_while_the_model_is_busy_two_in_flight_at_most():
    model = FakeModel(delay=0.05)

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=2)
        first = asyncio.ensure_future(batcher.submit(["a"]))
        await asyncio.sleep(0.01)  # "a" is in the model
        rest = [asyncio.ensure_future(batcher.submit([t])) for t in ("b", "c", "d", "e", "f")]
        await asyncio.sleep(0)
        in_flight = batcher.pending - batcher.queued  # "a", and the full batch ("b", "c") sent behind it
        results = await asyncio.gather(first, *rest)
        await batcher.close()
        return in_flight, results

    in_flight, results = run(scenario)
    assert in_flight == 3
    assert results == [["A"], ["B"], ["C"], ["D"], ["E"], ["F"]]
    assert model.batches == [["a"], ["b", "c"], ["d", "e"], ["f"]]


def test_a_failing_batch_fails_only_its_requests_and_the_batcher_lives_on():
    model = FakeModel(fail_on="boom")

    async def scenario(executor):
        batcher = batcher_for(model, executor, max_batch_size=2)
        with pytest.raises(RuntimeError, match="model failed"):
            await batcher.submit(["boom", "x"])
        after = await batcher.submit(["fine"])
        alive = batcher.alive
        await batcher.close()
        return after, alive

    assert run(scenario) == (["FINE"], True)


# ---------------------------------------------------------------------------------------------------------
# benchmark arithmetic


def test_request_cost_measures_answers_and_refusals_on_the_fast_path():
    import asyncio

    import request_cost

    # Each measurement raises unless every request got what its path gives: 200s, or 503s with Retry-After.
    assert 0 < asyncio.run(request_cost.answered(64, 32)) < 0.01
    assert 0 < asyncio.run(request_cost.refused(64)) < 0.01

    async def one_request() -> tuple:
        state = request_cost.service()
        (guard, transport), = request_cost.connections(state, 1)
        guard.data_received(request_cost.request("fine.", timeout_ms=50))  # nothing queued: admitted at once
        taken = (guard.taken, state.batcher.pending)
        while guard.taken:
            await asyncio.sleep(0)
        return taken, transport.statuses

    assert asyncio.run(one_request()) == ((True, 1), [b"200"])


def test_benchmark_percentiles_and_medians():
    import bench

    latencies = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert (bench.percentile(latencies, 50), bench.percentile(latencies, 99)) == (0.05, 0.099)
    assert bench.percentile([0.2], 99) == 0.2
    runs = [{"texts_per_s": t, "p50_ms": p, "p99_ms": 2 * p, "statuses": {200: 10}} for t, p in
            ((100.0, 5.0), (300.0, 1.0), (200.0, 3.0))]
    med = bench.median_of(runs)
    assert (med["texts_per_s"], med["p50_ms"], med["p99_ms"], med["statuses"]) == (200.0, 3.0, 6.0, {200: 30})
    assert med["rounds"] == [100.0, 300.0, 200.0]
    texts = bench.review_texts(50, seed=3)
    assert texts == bench.review_texts(50, seed=3) and all(5 <= len(t.split()) <= 30 for t in texts)


def test_the_event_loop_is_uvloop_by_default_and_asyncio_on_request(monkeypatch):
    import asyncio
    import builtins

    import uvloop
    from sentiment.server import event_loop_runner

    assert from_env({"MODEL_PATH": "/m"}).event_loop == "auto"
    assert (event_loop_runner("auto"), event_loop_runner("uvloop"), event_loop_runner("asyncio")) == (
        uvloop.run, uvloop.run, asyncio.run)
    real_import = builtins.__import__

    def without_uvloop(name, *args, **kwargs):
        if name == "uvloop":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_uvloop)
    assert (event_loop_runner("auto"), event_loop_runner("uvloop")) == (asyncio.run, None)


# ---------------------------------------------------------------------------------------------------------
# the fast path's HTTP (plain_http.py)

PLAIN_BODY = b'{"text": "fine"}'
PLAIN = (b"POST /analyze HTTP/1.1\r\nHost: x\r\nX-Request-Timeout-Ms: 50\r\nContent-Length: 16\r\n\r\n" + PLAIN_BODY)


def test_one_complete_plain_request_is_read_with_lower_case_header_names():
    from sentiment.plain_http import plain_analyze_request

    assert plain_analyze_request(PLAIN) == {"host": "x", "x-request-timeout-ms": "50", "content-length": "16"}
    mixed_case = PLAIN.replace(b"Content-Length: 16", b"CONTENT-length:16  ")
    assert plain_analyze_request(mixed_case)["content-length"] == "16"


@pytest.mark.parametrize("data", [
    PLAIN[:-1],  # body not all here yet
    PLAIN + PLAIN,  # two pipelined requests in one chunk
    PLAIN.replace(b"POST /analyze HTTP/1.1", b"POST /analyze HTTP/1.0"),
    PLAIN.replace(b"POST /analyze ", b"POST /analyze?x=1 "),
    PLAIN.replace(b"GET", b"POST").replace(b"POST ", b"PUT "),
    PLAIN.replace(b"Host: x\r\n", b"Host: x\r\nTransfer-Encoding: chunked\r\n"),
    PLAIN.replace(b"Host: x\r\n", b"Host: x\r\nExpect: 100-continue\r\n"),
    PLAIN.replace(b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n"),
    PLAIN.replace(b"Host: x\r\n", b"Host: x\r\nUpgrade: websocket\r\n"),
    PLAIN.replace(b"Host: x\r\n", b"Host: x\r\nContent-Length: 16\r\n"),  # two Content-Lengths
    PLAIN.replace(b"Host: x\r\n", b"Host: x\r\n folded\r\n"),  # obsolete line folding
    PLAIN.replace(b"Host: x", b"Host : x"),  # whitespace before the colon
    PLAIN.replace(b"Host: x", b"Host: \xe9"),  # not ASCII
    PLAIN.replace(b"Host: x", b"Host: x\nContent-Length: 16"),  # a bare LF: a second line to some parsers
    PLAIN.replace(b"Host: x", b"Host: x\x00y"),
    PLAIN.replace(b"Content-Length: 16", b"Content-Length: +16"),
    PLAIN.replace(b"Content-Length: 16", b"Content-Length: " + b"9" * 5000),
    PLAIN.replace(b"Content-Length: 16\r\n", b""),
], ids=["partial-body", "pipelined", "http-1.0", "query", "method", "chunked", "expect", "connection", "upgrade",
        "two-lengths", "folding", "space-before-colon", "non-ascii", "bare-lf", "nul", "signed-length", "huge-length",
        "no-length"])
def test_anything_but_one_complete_plain_request_is_left_to_aiohttp(data):
    from sentiment.plain_http import plain_analyze_request

    assert plain_analyze_request(data) is None


def test_the_fast_path_writes_complete_responses_with_retry_after_and_connection_close_when_asked():
    from sentiment.plain_http import ResponseRenderer, error_body

    def parse(raw: bytes) -> tuple[str, dict, bytes]:
        head, body = raw.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        return lines[0], dict(line.split(": ", 1) for line in lines[1:]), body

    renderer = ResponseRenderer()
    message = "expected wait 0.300s is beyond the deadline (0.050s)"
    status, headers, body = parse(renderer.render(503, error_body("overloaded", message), 2, now=1_795_000_000))
    assert status == "HTTP/1.1 503 Service Unavailable"
    assert headers == {"Content-Type": "application/json; charset=utf-8", "Retry-After": "2",
                       "Content-Length": str(len(body)), "Date": "Wed, 18 Nov 2026 11:06:40 GMT"}
    assert json.loads(body) == {"error": {"reason": "overloaded", "message": message}}
    status, headers, body = parse(renderer.render(200, b'{"label": "POSITIVE"}', close=True, now=1_795_000_001))
    assert status == "HTTP/1.1 200 OK" and body == b'{"label": "POSITIVE"}'
    assert headers == {"Content-Type": "application/json; charset=utf-8", "Connection": "close",
                       "Content-Length": "21", "Date": "Wed, 18 Nov 2026 11:06:41 GMT"}


def test_the_load_generator_reads_status_retry_after_and_connection_close_from_responses_in_pieces():
    import bench

    class Transport:
        closed = False

        def close(self):
            self.closed = True

    async def scenario():
        conn = bench._Connection()
        conn.transport = Transport()
        got = []
        for response in (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: x\r\n\r\n{}",
                         b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nCONTENT-LENGTH: 3\r\n\r\n{ }",
                         b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"):
            conn.waiter = asyncio.get_running_loop().create_future()
            for i in range(0, len(response), 7):  # as TCP may deliver it
                conn.data_received(response[i:i + 7])
            got.append(await conn.waiter)
        return got, bytes(conn.buffer), conn.transport.closed

    assert asyncio.run(scenario()) == ([(200, 0), (503, 2), (200, 0)], b"", True)


def test_the_benchmark_counts_tcp_segments_and_cpu_per_good_answer(tmp_path):
    import bench

    snmp = tmp_path / "snmp"
    snmp.write_text("Ip: Forwarding DefaultTTL\nIp: 1 64\n"
                    "Tcp: RtoAlgorithm RtoMin ActiveOpens InSegs OutSegs RetransSegs\nTcp: 1 200 7 900 1234 3\n"
                    "Udp: InDatagrams\nUdp: 5\n")
    assert bench.tcp_segments_sent(snmp) == 1234
    assert bench.tcp_segments_sent(tmp_path / "absent") is None  # not Linux: the column reads "-"
    runs = [{"texts_per_s": 10.0, "client_us_per_ok": c, "loop_us_per_ok": 40.0 + c, "model_us_per_ok": 180.0,
             "tcp_segments_per_request": s} for c, s in ((18.0, 3.1), (16.0, 2.0), (17.0, 3.2))]
    row = bench.median_of(runs)
    assert (bench.cpu_per_answer(row), bench.segments_cell(row)) == ("17 57 180", "3.10")
    runs[1]["tcp_segments_per_request"] = None  # one round without the count: no median of the others
    row = bench.median_of(runs)
    assert (row["tcp_segments_per_request"], bench.segments_cell(row)) == (None, "-")
    assert bench.cpu_per_answer({"texts_per_s": 1.0}) == "-"


def test_the_benchmark_reads_user_and_system_cpu_and_the_hosts_idle_share(tmp_path):
    import os

    import bench

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 40 700 20 1 9 3 0 0\ncpu0 50 2 20 350 10 0 4 1 0 0\n")
    assert bench.host_idle(stat) == (720, 878)  # idle + iowait, of user..steal
    assert bench.host_idle(tmp_path / "absent") is None
    user, system = bench.cpu_times([os.getpid(), 2 ** 22 + 1])  # this process, and one that does not exist
    assert user > 0 and system >= 0 and bench.cpu_seconds([os.getpid()]) >= user


def test_paired_rows_parses_rows_and_compares_each_with_the_first_pair_by_pair():
    import paired_rows

    assert [paired_rows.parse_row(s) for s in ("256", "1024:100", "1024:ignore", "1024:100:ignore")] == [
        (256, True, None), (1024, True, 100.0), (1024, False, None), (1024, False, 100.0)]
    for bad in ("x", "0", "256:100:50", "256:-5", "256:fast", "256:inf", "256:nan"):
        with pytest.raises(ValueError, match="row"):
            paired_rows.parse_row(bad)

    def run(tps, loop=45.0, idle=0.01):
        return {"texts_per_s": tps, "client_us_per_ok": 20.0, "loop_us_per_ok": loop, "model_us_per_ok": 200.0,
                "model_system_us_per_ok": 2.0, "tcp_segments_per_request": 3.0, "idle_fraction": idle, "shed": 0.0}

    # The machine slowed down in the second pair: both rows lost, the ratio within each pair did not move much.
    reference = [run(8000.0), run(6000.0), run(7000.0)]
    row = [run(7600.0, 50.0), run(5820.0, 52.0), run(7140.0, 54.0, None)]
    summary = paired_rows.compare(reference, row)
    assert summary["ratio"] == pytest.approx(0.97) and (summary["slower"], summary["pairs"]) == (2, 3)
    assert (summary["texts_per_s"], summary["loop_us_per_ok"], summary["idle_fraction"]) == (7140.0, 52.0, None)
    table = paired_rows.report([(256, True, None), (1024, False, 100.0)], [paired_rows.compare(reference, reference),
                                                                          summary])
    assert "          256 honour |    7000    1.000   0/3    0.00 |       20.0  45.0  200.0   2.0 |    3.00  1.0%" \
        in table
    assert " 1024 ignore, 100 ms |    7140    0.970   2/3    0.00 |       20.0  52.0  200.0   2.0 |    3.00     -" \
        in table


def test_the_benchmark_reverses_its_rows_every_other_round():
    import bench

    rows = [(256, True, None), (1024, True, None), (1024, True, 100.0)]
    assert [bench.round_order(rows, r) for r in range(3)] == [[0, 1, 2], [2, 1, 0], [0, 1, 2]]


def run_row(concurrency: int, rounds: list[float], honour: bool = True, timeout_ms=None) -> dict:
    """A benchmark row as `bench.median_of` returns it, from its per-round throughputs."""
    import bench

    return bench.median_of([{"concurrency": concurrency, "honour_retry_after": honour, "timeout_ms": timeout_ms,
                             "texts_per_s": tps, "ok": 1, "p50_ms": 1.0, "p99_ms": 2.0, "statuses": {200: 1}}
                            for tps in rounds])


def test_goodput_is_measured_against_the_best_median_not_the_best_row_of_each_round():
    import bench

    # Two honouring rows as fast as each other, noisy in different rounds: the best of the rounds is 110, 100, 110,
    # the best median 100. A row steady at 95 is at 0.95 of the peak, not at the median of 95 / best (0.86).
    raw = run_row(0, [50.0, 50.0, 50.0])
    server = [run_row(64, [80.0, 80.0, 80.0]), run_row(256, [100.0, 90.0, 110.0]),
              run_row(1024, [110.0, 100.0, 90.0]), run_row(1024, [95.0, 95.0, 95.0], honour=False)]
    checks = {what: (measured, met) for what, measured, _, met in bench.targets(raw, server, {}, 1000.0)}
    assert checks["goodput 1024 ignore / peak"] == (pytest.approx(0.95), True)
    assert checks["goodput 256 honour / peak"] == (1.0, True)
    assert checks["concurrency 64: server / raw"] == (1.6, True)  # one denominator: per round, then the median
    server[-1] = run_row(1024, [94.0, 95.0, 93.0], honour=False)
    checks = {what: (measured, met) for what, measured, _, met in bench.targets(raw, server, {}, 1000.0)}
    assert checks["goodput 1024 ignore / peak"] == (pytest.approx(0.94), False)


def test_request_metrics_count_status_reason_and_latency_including_series_created_on_first_use():
    from prometheus_client import generate_latest
    from sentiment.metrics import Metrics

    metrics = Metrics()
    metrics.count_request(200, None, 0.004)
    metrics.count_request(503, "overloaded", 0.0002)
    metrics.count_request(503, "overloaded")
    metrics.count_request(418, "teapot")  # neither listed up front: its series appear on first use
    text = generate_latest(metrics.registry).decode()
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert samples['inference_requests_total{status="200"}'] == "1.0"
    assert samples['inference_requests_total{status="503"}'] == "2.0"
    assert samples['inference_requests_total{status="418"}'] == "1.0"
    assert samples['inference_requests_total{status="400"}'] == "0.0"  # listed series exist at 0
    assert samples['inference_errors_total{reason="overloaded"}'] == "2.0"
    assert samples['inference_errors_total{reason="teapot"}'] == "1.0"
    assert samples['inference_errors_total{reason="model_error"}'] == "0.0"
    assert samples["inference_request_duration_seconds_count"] == "2.0"
    assert samples['inference_request_duration_seconds_bucket{le="0.001"}'] == "1.0"
    assert samples['inference_request_duration_seconds_bucket{le="0.005"}'] == "2.0"
