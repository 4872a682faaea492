"""The host IMEX service on rack nodes: off where NVIDIA's DRA driver runs IMEX itself (pure).

The DRA driver starts the IMEX daemons of each ComputeDomain; its prerequisites ask that the host's
``nvidia-imex.service`` be disabled and masked on every GPU node whose image installs it (the EKS AL2023 ARM NVIDIA AMI
and oci-hpc-oke's GB200/GB300 images do). The clouds run these lines from the node's user data / cloud-init.
"""

IMEX_UNIT = "nvidia-imex.service"


def imex_off_lines(unit: str = IMEX_UNIT) -> list[str]:
    """Shell lines that stop, disable and mask the host IMEX unit where the image installs it. ``systemctl cat``
    tests for the unit without a pipe: a ``systemctl list-unit-files | grep -q`` (oci-hpc-oke's) can fail under
    ``pipefail`` when grep exits first and systemctl gets SIGPIPE."""
    return [
        f"if systemctl cat {unit} >/dev/null 2>&1; then",
        f"  systemctl disable --now {unit}",
        f"  systemctl mask {unit}",
        "else",
        f'  echo "gpu-platform: {unit} is not installed; nothing to disable"',
        "fi",
    ]
