"""The cloud-init script of an OKE GPU node: OKE's own bootstrap plus the kubelet flags OKE has no field for.

OKE node pools have no taint field (oracle/terraform-provider-oci#1504), so the taints reach the node through
kubelet ``--register-with-taints``, passed to OKE's bootstrap with ``--kubelet-extra-args``. A custom
``user_data`` replaces OKE's default start script, so the script must still run OKE's bootstrap itself:

- Oracle Linux OKE images: OKE's documented default script fetches ``oke_init_script`` from the instance
  metadata service and runs it (``/var/run/oke-init.sh``), which accepts ``--kubelet-extra-args``.
- Images that carry the ``oke`` CLI (OKE Ubuntu images, oracle-quickstart/oci-hpc-oke's RDMA images):
  ``oke bootstrap --kubelet-extra-args ...`` (the same dispatch oci-hpc-oke's ``files/oke-ubuntu-cloud-init.sh``
  does).

On a DRA pool whose NVLink domain spans nodes (BM.GPU.GB200.4, BM.GPU.GB300.4) the script also turns the host's
``nvidia-imex.service`` off before the node joins: NVIDIA's DRA driver runs the IMEX daemons of each ComputeDomain
itself, and its prerequisites say the host unit "must be disabled" (``systemctl disable --now nvidia-imex.service &&
systemctl mask nvidia-imex.service``, kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 docs/prerequisites.md), as
oracle-quickstart/oci-hpc-oke's ``files/oke-ubuntu-cloud-init.sh`` does on BM.GPU.GB200*/GB300* shapes "for Dynamic
Resource Allocation (DRA) compatibility".

Pure functions: tests decode the rendered ``user_data`` and read the script back.
"""

import base64
import shlex
from collections.abc import Sequence

from ...labels import Taint
from ..host_imex import imex_off_lines

IMDS = "http://169.254.169.254/opc/v2/instance/metadata"
OKE_INIT_SCRIPT = "/var/run/oke-init.sh"
# OKE's default start script, verbatim from "Using Custom Cloud-init Initialization Scripts to Set Up Managed Nodes".
FETCH_OKE_INIT = (
    f'curl --fail -H "Authorization: Bearer Oracle" -L0 {IMDS}/oke_init_script | base64 --decode >{OKE_INIT_SCRIPT}'
)
# RDMA verbs pin memory (ibv_reg_mr); CRI-O's default 8 MB memlock limit makes NCCL over RoCE fail, so RDMA
# nodes start containers with unlimited memlock (oci-hpc-oke files/oke-ubuntu-cloud-init.sh, 12-memlock.conf).
CRIO_MEMLOCK_CONF = "/etc/crio/crio.conf.d/12-memlock.conf"
CRIO_MEMLOCK = '[crio.runtime]\ndefault_ulimits = [\n    "memlock=-1:-1"\n]\n'
# Oracle Linux does not grow the root filesystem into a boot volume larger than the image; oci-growfs does.
GROWFS = "/usr/libexec/oci-growfs"


def register_with_taints(taints: Sequence[Taint]) -> str:
    """The kubelet flag that registers the node with ``taints`` (``key=value:Effect``, comma-separated)."""
    return "--register-with-taints=" + ",".join(t.as_string() for t in taints)


def render_cloud_init(pool_name: str, taints: Sequence[Taint], rdma: bool = False, host_imex_off: bool = False) -> str:
    """The bash ``user_data`` of a node of ``pool_name``: grow the root filesystem, RDMA tweaks, the host IMEX unit
    off (``host_imex_off``: DRA pools on multi-node NVLink shapes), OKE bootstrap."""
    lines = [
        "#!/bin/bash",
        f"# gpu-platform: OKE GPU node of pool {pool_name}. OKE node pools have no taint field, so the taints",
        "# go to the kubelet through OKE's bootstrap (--kubelet-extra-args).",
        "set -euo pipefail",
        f"KUBELET_EXTRA_ARGS={shlex.quote(register_with_taints(taints))}",
        f"if [ -x {GROWFS} ]; then {GROWFS} -y || true; fi",
    ]
    if rdma:
        lines += [
            "mkdir -p /etc/crio/crio.conf.d",
            f"cat >{CRIO_MEMLOCK_CONF} <<'EOF'",
            *CRIO_MEMLOCK.rstrip("\n").split("\n"),
            "EOF",
        ]
    if host_imex_off:
        lines += [
            "# NVIDIA's DRA driver runs the IMEX daemons of each ComputeDomain; the host's own unit must stay off.",
            *imex_off_lines(),
        ]
    lines += [
        "if command -v oke >/dev/null 2>&1; then",
        '  oke bootstrap --kubelet-extra-args "$KUBELET_EXTRA_ARGS"',
        "else",
        f"  {FETCH_OKE_INIT}",
        f'  bash {OKE_INIT_SCRIPT} --kubelet-extra-args "$KUBELET_EXTRA_ARGS"',
        "fi",
    ]
    return "\n".join(lines) + "\n"


def user_data(script: str) -> str:
    """``node_metadata["user_data"]``: OCI instance metadata carries cloud-init user data base64-encoded."""
    return base64.b64encode(script.encode("utf-8")).decode("ascii")
