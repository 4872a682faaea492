"""Each team's ``storageQuota`` against the claims the platform puts in its namespace.

A cross-feature rule (storage claims, the reference training job's checkpoint claim): it reads the whole
`PlatformConfig` and the training plan, so it sits above `storage_config` (which `config_model` imports) and
beside the planning rules it consults.
"""

from ..autoscaling.autoscaling_plan import reference_training
from ..config_model import PlatformConfig
from ..errors import ConfigError
from .storage_config import BUCKET_CLAIM_GIB, TEAM_CLAIMS, parse_size_gib, parse_storage_quota


def check_storage_quotas(config: PlatformConfig) -> None:
    """Each team's ``storageQuota`` against the claims the platform puts in its namespace: the bucket claims, and
    the reference training job's checkpoint claim when there is no shared file system (with one, the team's two
    claims split what is left, `team_claim_gib`)."""
    planned = reference_training(config, config.gpu_pools()) if config.training.enabled else None
    trainer = planned[1].name if planned is not None else None
    for i, team in enumerate(config.teams):
        quota = parse_storage_quota(team.storage_quota, f"teams[{i}].storageQuota")
        if quota is None:
            continue
        needs = BUCKET_CLAIM_GIB * len(config.storage.buckets)
        buckets = len(config.storage.buckets)
        held = [f"{buckets} bucket claims of {BUCKET_CLAIM_GIB}Gi"] if buckets else []
        if config.storage.shared_file_system is not None:
            needs += len(TEAM_CLAIMS)
            held.append("its datasets and checkpoints claims (1Gi at least each)")
        elif team.name == trainer:
            checkpoint = parse_size_gib(config.training.checkpoint_size)
            needs += checkpoint
            held.append(f"the reference training job's checkpoint claim ({config.training.checkpoint_size})")
        if quota < needs:
            raise ConfigError(f"teams[{i}].storageQuota", f"{team.storage_quota} cannot hold {' and '.join(held)}: "
                                                          f"{needs}Gi at least")
