"""Shared pytest set-up: the public mock-harness fixture and small config builders."""

import pytest

pytest_plugins = ["gpu_platform.testing"]


def aws_pool(**overrides):
    """A valid AWS node pool entry; tests override one field at a time."""
    return {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 2, **overrides}


@pytest.fixture
def aws_config():
    """A minimal valid AWS stack configuration (namespace stripped)."""
    return {"cloud": "aws", "region": "us-west-2", "nodePools": [aws_pool()]}
