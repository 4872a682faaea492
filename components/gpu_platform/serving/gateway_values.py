"""Helm values of the gateway layer's charts (pure functions): Envoy Gateway and, with InferencePool backends, Envoy
AI Gateway. Every key exists in the pinned chart's values.yaml (tests/data/chart_keys) or, below Envoy Gateway's
``config.envoyGateway``, in its EnvoyGateway configuration type.
"""

from typing import Any

from .gateway_objects import (
    AI_GATEWAY_CONTROLLER_SERVICE,
    AI_GATEWAY_EXTENSION_PORT,
    AI_GATEWAY_NAMESPACE,
    ENVOY_GATEWAY_NAMESPACE,
)

INFERENCE_POOL_RESOURCE = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
"""The backend kind Envoy AI Gateway resolves (examples/inference-pool/envoy-gateway-values-addon.yaml@v1.1.0)."""
AI_GATEWAY_POST_HOOKS = ["Translation", "Cluster", "Route"]
"""The xDS translation stages Envoy AI Gateway post-processes (manifests/envoy-gateway-values.yaml@v1.1.0)."""


def envoy_gateway_values(inference_pool: bool) -> dict[str, Any]:
    """Envoy Gateway without its chart's CRDs: the chart would install the *experimental* Gateway API CRDs, which the
    standard bundle's safe-upgrades policy refuses (the platform applies the standard bundle and Envoy Gateway's own
    CRDs itself). With ``inference_pool``, Envoy AI Gateway's controller is the extension server: it sees every
    listener, route, cluster and secret Envoy Gateway translates, resolves InferencePool backendRefs, and needs
    Envoy Gateway's Backend API (envoyproxy/ai-gateway@v1.1.0 manifests/envoy-gateway-values.yaml and
    examples/inference-pool/envoy-gateway-values-addon.yaml; EnvoyPatchPolicy, which that file calls optional, stays
    off: it would let any namespace patch Envoy's configuration)."""
    values: dict[str, Any] = {"crds": {"enabled": False}}
    if inference_pool:
        every = {"includeAll": True}
        values["config"] = {"envoyGateway": {
            "extensionApis": {"enableBackend": True},
            "extensionManager": {
                "hooks": {"xdsTranslator": {
                    "translation": {"listener": dict(every), "route": dict(every), "cluster": dict(every),
                                    "secret": dict(every)},
                    "post": list(AI_GATEWAY_POST_HOOKS)}},
                "service": {"fqdn": {
                    "hostname": f"{AI_GATEWAY_CONTROLLER_SERVICE}.{AI_GATEWAY_NAMESPACE}.svc.cluster.local",
                    "port": AI_GATEWAY_EXTENSION_PORT}},
                "backendResources": [dict(INFERENCE_POOL_RESOURCE)],
            },
        }}
    return values


def ai_gateway_values() -> dict[str, Any]:
    """Envoy AI Gateway's controller, told where Envoy Gateway runs (its chart grants Envoy Gateway's service account
    read access to InferencePools there)."""
    return {"envoyGateway": {"namespace": ENVOY_GATEWAY_NAMESPACE}}


def ai_gateway_crds_values() -> dict[str, Any]:
    """The AI Gateway CRD chart takes no values."""
    return {}
