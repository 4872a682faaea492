# The gpu-platform image: the library and the `gpu-platform optimize` program the optimizer CronJob runs.
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
