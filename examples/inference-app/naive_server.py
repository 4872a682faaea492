"""The benchmark's baseline: a sentiment API as tutorials write it, Flask plus ``transformers.pipeline``.

One request, one pipeline call, one forward pass. Tuned fairly: the same model directory, device and torch
threads as the server, OpenMP's passive wait (classifier.py explains why), Flask's threaded development server
(``app.run``, as tutorials run it), and a lock around the pipeline: a fast tokenizer is not safe to call from two
threads at once ("Already borrowed"), and one forward pass at a time is what the CPU does anyway.

    python naive_server.py --model DIR --port 8081 [--device cpu] [--threads N]

It logs ``listening on 127.0.0.1:PORT`` once the model is loaded, then serves ``POST /analyze`` with
``{"text": "..."}`` and answers ``{"label", "score"}``.
"""

import argparse
import logging
import os
import sys
import threading

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: PyTorch's default)")
    args = parser.parse_args()

    import torch
    from flask import Flask, jsonify, request
    from transformers import pipeline

    if args.threads:
        torch.set_num_threads(args.threads)
    classifier = pipeline("sentiment-analysis", model=args.model, device=0 if args.device == "cuda" else -1)
    lock = threading.Lock()
    app = Flask(__name__)

    @app.route("/analyze", methods=["POST"])
    def analyze():
        text = request.get_json(force=True)["text"]
        with lock:
            result = classifier(text)[0]
        return jsonify({"label": result["label"], "score": round(float(result["score"]), 6)})

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per request
    print(f"listening on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    app.run(host="127.0.0.1", port=args.port, threaded=True)


if __name__ == "__main__":
    main()
