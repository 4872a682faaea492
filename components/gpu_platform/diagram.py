"""``gpu-platform plan --diagram``: a picture of a planned stack (Mermaid source and a self-contained SVG).

The picture shows the cluster, its GPU pools with GPU counts, the add-ons (Helm releases), the Kueue queues
and the teams. Both files are built from the same `StackDiagram`, derived from the plan, so they agree and are
deterministic. The SVG is laid out here (four columns of boxes), so no browser or Node.js is needed.
"""

from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from . import catalog

COLUMN_TITLES = ("GPU pools", "Add-ons", "Kueue queues", "Teams")


@dataclass(frozen=True)
class Box:
    key: str
    title: str
    detail: str = ""


@dataclass
class StackDiagram:
    """What the picture shows: one cluster, four columns of boxes, and edges between them."""

    stack: str
    cluster: Box
    columns: dict[str, list[Box]] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


DEVICE_RESOURCES = frozenset(v.resource for v in catalog.VENDORS.values())
"""Each vendor's primary resource: whole devices, what quotas are shown in (NeuronCores are not devices)."""


def _devices_word(resources: set[str]) -> str:
    """``GPUs`` while only NVIDIA GPUs are counted, ``accelerators`` once other vendors' devices are."""
    return "GPUs" if resources <= {catalog.NVIDIA_GPU_RESOURCE} else "accelerators"


def _quoted(team) -> set[str]:
    """The device resources a team has a quota of (``nvidia.com/gpu`` always: ``gpuQuota``, 0 or not)."""
    return {r for r, _ in team.quotas if r in DEVICE_RESOURCES} | {catalog.NVIDIA_GPU_RESOURCE}


def build_diagram(plan) -> StackDiagram:
    """The diagram model of a `gpu_platform.plan.StackPlan`."""
    config = plan.config
    rec = plan.recording
    cluster = Box("cluster", f"{config.cloud.upper() if config.cloud != 'existing' else 'Existing'} cluster",
                  f"{config.stack} · Kubernetes {config.kubernetes_version}")
    pools = []
    for pool in config.gpu_pools():
        sharing = f" · {pool.sharing.mode}" + (f" ×{pool.sharing.replicas}" if pool.sharing.shared else "")
        rdma = f" · {pool.rdma_fabric}" if pool.rdma_fabric else ""
        pools.append(Box(f"pool_{_slug(pool.name)}", pool.name,
                         f"{pool.gpu_model} × {pool.gpus_per_node}/node · {pool.min_nodes}-{pool.max_nodes} nodes · "
                         f"≤{pool.max_gpus} GPUs{sharing}{rdma}"))
    addons = [Box(f"addon_{_slug(r.name)}", str(r.inputs.get("name") or r.name),
                  f"{str(r.inputs.get('chart', '')).rsplit('/', 1)[-1]} {r.inputs.get('version', '')}".strip())
              for r in rec.of_type("kubernetes:helm.sh/v3:Release")]
    queues = []
    for r in (rec.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")):
        name = r.inputs.get("metadata", {}).get("name", r.name)
        devices, counted = 0, set()
        for group in r.inputs.get("spec", {}).get("resourceGroups", []):
            for flavor in group.get("flavors", []):
                for resource in flavor.get("resources", []):
                    if resource.get("name") in DEVICE_RESOURCES:
                        devices += int(resource.get("nominalQuota", 0))
                        counted.add(resource["name"])
        queues.append(Box(f"queue_{_slug(name)}", name, f"nominal {devices} {_devices_word(counted)}"))
    teams = [Box(f"team_{_slug(t.name)}", t.name, f"quota {t.accelerator_quota} {_devices_word(_quoted(t))}")
             for t in sorted(config.teams, key=lambda t: t.name)]
    queues.sort(key=lambda b: b.title)
    diagram = StackDiagram(config.stack, cluster, dict(zip(COLUMN_TITLES, (pools, addons, queues, teams),
                                                           strict=True)))
    diagram.edges += [("cluster", b.key) for b in pools + addons]
    queue_keys = {b.title: b.key for b in queues}
    for team in teams:
        match = next((k for title, k in queue_keys.items() if title == team.title or title.endswith(team.title)), None)
        if match:
            diagram.edges.append((team.key, match))
    return diagram


def to_mermaid(diagram: StackDiagram) -> str:
    """Mermaid ``flowchart`` source."""
    lines = ["flowchart LR", f'  cluster["{diagram.cluster.title}<br/>{diagram.cluster.detail}"]']
    for title, boxes in diagram.columns.items():
        if not boxes:
            continue
        lines.append(f'  subgraph {_slug(title)}["{title}"]')
        lines += [f'    {b.key}["{b.title}<br/>{b.detail}"]' for b in boxes]
        lines.append("  end")
    lines += [f"  {a} --> {b}" for a, b in diagram.edges]
    return "\n".join(lines) + "\n"


BOX_W, LINE_H, GAP_X, GAP_Y, MARGIN, CHARS_PER_LINE = 300, 16, 50, 14, 20, 44


def _detail_lines(detail: str) -> list[str]:
    """The detail wrapped at its `` · `` separators so nothing is cut off."""
    lines: list[str] = []
    for part in detail.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= CHARS_PER_LINE:
            lines[-1] += " · " + part
        else:
            lines.append(part[:CHARS_PER_LINE])
    return lines


def _box_height(box: Box) -> int:
    return 14 + LINE_H * (1 + len(_detail_lines(box.detail)))


def to_svg(diagram: StackDiagram) -> str:
    """A self-contained SVG: the cluster on the left, then one column per box kind.

    Edges join neighbouring columns only (cluster to pools, teams to their queues), so no line crosses a box.
    """
    positions: dict[str, tuple[int, int, int]] = {}
    columns = [("Cluster", [diagram.cluster]), *diagram.columns.items()]
    heights = [sum(_box_height(b) + GAP_Y for b in boxes) for _, boxes in columns]
    height = MARGIN * 2 + 30 + max(heights)
    width = MARGIN * 2 + len(columns) * (BOX_W + GAP_X)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="#ffffff"/>']
    for col, (title, boxes) in enumerate(columns):
        x = MARGIN + col * (BOX_W + GAP_X)
        y = MARGIN + 30
        parts.append(f'<text x="{x}" y="{MARGIN + 12}" font-weight="bold">{escape(title)}</text>')
        for box in boxes:
            box_h = _box_height(box)
            positions[box.key] = (col, x, y + box_h // 2)
            parts.append(f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{box_h}" rx="6" fill="#eef4fb" '
                         'stroke="#3b6ea5"/>')
            parts.append(f'<text x="{x + 8}" y="{y + 19}" font-weight="bold">{escape(box.title[:40])}</text>')
            for i, line in enumerate(_detail_lines(box.detail)):
                parts.append(f'<text x="{x + 8}" y="{y + 19 + LINE_H * (i + 1)}">{escape(line)}</text>')
            y += box_h + GAP_Y
    for a, b in diagram.edges:
        if a in positions and b in positions:
            (col_a, ax, ay), (col_b, bx, by) = sorted((positions[a], positions[b]))
            if col_b - col_a == 1:
                parts.append(f'<line x1="{ax + BOX_W}" y1="{ay}" x2="{bx}" y2="{by}" stroke="#8aa4c0"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_diagram(plan, target: Path) -> tuple[Path, Path]:
    """Write ``diagram.mmd`` and ``diagram.svg`` into ``target``."""
    diagram = build_diagram(plan)
    mermaid, svg = target / "diagram.mmd", target / "diagram.svg"
    mermaid.write_text(to_mermaid(diagram), encoding="utf-8")
    svg.write_text(to_svg(diagram), encoding="utf-8")
    return mermaid, svg
