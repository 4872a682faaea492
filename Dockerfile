# The gpu-platform image: the library and its programs: `gpu-platform optimize` (the optimizer CronJob), `remediate`
# (the health layer's remediation controller) and `health-report` (the last step of the active checks, on every GPU
# node, arm64 Grace nodes included). Build it for both architectures (pure Python on a multi-arch base):
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/gpu-platform/gpu-platform:0.1.0 --push .
FROM python:3.11.7-slim-bookworm
# The numeric user and group the CronJob runs as (kube/pod_security.py: runAsUser/runAsGroup 10001); no home,
# no shell. The pod's root filesystem is read-only: HOME points at /tmp, its only writable path (an emptyDir).
RUN groupadd --gid 10001 optimizer \
 && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin optimizer
WORKDIR /src
COPY pyproject.toml README.md ./
COPY components ./components
RUN pip install --no-cache-dir '.[optimizer]' && rm -rf /src
WORKDIR /
ENV HOME=/tmp \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
ENTRYPOINT ["gpu-platform"]
CMD ["optimize", "--help"]
