"""Cloud layers: a cluster and its GPU node pools per cloud, each publishing `GpuPool`s.

Each ``<cloud>.py`` imports its cloud SDK lazily (only when that cloud is used); each ``<cloud>_options.py`` is
pure and parses the cloud's own configuration keys, so validation never needs a cloud SDK.
"""
