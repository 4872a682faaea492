"""The buckets a cloud's bucket-access component grants (``EksBucketAccess``, ``GkeBucketAccess``, ``OkeBucketAccess``,
``AksBucketAccess``): one TypedDict and its rules, the same keys as a stack's ``storage.buckets`` entries in Python
spelling, so the stack path and a composed program describe a bucket the same way (`bucket_configs`).

A leaf of the storage package: no cloud SDK, no resource.
"""

from typing import Any, TypedDict

from typing_extensions import Required

from ..component_args import DNS_LABEL, Args, Rule, choice
from .storage_config import BUCKET_NAMES, BUCKET_PROFILES, STORAGE_ACCOUNT, BucketConfig


class BucketArgs(TypedDict, total=False):
    """One bucket (Azure: blob container) the workloads mount."""

    name: Required[str]
    """The PersistentVolumeClaim's name in each namespace that mounts the bucket (a DNS label)."""
    bucket: Required[str]
    """The cloud bucket (Azure: the container)."""
    read_only: bool
    """Mount read-only (default true); write access is granted only to read-write buckets."""
    profile: str
    """``training`` (default), ``checkpoint`` or ``serving``: the access pattern the mount options are tuned for."""
    storage_account: str
    """Azure only, required there: the storage account holding the container."""


def bucket_rules(cloud: str, path: str = "buckets[]") -> dict[str, Rule]:
    """The rules of a list of `BucketArgs` at ``path`` on ``cloud`` (its bucket naming rule)."""
    pattern, what = BUCKET_NAMES[cloud]
    rules = {f"{path}.name": DNS_LABEL, f"{path}.profile": choice(*BUCKET_PROFILES),
             f"{path}.bucket": Rule(check=lambda v: None if pattern.match(v) else f"'{v}' is not {what}")}
    if cloud == "azure":
        rules[f"{path}.storage_account"] = Rule(check=lambda v: None if STORAGE_ACCOUNT.match(v) else
                                                f"'{v}' is not a storage account name (3-24 lower-case letters "
                                                "and digits)")
    return rules


def bucket_configs(buckets: list[dict[str, Any]]) -> tuple[BucketConfig, ...]:
    """Checked `BucketArgs` as the `BucketConfig`s a stack's ``storage.buckets`` parses to."""
    return tuple(BucketConfig(name=b["name"], bucket=b["bucket"], read_only=b.get("read_only", True),
                              profile=b.get("profile", "training"), storage_account=b.get("storage_account"))
                 for b in buckets)


def bucket_args(buckets: Any) -> list[BucketArgs]:
    """A stack's `BucketConfig`s as `BucketArgs` (the inverse of `bucket_configs`)."""
    out: list[BucketArgs] = []
    for b in buckets:
        entry = BucketArgs(name=b.name, bucket=b.bucket, read_only=b.read_only, profile=b.profile)
        if b.storage_account is not None:
            entry["storage_account"] = b.storage_account
        out.append(entry)
    return out


def check_buckets(checker: Any, buckets: list[dict[str, Any]], cloud: str, path: str = "buckets") -> None:
    """What the rules cannot say: at least one bucket, unique claim names, and ``storage_account`` given on Azure
    (required: the container's account) and nowhere else (no other cloud has one)."""
    if not buckets:
        checker.fail(path, "must list at least one bucket")
    checker.unique([b["name"] for b in buckets], path, "bucket claim name")
    for i, bucket in enumerate(buckets):
        if cloud == "azure" and "storage_account" not in bucket:
            checker.fail(f"{path}[{i}].storage_account", "is required on Azure (the container's storage account)")
        if cloud != "azure" and "storage_account" in bucket:
            checker.fail(f"{path}[{i}].storage_account", "names an Azure storage account; only Azure takes it")


def checked_bucket_access(component: str, name: str, cloud: str, args: Any, schema: type) -> dict[str, Any]:
    """A bucket-access component's args checked (one line naming the component and the argument): its TypedDict,
    the cloud's bucket rules, `check_buckets`, and distinct ``namespaces`` where it takes them."""
    checker = Args(component, name, cloud=cloud)
    checked = checker.check(args, schema, {"namespaces[]": DNS_LABEL, **bucket_rules(cloud)})
    check_buckets(checker, checked["buckets"], cloud)
    if "namespaces" in checked:
        checker.unique(checked["namespaces"], "namespaces", "namespace")
    return checked
