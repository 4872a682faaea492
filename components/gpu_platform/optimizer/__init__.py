"""The GPU utilisation optimizer program (``gpu-platform optimize``)."""
