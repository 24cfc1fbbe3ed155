#!/usr/bin/env bash
# Builds a self-contained folder that runs `npm run bench:gpu` on a bare x86-64 Linux machine with a GPU
# (no Node, no npm, no network; python3 and the NVIDIA driver there), as ../shared/ENVIRONMENT.md
# describes ("On an NVIDIA GPU machine without a browser"):
#
#   node.xz           this machine's Node binary (xz -9)
#   debs/*.deb        Debian's libvulkan1, libegl1, libglvnd0 (apt-get download), unpacked there
#   app.tar.xz        bench-gpu.mjs (esbuild bundle, the model generator in a shared chunk) and the
#                     few node_modules files that are loaded at run time: webgpu (index.js + Dawn's
#                     dawn.node for linux-x64), onnxruntime-web (ort.webgpu.bundle.min.mjs and the
#                     asyncify .mjs/.wasm it loads; never the JSEP build) and onnx-proto (one CJS bundle)
#   run.sh            unpacks under /tmp, installs the Vulkan loader, generates the models, runs the bench
#   SHA256SUMS
#
# No model weights travel: run.sh generates them there with scripts/generate-models.ts.
#
#   bash scripts/gpu-bundle.sh [DEST]     (default: .gpu in the repository root; it is never committed)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/.gpu}
MAX_MIB=55
cd "$ROOT"

STAGE=$(mktemp -d /tmp/loupe-gpu-bundle.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
APP=$STAGE/app
mkdir -p "$APP/node_modules" "$STAGE/out/debs"

echo "gpu-bundle: esbuild bench-gpu + generate-models"
# Two entries, so that the generator lands in a shared chunk: its CLI guard (import.meta.url equal to
# argv[1]) must not fire inside bench-gpu.mjs, which calls generateModels() itself.
node_modules/.bin/esbuild scripts/bench-gpu.ts scripts/generate-models.ts \
  --bundle --splitting --format=esm --platform=node --target=node20 \
  --outdir="$APP" --out-extension:.js=.mjs --chunk-names='chunk-[hash]' \
  --external:webgpu --external:onnxruntime-web --external:onnx-proto \
  --external:playwright-core --external:vite --log-level=warning

echo "gpu-bundle: node_modules files loaded at run time"
# webgpu: index.js loads dist/<platform>-<arch>/dawn.node; only linux-x64 travels.
mkdir -p "$APP/node_modules/webgpu/dist/linux-x64"
cp node_modules/webgpu/package.json node_modules/webgpu/index.js node_modules/webgpu/LICENSE.md \
  "$APP/node_modules/webgpu/"
cp node_modules/webgpu/dist/linux-x64/dawn.node "$APP/node_modules/webgpu/dist/linux-x64/"
# onnxruntime-web: the build transformers.js loads (`onnxruntime-web/webgpu`) and its asyncify WASM.
mkdir -p "$APP/node_modules/onnxruntime-web/dist"
cp node_modules/onnxruntime-web/package.json "$APP/node_modules/onnxruntime-web/"
for f in ort.webgpu.bundle.min.mjs ort-wasm-simd-threaded.asyncify.mjs ort-wasm-simd-threaded.asyncify.wasm; do
  cp "node_modules/onnxruntime-web/dist/$f" "$APP/node_modules/onnxruntime-web/dist/"
done
# onnx-proto: the generator loads it with require(); one CJS file with protobufjs inside.
mkdir -p "$APP/node_modules/onnx-proto"
node_modules/.bin/esbuild node_modules/onnx-proto/dist/onnx.js --bundle --platform=node --format=cjs \
  --target=node20 --outfile="$APP/node_modules/onnx-proto/index.js" --log-level=warning
printf '{ "name": "onnx-proto", "main": "index.js" }\n' > "$APP/node_modules/onnx-proto/package.json"
git rev-parse HEAD > "$APP/COMMIT" 2>/dev/null || echo unknown > "$APP/COMMIT"

echo "gpu-bundle: app.tar.xz"
tar -C "$STAGE" -cf - app | xz -9 -T1 > "$STAGE/out/app.tar.xz"

NODE_BIN=$(command -v node)
echo "gpu-bundle: node.xz ($NODE_BIN, $(node --version))"
# xz -9 of ~100 MB takes minutes: keep one per node binary in the user's cache.
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/loupe-gpu
NODE_SHA=$(sha256sum "$NODE_BIN" | cut -d' ' -f1)
if [ ! -f "$CACHE/node-$NODE_SHA.xz" ]; then
  mkdir -p "$CACHE"
  xz -9 -T1 -c "$NODE_BIN" > "$CACHE/node-$NODE_SHA.xz.part"
  mv "$CACHE/node-$NODE_SHA.xz.part" "$CACHE/node-$NODE_SHA.xz"
fi
[ "$(xz -dc "$CACHE/node-$NODE_SHA.xz" | sha256sum | cut -d' ' -f1)" = "$NODE_SHA" ] || {
  echo "gpu-bundle: $CACHE/node-$NODE_SHA.xz does not unpack to $NODE_BIN" >&2
  exit 1
}
cp "$CACHE/node-$NODE_SHA.xz" "$STAGE/out/node.xz"

echo "gpu-bundle: Debian libvulkan1, libegl1, libglvnd0"
(cd "$STAGE/out/debs" && apt-get download libvulkan1 libegl1 libglvnd0 > /dev/null)

cp scripts/gpu-run.sh "$STAGE/out/run.sh"
chmod +x "$STAGE/out/run.sh"
(cd "$STAGE/out" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum > SHA256SUMS)

BYTES=$(du -sb "$STAGE/out" | cut -f1)
if [ "$BYTES" -gt $((MAX_MIB * 1024 * 1024)) ]; then
  echo "gpu-bundle: $((BYTES / 1024 / 1024)) MiB exceeds ${MAX_MIB} MiB" >&2
  exit 1
fi
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
cp -r "$STAGE/out" "$DEST"
echo "gpu-bundle: wrote $DEST ($((BYTES / 1024)) KiB)"
ls -l "$DEST" "$DEST/debs"
