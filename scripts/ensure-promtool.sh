#!/usr/bin/env bash
# promtool and the Prometheus server come from Debian's `prometheus` package; the monitoring and optimizer
# tests run them for real. Installs the package when it is missing and apt can be used.
set -euo pipefail
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "promtool/prometheus not found: install Prometheus (it provides both) and re-run" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# Debian starts the service on install; the tests start their own servers on free ports.
$SUDO systemctl stop prometheus >/dev/null 2>&1 || pkill -x prometheus >/dev/null 2>&1 || true
command -v promtool >/dev/null
