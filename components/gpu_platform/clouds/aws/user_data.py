"""Launch-template user data of EKS GPU node groups: what a node must do at boot that no EKS API field does.

EKS merges a managed node group's launch-template user data with its own bootstrap; on Amazon Linux AMIs (AL2023's
``nodeadm`` included) that user data must be a MIME multi-part archive, whose ``text/x-shellscript`` parts
cloud-init runs (EKS user guide, "Customize managed nodes with launch templates", Amazon EC2 user data). The
scripts here never start or configure the kubelet: EKS's merged part does.

One script today: on a DRA pool whose NVLink domain spans nodes (p6e-gb200 UltraServers), the AL2023 ARM NVIDIA AMI
ships NVIDIA's IMEX driver (EKS "Use P6e-GB200 UltraServers": "NVIDIA IMEX driver"), while NVIDIA's DRA driver runs
the IMEX daemons of each ComputeDomain itself. Its prerequisites say the host unit "must be disabled" on every GPU
node with the ``nvidia-imex`` packages: ``systemctl disable --now nvidia-imex.service && systemctl mask
nvidia-imex.service`` (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 docs/prerequisites.md).

Pure functions: tests decode the rendered ``user_data`` and read the script back.
"""

import base64
from typing import Optional

from ...pools import GpuPool
from ..host_imex import imex_off_lines

BOUNDARY = "==GPUPLATFORM=="
"""MIME boundary of the archive (fixed: the same pool renders the same launch template)."""


def host_script(pool: GpuPool) -> Optional[str]:
    """The boot script of a pool's nodes, or None when they need none (every pool but DRA multi-node NVLink ones)."""
    if not (pool.dra and pool.multi_node_nvlink):
        return None
    lines = [
        "#!/bin/bash",
        f"# gpu-platform: GPU node of pool {pool.name}. NVIDIA's DRA driver runs the IMEX daemons of each",
        "# ComputeDomain; the host's own nvidia-imex.service must stay off (DRA driver prerequisites).",
        "set -euo pipefail",
        *imex_off_lines(),
    ]
    return "\n".join(lines) + "\n"


def mime_archive(script: str) -> str:
    """A MIME multi-part archive of one ``text/x-shellscript`` part, the form EKS merges with its bootstrap."""
    return "\n".join([
        "MIME-Version: 1.0",
        f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"',
        "",
        f"--{BOUNDARY}",
        'Content-Type: text/x-shellscript; charset="us-ascii"',
        "",
        script.rstrip("\n"),
        "",
        f"--{BOUNDARY}--",
        "",
    ])


def launch_template_user_data(pool: GpuPool) -> Optional[str]:
    """``aws.ec2.LaunchTemplate.user_data`` (base64, as EC2 takes it) of a pool's nodes, or None."""
    script = host_script(pool)
    if script is None:
        return None
    return base64.b64encode(mime_archive(script).encode("ascii")).decode("ascii")
