# The gpu-platform image: the library and the `gpu-platform optimize` program the optimizer CronJob runs.
FROM python:3.11.7-slim-bookworm
RUN useradd --uid 10001 --create-home optimizer
WORKDIR /src
COPY pyproject.toml README.md ./
COPY components ./components
RUN pip install --no-cache-dir '.[optimizer]' && rm -rf /src
USER 10001
ENTRYPOINT ["gpu-platform"]
CMD ["optimize", "--help"]
