"""Cloud layers: a cluster and its GPU node pools per cloud, each publishing `GpuPool`s.

Each cloud is a package: ``<cloud>/cluster.py`` holds its components and imports the cloud SDK (only when that
cloud is used); ``<cloud>/options.py`` is pure and parses the cloud's own configuration keys, so validation never
needs a cloud SDK.
"""
