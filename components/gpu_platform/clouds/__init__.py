"""Cloud layers: a cluster and its GPU node pools per cloud, each publishing `GpuPool`s.

Each cloud is a package: ``<cloud>/cluster.py`` holds its components and imports the cloud SDK (only when that
cloud is used); ``<cloud>/options.py`` is pure and parses the cloud's own configuration keys, so validation never
needs a cloud SDK.
"""

import importlib


def options_module(cloud: str):
    """The pure options module of a cloud (``clouds/<cloud>/options.py``), imported by name: the stack parser and the
    features' parsers read a cloud's own keys through it without importing any cloud package at module level."""
    return importlib.import_module(f"gpu_platform.clouds.{cloud}.options")
