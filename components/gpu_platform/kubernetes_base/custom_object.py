"""`KubernetesObject`: any Kubernetes object registered from its full body.

``kubernetes.apiextensions.CustomResource`` only carries ``spec``; kinds such as Kueue's WorkloadPriorityClass keep
their fields at the top level (``value``, ``description``). The Kubernetes provider takes a custom resource's
inputs as the object itself, so registering the body under the ``kubernetes:<group>/<version>:<Kind>`` token
is what ``CustomResource`` does too, without the ``spec``-only restriction.
"""

import functools
from importlib.metadata import PackageNotFoundError, version
from typing import Optional

import pulumi


@functools.cache  # the installed SDK's version cannot change under a running program; reading it is slow
def _provider_version() -> Optional[str]:
    try:
        return version("pulumi_kubernetes")
    except PackageNotFoundError:  # pragma: no cover - the SDK is a dependency
        return None


class KubernetesObject(pulumi.CustomResource):
    """A Kubernetes object from its wire-form body (``apiVersion``, ``kind``, ``metadata`` and the rest)."""

    def __init__(self, resource_name: str, body: dict, opts: Optional[pulumi.ResourceOptions] = None):
        api_version, kind = body["apiVersion"], body["kind"]
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(version=_provider_version()), opts)
        super().__init__(f"kubernetes:{api_version}:{kind}", resource_name, dict(body), opts)
