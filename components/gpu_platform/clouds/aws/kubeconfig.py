"""The kubeconfig of an EKS cluster: token by ``aws eks get-token`` at use time, so nothing secret is stored."""

import json

EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


def eks_kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig (JSON, which is YAML) whose user runs ``aws eks get-token`` for a fresh token."""
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": cluster_name,
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": EXEC_API_VERSION,
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
            "interactiveMode": "Never",
        }}}],
    }, sort_keys=True)
