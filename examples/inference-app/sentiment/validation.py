"""Request bodies to a list of texts, or a `BadRequest` carrying the 4xx to answer. No I/O, no model.

Accepted: ``{"text": "..."}`` or ``{"text": ["...", ...]}`` as UTF-8 JSON, whatever the Content-Type says
(``curl -d`` sends ``application/x-www-form-urlencoded``). Other keys are ignored.
"""

import json
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int
    max_texts: int
    max_text_chars: int


class BadRequest(Exception):
    """A client error: HTTP status, a stable machine-readable reason (the metrics label) and a message."""

    def __init__(self, status: int, reason: str, message: str):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message

    def body(self) -> dict:
        return error_document(self.reason, self.message)


def error_document(reason: str, message: str) -> dict:
    """The JSON body of every error the service answers: a stable machine-readable reason and a message."""
    return {"error": {"reason": reason, "message": message}}


# Every reason a client error can carry: the `inference_errors_total{reason}` label values.
CLIENT_ERROR_REASONS = (
    "body_too_large", "invalid_utf8", "invalid_json", "wrong_type", "missing_text", "empty_text",
    "text_too_long", "too_many_texts", "invalid_text", "invalid_timeout", "not_found", "method_not_allowed",
)

# Request headers that shorten a request's deadline (milliseconds from receipt), in order of precedence: the
# client's own, then the one Envoy (Envoy Gateway, Istio) sets from the route's timeout.
TIMEOUT_HEADERS = ("X-Request-Timeout-Ms", "X-Envoy-Expected-Rq-Timeout-Ms")


def timeout_ms(headers, default_ms: float) -> float:
    """The request's time budget in milliseconds: the first `TIMEOUT_HEADERS` present, capped at ``default_ms``
    (a client may ask for less time than the server allows, never more)."""
    for name in TIMEOUT_HEADERS:
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if not value > 0 or value == float("inf"):  # nan fails the comparison
            raise BadRequest(400, "invalid_timeout", f"{name} must be a positive number of milliseconds, got "
                             f"{raw[:40]!r}")
        return min(value, default_ms)
    return default_ms


def parse_body(body: bytes, limits: Limits) -> tuple[list[str], bool]:
    """``(texts, batched)``: the texts to classify and whether the caller sent a list."""
    if len(body) > limits.max_body_bytes:
        raise BadRequest(413, "body_too_large", f"body is larger than {limits.max_body_bytes} bytes")
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRequest(400, "invalid_utf8", f"body is not UTF-8 (byte {err.start})") from None
    try:
        payload = json.loads(decoded)
    except json.JSONDecodeError as err:
        raise BadRequest(400, "invalid_json", f"body is not valid JSON: {err.msg}") from None
    except RecursionError:  # deeply nested arrays must be a 400, not a crash
        raise BadRequest(400, "invalid_json", "body is not valid JSON: nested too deeply") from None
    except ValueError:
        # The only other ValueError json.loads raises: an integer longer than Python converts (CVE-2020-10735).
        raise BadRequest(400, "invalid_json", f"body has a number with more than {sys.get_int_max_str_digits()} "
                         "digits") from None
    if not isinstance(payload, dict):
        raise BadRequest(400, "wrong_type", 'body must be a JSON object like {"text": "..."}')
    if "text" not in payload:
        raise BadRequest(400, "missing_text", 'field "text" is required')
    value = payload["text"]
    if isinstance(value, str):
        return [check_text(value, "text", limits)], False
    if not isinstance(value, list):
        raise BadRequest(400, "wrong_type", 'field "text" must be a string or a list of strings')
    if not value:
        raise BadRequest(422, "empty_text", 'field "text" is an empty list')
    if len(value) > limits.max_texts:
        raise BadRequest(422, "too_many_texts", f"at most {limits.max_texts} texts per request, got {len(value)}")
    texts = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise BadRequest(400, "wrong_type", f"text[{i}] must be a string, got {type(item).__name__}")
        texts.append(check_text(item, f"text[{i}]", limits))
    return texts, True


def check_text(text: str, where: str, limits: Limits) -> str:
    if not text.strip():
        raise BadRequest(422, "empty_text", f"{where} is empty")
    if len(text) > limits.max_text_chars:
        raise BadRequest(422, "text_too_long", f"{where} is longer than {limits.max_text_chars} characters")
    try:
        # JSON may carry lone surrogates ("\ud800"): valid JSON, not text a tokenizer can take.
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(400, "invalid_text", f"{where} contains an unpaired surrogate") from None
    return text
