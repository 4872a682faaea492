"""The node autoscaler of each cloud, chosen from the stack configuration (its SDK imported only for that cloud).

- AWS: Karpenter (`aws_karpenter`) or the cluster-autoscaler chart (`aws_cluster_autoscaler`), by
  ``autoscaling.autoscaler``.
- Azure and GCP: the managed cluster autoscaler, already on for every GPU pool and tuned by the profile the cloud
  layer sets on the cluster (AKS ``auto_scaler_profile``, GKE ``cluster_autoscaling``): nothing to add here.
- OCI: OKE's Cluster Autoscaler add-on (`oci_autoscaler`) over the pools' node pool ids.
- Existing clusters: whatever the cluster runs.
"""

from typing import Any, Optional

import pulumi

from ..config_model import PlatformConfig
from .handle import ClusterHandle


def node_autoscaler_from_config(name: str, config: PlatformConfig, handle: ClusterHandle,
                                opts: pulumi.ResourceOptions) -> Optional[Any]:
    """The component that scales the stack's GPU nodes, or None where the cloud does it by itself."""
    if config.cloud == "aws" and config.autoscaling.autoscaler == "karpenter":
        from .aws.karpenter import karpenter_from_config

        return karpenter_from_config(name, config, handle, opts)
    if config.cloud == "aws":
        from .aws.cluster_autoscaler import cluster_autoscaler_from_config

        return cluster_autoscaler_from_config(name, config, handle, opts)
    if config.cloud == "oci":
        from .oci.autoscaler import oke_autoscaler_from_config

        return oke_autoscaler_from_config(name, config, handle, opts)
    return None
