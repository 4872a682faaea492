"""The health layer (issue 21). STUB written by the lead: the health helper builds it."""


def build_health_layer(platform, name: str) -> None:
    """Adds ``platform.layers["health"]`` when ``health.enabled`` (the default)."""
    return None
