"""Kubernetes minors per cloud as data: what each managed service offers, when standard support ends, the skew
its nodes may have, and the decisions built on them (the default minor, refusals, the end-of-support warning).

Each cloud's table is the minors a new cluster can be created on at the date the calendar was read, in standard
support or in an extended support the platform can select without another product tier: EKS extended support
is on by default (``upgradePolicy.supportType`` EXTENDED, which the platform leaves as it is); GKE's Extended
channel is the stack key ``releaseChannel: EXTENDED``. AKS long-term support needs the Premium tier and the
``AKSLongTermSupport`` support plan, which the platform does not set, so AKS lists standard support only; OKE has
no extended support. A minor whose ``standard_support_ends`` is before ``read_on`` is offered in extended support.

Everything here is pure and deterministic; only `support_warning` takes a date, passed in by the caller.
"""

import dataclasses
import datetime
from typing import Optional

CLOUDS = ("aws", "azure", "gcp", "oci")
"""The managed clouds with a calendar (``existing`` clusters bring their own version)."""

WARNING_DAYS = 90
"""How long before the end of standard support `support_warning` starts warning."""

UPGRADE_DOC = "docs/upgrades.md"


@dataclasses.dataclass(frozen=True)
class MinorSupport:
    """One Kubernetes minor on one cloud."""

    minor: str
    """``1.36``."""
    standard_support_ends: datetime.date
    """The date the cloud names as the end of the minor's standard support (EKS bills extended support from the
    start of that day)."""
    basis: str = "calendar"
    """``calendar``: the date is the cloud's published one; otherwise how it was derived (and why)."""


@dataclasses.dataclass(frozen=True)
class CloudCalendar:
    """One cloud's offered minors with the source they were read from."""

    service: str
    """The service's name in messages (``EKS``)."""
    source: str
    """The published calendar."""
    read_on: datetime.date
    """The date the calendar was read; the minors listed are those offered on that date."""
    minors: tuple[MinorSupport, ...]
    """Oldest first."""
    max_node_skew: int
    """How many minors a node may trail its control plane on this cloud (never newer)."""
    skew_source: str


_OKE_ESTIMATE = "estimate: upstream end of life (OKE: 30 days after it releases {})"


def _d(text: str) -> datetime.date:
    return datetime.date.fromisoformat(text)


# Dates read on 2026-11-29. The EKS, GKE and AKS tables were checked against endoflife.date's copies of them
# (endoflife-date/endoflife.date@a70eca3, products/amazon-eks.md, google-kubernetes-engine.md,
# azure-kubernetes-service.md, whose `release_table` scrapers read exactly the pages cited below) and, for AKS,
# against the page's own source (MicrosoftDocs/azure-aks-docs@fb060ab articles/aks/supported-kubernetes-versions.md).
# Kubernetes 1.37 (upstream GA planned late August 2026; AKS's calendar plans its GA for October 2026) could not be
# confirmed as offered by any of the four clouds on that date, so no cloud lists it: add it here when it is.
CALENDARS: dict[str, CloudCalendar] = {
    # "Amazon EKS Kubernetes release calendar": End of standard support per minor, 14 months after the EKS
    # release; extended support 12 months more. 1.31's extended support ended 2026-11-26, so it is no longer
    # offered. 1.32 and 1.33 are offered in extended support (until 2027-03-23 and 2027-07-29).
    "aws": CloudCalendar(
        service="EKS",
        source="https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#kubernetes-release-calendar",
        read_on=_d("2026-11-29"),
        minors=(
            MinorSupport("1.32", _d("2026-03-23")),
            MinorSupport("1.33", _d("2026-07-29")),
            MinorSupport("1.34", _d("2026-12-02")),
            MinorSupport("1.35", _d("2027-03-27")),
            MinorSupport("1.36", _d("2027-08-02")),
        ),
        # EKS FAQ "Are Amazon EKS managed node groups automatically updated...": the Kubernetes project tests
        # nodes up to three minor versions behind the control plane (the upstream policy).
        max_node_skew=3,
        skew_source="https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#version-faqs",
    ),
    # "AKS Kubernetes release calendar": "Unless an explicit date is provided, the End of Life (EOL) date is the
    # last day of the specified month" (1.34: Nov 2026, 1.35: Mar 2027, 1.36: Jun 2027). Older minors are in
    # LTS only (Premium tier), which the platform does not enable.
    "azure": CloudCalendar(
        service="AKS",
        source="https://learn.microsoft.com/azure/aks/supported-kubernetes-versions#aks-kubernetes-release-calendar",
        read_on=_d("2026-11-29"),
        minors=(
            MinorSupport("1.34", _d("2026-11-30")),
            MinorSupport("1.35", _d("2027-03-31")),
            MinorSupport("1.36", _d("2027-06-30")),
        ),
        # upgrade-aks-control-plane.md "Kubernetes version upgrade rules": from 1.28 the control plane can be up
        # to three minor versions ahead of node pools.
        max_node_skew=3,
        skew_source="https://learn.microsoft.com/azure/aks/upgrade-aks-control-plane#kubernetes-version-upgrade-rules",
    ),
    # GKE release schedule, column "End of standard support". 1.32-1.34 have left standard support and are
    # offered in the Extended channel (up to 24 months after Regular availability: 1.32 from 2025-02-11).
    "gcp": CloudCalendar(
        service="GKE",
        source="https://cloud.google.com/kubernetes-engine/docs/release-schedule",
        read_on=_d("2026-11-29"),
        minors=(
            MinorSupport("1.32", _d("2026-04-11")),
            MinorSupport("1.33", _d("2026-08-03")),
            MinorSupport("1.34", _d("2026-10-01")),
            MinorSupport("1.35", _d("2027-04-11")),
            MinorSupport("1.36", _d("2027-08-09")),
        ),
        # "GKE versioning and support": node and node pool versions can be up to two minor versions older than
        # the control plane (stricter than upstream's three), never newer.
        max_node_skew=2,
        skew_source="https://cloud.google.com/kubernetes-engine/versioning#version_skew",
    ),
    # OKE "Supported Versions of Kubernetes": OKE supports three minors for new clusters; the oldest of four stays
    # supported at least 30 days after OKE announces the newest, and each current minor's "OKE End-of-life Date"
    # is published only as "30 days after the OKE release date of 1.(N+3) (planned)", no calendar date. OKE has
    # released 1.36 (node images Oracle-Linux-*-OKE-1.36.0-1462 of 2026-04-30, OKE-1.36.1-1505 of 2026-06-15) but
    # not 1.37 by the date read, so 1.34-1.36 are offered. Where OKE gives no date the estimate below is the
    # upstream end of life of the minor (kubernetes.io/releases: 1.34 2026-10-27, 1.35 2027-02-28,
    # 1.36 2027-06-28): the upstream N+3 minor ships around then and OKE's release of it follows, so the estimate
    # warns early rather than late.
    "oci": CloudCalendar(
        service="OKE",
        source="https://docs.oracle.com/en-us/iaas/Content/ContEng/Concepts/contengaboutk8sversions.htm",
        read_on=_d("2026-11-29"),
        minors=(
            MinorSupport("1.34", _d("2026-10-27"), basis=_OKE_ESTIMATE.format("1.37")),
            MinorSupport("1.35", _d("2027-02-28"), basis=_OKE_ESTIMATE.format("1.38")),
            MinorSupport("1.36", _d("2027-06-28"), basis=_OKE_ESTIMATE.format("1.39")),
        ),
        # contengupgradeoverview.htm: worker nodes may lag the control plane by up to three versions from
        # Kubernetes 1.28, and must not run a more recent version than the control plane.
        max_node_skew=3,
        skew_source="https://docs.oracle.com/en-us/iaas/Content/ContEng/Concepts/contengupgradeoverview.htm",
    ),
}

UPSTREAM_MAX_NODE_SKEW = 3
"""kubelet may be up to three minors older than kube-apiserver (two before 1.28) and never newer
(https://kubernetes.io/releases/version-skew-policy/#kubelet)."""

UPSTREAM_SKEW_SOURCE = "https://kubernetes.io/releases/version-skew-policy/#kubelet"


def minor_number(minor: str) -> int:
    """The minor number of ``1.36`` (36); ``v1.36.1`` and ``1.36.1`` give the same."""
    parts = minor.lstrip("v").split(".")
    return int(parts[1])


def calendar(cloud: str) -> CloudCalendar:
    """The calendar of a managed cloud (``KeyError`` for ``existing`` and unknown clouds)."""
    return CALENDARS[cloud]


def offered(cloud: str) -> tuple[str, ...]:
    """The minors ``cloud`` offers for a new cluster, oldest first."""
    return tuple(m.minor for m in CALENDARS[cloud].minors)


def in_standard_support(cloud: str) -> tuple[str, ...]:
    """The offered minors still in standard support on the date the calendar was read, oldest first."""
    cal = CALENDARS[cloud]
    return tuple(m.minor for m in cal.minors if m.standard_support_ends > cal.read_on)


def default_minor(clouds: tuple[str, ...] = CLOUDS) -> str:
    """The newest minor every one of ``clouds`` offers in standard support: the platform's default."""
    common = set(in_standard_support(clouds[0]))
    for cloud in clouds[1:]:
        common &= set(in_standard_support(cloud))
    if not common:
        raise ValueError(f"no Kubernetes minor is in standard support on all of {', '.join(clouds)}")
    return max(common, key=minor_number)


def support_of(cloud: str, minor: str) -> Optional[MinorSupport]:
    """The calendar entry of ``minor`` on ``cloud``, or None when the cloud does not offer it."""
    return next((m for m in CALENDARS[cloud].minors if m.minor == minor), None)


def offered_problem(cloud: str, minor: str) -> Optional[str]:
    """Why ``cloud`` cannot create a cluster at ``minor`` (a well-formed minor such as ``1.36``), or None.
    ``existing`` clusters and clouds without a calendar accept any minor."""
    if cloud not in CALENDARS or support_of(cloud, minor) is not None:
        return None
    cal = CALENDARS[cloud]
    return (f"{cal.service} does not offer Kubernetes {minor}; it offers {', '.join(offered(cloud))} "
            f"(as of {cal.read_on.isoformat()})")


def max_node_skew(cloud: str) -> int:
    """How many minors a node may trail its control plane on ``cloud`` (upstream's rule where no calendar)."""
    return CALENDARS[cloud].max_node_skew if cloud in CALENDARS else UPSTREAM_MAX_NODE_SKEW


def node_skew_problem(cloud: str, control_plane_minor: str, node_minor: str) -> Optional[str]:
    """Why nodes at ``node_minor`` cannot join a ``control_plane_minor`` control plane on ``cloud``, or None:
    a node is never newer than its control plane and trails it by at most `max_node_skew` minors."""
    plane, node = minor_number(control_plane_minor), minor_number(node_minor)
    if node > plane:
        return f"nodes at Kubernetes {node_minor} would be newer than the control plane ({control_plane_minor})"
    limit = max_node_skew(cloud)
    if plane - node > limit:
        where = CALENDARS[cloud].service if cloud in CALENDARS else "Kubernetes"
        return (f"nodes at Kubernetes {node_minor} would trail the control plane ({control_plane_minor}) by "
                f"{plane - node} minors; {where} allows at most {limit}")
    return None


def support_warning(cloud: str, minor: str, today: datetime.date) -> Optional[str]:
    """A one-line warning when ``minor`` leaves ``cloud``'s standard support within `WARNING_DAYS` of ``today``
    (or already has), naming the minor to upgrade to; None otherwise, and for minors or clouds not listed."""
    if cloud not in CALENDARS:
        return None
    entry = support_of(cloud, minor)
    if entry is None:
        return None
    cal = CALENDARS[cloud]
    days = (entry.standard_support_ends - today).days
    if days > WARNING_DAYS:
        return None
    newer = [m for m in in_standard_support(cloud) if minor_number(m) > minor_number(minor)]
    # One minor at a time: the next one up, which is where the control plane can go from here.
    target = (min(newer, key=minor_number) if newer
              else f"1.{minor_number(minor) + 1} once {cal.service} offers it (update upgrades/kubernetes_versions.py)")
    about = "" if entry.basis == "calendar" else "about "
    when = entry.standard_support_ends.isoformat()
    if days > 0:
        return (f"WARNING Kubernetes {minor} leaves {cal.service} standard support on {about}{when} "
                f"(in {days} days); plan an upgrade to {target} ({UPGRADE_DOC})")
    return (f"WARNING Kubernetes {minor} left {cal.service} standard support on {about}{when} "
            f"({-days} days ago) and is no longer supported as standard; upgrade to {target}{' now' if newer else ''} "
            f"({UPGRADE_DOC})")
