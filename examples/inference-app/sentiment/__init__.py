"""Sentiment-analysis inference service: an async HTTP server with dynamic micro-batching.

Modules: `settings` (environment), `validation` (request bodies to texts, or a 4xx), `batcher` (dynamic
micro-batching), `classifier` (the Hugging Face model), `metrics` (Prometheus), `server` (HTTP and lifecycle).
"""
