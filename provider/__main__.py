"""Entry point of the ``gpuplatform`` plugin: hosts the components of `gpu_platform.provider.COMPONENTS`."""

from gpu_platform.provider import main

if __name__ == "__main__":
    main()
