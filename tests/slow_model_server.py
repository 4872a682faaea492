"""``python -m sentiment``'s own `serve` with a model of known speed, for the deadline tests over HTTP.

The model sleeps ``SLOW_MODEL_MS_PER_TEXT`` per text (a CPU-free stand-in: its throughput is the same whatever
else the test machine runs) and answers POSITIVE for every text. Everything else is the real server: settings
from the environment, admission, deadlines, connection handling. Run from examples/inference-app.
"""

import asyncio
import logging
import os
import sys
import time

from sentiment.prediction import Prediction
from sentiment.server import serve
from sentiment.settings import from_env


class SlowModel:
    def __init__(self, seconds_per_text: float):
        self.seconds_per_text = seconds_per_text

    def predict(self, texts):
        time.sleep(self.seconds_per_text * len(texts))
        return [Prediction("POSITIVE", 0.9) for _ in texts]

    def warm_up(self, batch_size: int) -> None:
        pass


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    per_text = float(os.environ["SLOW_MODEL_MS_PER_TEXT"]) / 1000.0
    sys.exit(asyncio.run(serve(from_env(), load_model=lambda settings: SlowModel(per_text))))
