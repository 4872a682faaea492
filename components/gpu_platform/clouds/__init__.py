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


EXTRAS = {"pulumi_aws": "aws", "pulumi_azure_native": "azure", "pulumi_gcp": "gcp", "pulumi_oci": "oci"}
"""The cloud SDK each extra of the ``gpu-platform`` distribution installs (pyproject's optional dependencies)."""


def missing_extra(err: ModuleNotFoundError) -> ModuleNotFoundError:
    """The error to raise when a cloud module's SDK import failed: one naming the extra that installs the SDK when it
    is the SDK that is missing, else ``err`` itself (a broken SDK installation is its own problem)."""
    sdk = (err.name or "").split(".")[0]
    extra = EXTRAS.get(sdk)
    if extra is None:
        return err
    return ModuleNotFoundError(f"the {extra.upper() if extra != 'azure' else 'Azure'} components need the {sdk} "
                               f"package, which the '{extra}' extra installs: pip install 'gpu-platform[{extra}]'",
                               name=err.name)
