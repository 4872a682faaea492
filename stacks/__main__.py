"""The gpu-platform project program: one GPU platform per stack, built from ``Pulumi.<stack>.yaml``."""

from gpu_platform.platform import main

main()
