"""The project's tests: gpu-platform's harness fixture is a pytest plugin."""

pytest_plugins = ["gpu_platform.testing"]
