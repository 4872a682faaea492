"""The storage layer (issue 23). STUB written by the lead: the storage helper builds it."""


def build_storage_layer(platform, name: str) -> None:
    """Adds ``platform.layers["storage"]`` when the stack configures ``storage`` (nothing otherwise)."""
    return None
