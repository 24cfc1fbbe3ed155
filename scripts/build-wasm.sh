#!/usr/bin/env bash
# Builds Loupe's HNSW engine (src/lib/wasm/hnsw.cpp over Debian's hnswlib headers) to
# src/lib/wasm/generated/hnsw.{mjs,wasm} with emscripten: -O3, 128-bit wasm SIMD, NDEBUG, no
# emscripten assertions, native wasm exceptions. Installs Debian's emscripten and libhnswlib-dev when
# missing (the same hnswlib release as python3-hnswlib, the native anchor of `npm run bench:index`).
#
# The output is committed (as Squoosh commits its codecs), so `npm start` and `npm run build` need no
# Emscripten; run this (`npm run build:wasm`) after changing hnsw.cpp and commit the result.
# tests/unit/wasm-build.test.ts rebuilds into LOUPE_WASM_OUT (a temporary folder) and checks that the
# committed files are reproduced byte for byte (Debian's emscripten 3.1.6 output is byte-stable).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=src/lib/wasm/hnsw.cpp
OUT=${LOUPE_WASM_OUT:-src/lib/wasm/generated}
if ! command -v emcc > /dev/null || [ ! -f /usr/include/hnswlib/hnswalg.h ]; then
  echo "build-wasm: installing Debian emscripten and libhnswlib-dev"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq emscripten libhnswlib-dev > /tmp/loupe-apt-emscripten.log 2>&1 \
    || { tail -20 /tmp/loupe-apt-emscripten.log; exit 1; }
fi
echo "build-wasm: $SRC -> $OUT/hnsw.{mjs,wasm} (emcc $(emcc --version | head -1 | grep -o '[0-9][0-9.]*' | head -1))"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Only hnswlib from /usr/include: the rest of it is glibc's, which must not reach a wasm build.
mkdir -p "$TMP/include"
ln -s /usr/include/hnswlib "$TMP/include/hnswlib"
EXPORTS=_malloc,_free
for f in error create free add set_ef count dim search search_excluding save saved release_saved load; do
  EXPORTS="$EXPORTS,_loupe_hnsw_$f"
done
EXPORTS="$EXPORTS,_loupe_exact_candidates,_loupe_exact_candidates_i16"
# Debian's emscripten runs its JS tools with the system node, which finds Debian's acorn here.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
# Emscripten's cache of built system libraries must be writable; Debian's is not for other users.
[ -w /usr/share/emscripten/cache ] || export EM_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/loupe-emscripten"
emcc -std=c++17 -O3 -msimd128 -DNDEBUG -fwasm-exceptions -I"$TMP/include" "$SRC" \
  -o "$TMP/hnsw.mjs" \
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createHnswModule -sENVIRONMENT=web,worker \
  -sASSERTIONS=0 -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=16MB -sMAXIMUM_MEMORY=4GB \
  -sEXPORTED_FUNCTIONS="$EXPORTS" -sEXPORTED_RUNTIME_METHODS=UTF8ToString
mkdir -p "$OUT"
cp src/lib/wasm/hnsw-module.d.mts "$TMP/hnsw.d.mts"
mv "$TMP/hnsw.mjs" "$TMP/hnsw.d.mts" "$OUT/"
mv "$TMP/hnsw.wasm" "$OUT/hnsw.wasm" # last: its date marks a complete build
