"""Generated documentation: the configuration reference and the support matrix, built from the code.

`gpu_platform.generate` writes them (with the provider schema) and checks they are current; the test suite
fails when a checked-in copy is stale.
"""
