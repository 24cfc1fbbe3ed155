#!/usr/bin/env bash
# Installs what Loupe needs on a fresh Debian machine; quick no-op when everything is there.
# npm packages (without onnxruntime-node's CUDA download), Debian's Chromium for headless tests and
# the generated test models.
set -euo pipefail
cd "$(dirname "$0")/.."
export ONNXRUNTIME_NODE_INSTALL=skip
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages (npm ci: 1–3 minutes on a fresh machine, quiet until it ends)"
  npm ci --no-audit --no-fund
fi
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  echo "setup: installing Debian's Chromium for the tests (apt-get: a few minutes on a fresh machine)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium > /tmp/loupe-apt.log 2>&1 || { tail -20 /tmp/loupe-apt.log; exit 1; }
fi
# DICOM references for the tests: pydicom (with GDCM and Pillow so it decodes the compressed syntaxes)
# and dcmtk (img2dcm for the DICOM demo shard).
if ! /usr/bin/python3 -c 'import pydicom, gdcm, PIL' 2>/dev/null || ! command -v img2dcm >/dev/null; then
  echo "setup: installing Debian's python3-pydicom, python3-gdcm, python3-pil and dcmtk (DICOM references for the tests; a minute or two)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pydicom python3-gdcm python3-pil dcmtk > /tmp/loupe-apt.log 2>&1 || { tail -20 /tmp/loupe-apt.log; exit 1; }
fi
# The HNSW engine's wasm is committed (src/lib/wasm/generated): no Emscripten needed here.
# Test models with deterministic random weights in the hub layout (models/generated, gitignored).
# Idempotent: files whose hashes match are not rewritten.
echo "setup: the generated test models (random weights; seconds when they are already there)"
npx tsx scripts/generate-models.ts --set ci
