"""The kubeconfig the platform's Kubernetes provider uses on AKS, pure (no SDK).

Clusters with local accounts disabled refuse static credentials ("Getting static credential isn't allowed because
this cluster is set to disable local accounts", AKS ``manage-local-accounts-managed-azure-ad.md``), so the provider
authenticates with Entra ID: ``listManagedClusterUserCredentials`` with ``format: exec`` returns a kubeconfig whose
user runs the ``kubelogin`` credential plugin (the SDK's ``format`` docstring: "requires kubelogin binary in the
path"). That kubeconfig logs in with ``--login devicecode``, kubelogin's default, which waits for a person at a
browser: `non_interactive` switches it to the Azure CLI's session, the way the azure-native provider itself
authenticates by default. kubelogin lets ``AAD_LOGIN_METHOD`` override the flag (``spn``, ``msi``,
``workloadidentity`` for CI; Azure/kubelogin ``pkg/internal/token/options.go``, ``UpdateFromEnv``).
"""

import base64
from typing import Any

import yaml

USER_CREDENTIALS_FORMAT = "exec"
"""``listManagedClusterUserCredentials(format=...)``: an exec-plugin (kubelogin) kubeconfig."""
KUBELOGIN = "kubelogin"
LOGIN_FLAGS = ("--login", "-l")
DEFAULT_LOGIN = "azurecli"
"""kubelogin's login mode for the provider: the Azure CLI session of whoever runs Pulumi."""


def decode_kubeconfig(kubeconfigs: Any) -> str:
    """The first credential of ``listManagedClusterUserCredentials``, base64-decoded (AKS returns it encoded)."""
    first = kubeconfigs[0]
    value = first["value"] if isinstance(first, dict) else first.value
    return base64.b64decode(value).decode("utf-8")


def _login_args(args: list[str], login: str) -> list[str]:
    out = list(args)
    for i, arg in enumerate(out):
        if arg in LOGIN_FLAGS and i + 1 < len(out):
            out[i + 1] = login
            return out
        if arg.startswith("--login="):
            out[i] = f"--login={login}"
            return out
    return [*out, "--login", login]


def non_interactive(kubeconfig: str, login: str = DEFAULT_LOGIN) -> str:
    """``kubeconfig`` with every kubelogin exec user logging in with ``login`` instead of a device code.

    A kubeconfig without a kubelogin user (a token, a client certificate) comes back unchanged, character for
    character.
    """
    document = yaml.safe_load(kubeconfig)
    changed = False
    for user in (document or {}).get("users") or []:
        plugin = ((user or {}).get("user") or {}).get("exec") or {}
        if str(plugin.get("command", "")).rsplit("/", 1)[-1] != KUBELOGIN:
            continue
        args = [str(a) for a in plugin.get("args") or []]
        updated = _login_args(args, login)
        if updated != args:
            plugin["args"] = updated
            changed = True
    return yaml.safe_dump(document, sort_keys=False) if changed else kubeconfig
