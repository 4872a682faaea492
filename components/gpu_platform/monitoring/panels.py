"""Grafana panel builders: targets, panels, rows, variables, the grid layout and the dashboard envelope.

Below `dashboards` and `llm_monitoring`, which compose their dashboards from these (so neither imports the other
for a builder).
"""

from dataclasses import dataclass
from typing import Any, Optional

DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
"""kube-prometheus-stack provisions its Prometheus datasource with uid ``prometheus``
(``grafana.sidecar.datasources.uid``)."""
SCHEMA_VERSION = 39
GRID_WIDTH = 24
FOLDER = "GPU Platform"


def target(expr: str, legend: str = "", instant: bool = False) -> dict[str, Any]:
    """One Prometheus query of a panel (``refId`` is assigned by `panel`)."""
    out: dict[str, Any] = {"datasource": DATASOURCE, "expr": expr, "legendFormat": legend or "__auto"}
    if instant:
        out.update({"instant": True, "range": False, "format": "table"})
    return out


@dataclass(frozen=True)
class Size:
    """A panel's width (of 24 grid columns) and height (grid rows)."""

    w: int
    h: int = 8


def panel(kind: str, title: str, targets: list[dict], size: Size, unit: str = "", description: str = "",
          options: Optional[dict] = None, field_defaults: Optional[dict] = None) -> dict[str, Any]:
    """A panel without position; `layout` places it. ``kind`` is a Grafana panel type."""
    defaults: dict[str, Any] = dict(field_defaults or {})
    if unit:
        defaults["unit"] = unit
    return {
        "type": kind, "title": title, "description": description, "datasource": DATASOURCE,
        "targets": [{**t, "refId": chr(ord("A") + i)} for i, t in enumerate(targets)],
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options or {},
        "gridPos": {"w": size.w, "h": size.h},
    }


def timeseries(title: str, targets: list[dict], unit: str = "", size: Size = Size(12), description: str = "",
               stacked: bool = False) -> dict[str, Any]:
    custom = {"fillOpacity": 20 if stacked else 10, "stacking": {"mode": "normal" if stacked else "none"}}
    return panel("timeseries", title, targets, size, unit, description,
                 options={"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]},
                          "tooltip": {"mode": "multi", "sort": "desc"}},
                 field_defaults={"custom": custom})


def stat(title: str, expr: str, unit: str = "none", size: Size = Size(4, 4), description: str = "",
         thresholds: Optional[list[tuple[Optional[float], str]]] = None) -> dict[str, Any]:
    steps = [{"value": v, "color": c} for v, c in (thresholds or [(None, "green")])]
    return panel("stat", title, [target(expr)], size, unit, description,
                 options={"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                          "colorMode": "value", "graphMode": "area"},
                 field_defaults={"thresholds": {"mode": "absolute", "steps": steps}})


def gauge(title: str, expr: str, unit: str = "percent", size: Size = Size(4, 4), maximum: float = 100,
          description: str = "") -> dict[str, Any]:
    steps = [{"value": None, "color": "red"}, {"value": maximum * 0.3, "color": "yellow"},
             {"value": maximum * 0.6, "color": "green"}]
    return panel("gauge", title, [target(expr)], size, unit, description,
                 options={"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
                 field_defaults={"min": 0, "max": maximum, "thresholds": {"mode": "absolute", "steps": steps}})


def bar_gauge(title: str, targets: list[dict], unit: str = "none", size: Size = Size(12),
              description: str = "") -> dict[str, Any]:
    return panel("bargauge", title, targets, size, unit, description,
                 options={"orientation": "horizontal", "displayMode": "gradient",
                          "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}})


def table(title: str, targets: list[dict], size: Size = Size(24, 10), description: str = "") -> dict[str, Any]:
    """Instant queries merged into one row per series (the ``merge`` transformation joins them on labels)."""
    out = panel("table", title, [{**t, "instant": True, "range": False, "format": "table"} for t in targets],
                size, description=description, options={"showHeader": True})
    out["transformations"] = [{"id": "merge", "options": {}},
                              {"id": "organize", "options": {"excludeByName": {"Time": True}}}]
    return out


def row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "gridPos": {"w": GRID_WIDTH, "h": 1}}


def layout(panels: list[dict]) -> list[dict]:
    """Place panels left to right, wrapping at 24 columns; a row always starts a new line. Ids are 1..n."""
    placed, x, y, line_height = [], 0, 0, 0
    for i, p in enumerate(panels, start=1):
        w, h = p["gridPos"]["w"], p["gridPos"]["h"]
        if p["type"] == "row" or x + w > GRID_WIDTH:
            x, y, line_height = 0, y + line_height, 0
        placed.append({**p, "id": i, "gridPos": {"x": x, "y": y, "w": w, "h": h}})
        x, line_height = x + w, max(line_height, h)
        if p["type"] == "row":
            x, y, line_height = 0, y + h, 0
    return placed


def query_variable(name: str, label: str, metric_selector: str, label_name: str, multi: bool = True,
                   default: Optional[str] = None) -> dict[str, Any]:
    """A dashboard variable filled by ``label_values(<selector>, <label>)``."""
    query = f"label_values({metric_selector}, {label_name})"
    current = {"selected": True, "text": default, "value": default} if default else {}
    return {
        "name": name, "label": label, "type": "query", "datasource": DATASOURCE,
        "query": {"query": query, "refId": f"{name}-variable"}, "definition": query,
        "refresh": 2, "sort": 1, "multi": multi, "includeAll": multi, "allValue": ".*" if multi else None,
        "current": current, "hide": 0,
    }


def dashboard(uid: str, title: str, description: str, panels: list[dict], variables: list[dict]) -> dict[str, Any]:
    return {
        "uid": uid, "title": title, "description": description, "tags": ["gpu", "gpu-platform"],
        "timezone": "utc", "schemaVersion": SCHEMA_VERSION, "version": 1, "editable": False,
        "refresh": "1m", "time": {"from": "now-6h", "to": "now"}, "graphTooltip": 1,
        "annotations": {"list": []}, "links": [],
        "templating": {"list": variables},
        "panels": layout(panels),
    }
