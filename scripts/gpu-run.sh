#!/usr/bin/env bash
# run.sh of the folder scripts/gpu-bundle.sh writes (.gpu/): `npm run bench:gpu` on a bare x86-64 Linux
# machine with a GPU: no Node, no npm, no network needed. Unpacks Node and the bundled bench under
# $LOUPE_GPU_TMP (default /tmp/loupe-gpu), installs Debian's Vulkan loader (dpkg -x to / and ldconfig
# when running as root and libvulkan.so.1 is missing; the unpacked copy is put first on
# LD_LIBRARY_PATH in every case), points VK_DRIVER_FILES at NVIDIA's ICD when no ICD is found,
# generates the two models, runs the bench, and writes into $OUT:
#   bench-gpu.md (the table), bench-gpu.json (adapter, machine, every run), run.log (everything),
#   vulkan.txt (what the loader saw).
# Arguments go to the bench (e.g. --vectors 20000 --queries 100). It stops itself after
# $LOUPE_GPU_LIMIT_S seconds (default 450), keeping what it measured so far.
#
#   OUT=/some/folder bash .gpu/run.sh [bench-gpu options]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/gpu-out}
T=${LOUPE_GPU_TMP:-/tmp/loupe-gpu}
LIMIT_S=${LOUPE_GPU_LIMIT_S:-450}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/run.log") 2>&1
TEE_PID=$!
finish() { # rc: let tee write the log's last lines before the caller collects $OUT
  exec >&- 2>&-
  wait "$TEE_PID" 2> /dev/null
  exit "$1"
}
say() { echo "[run.sh $(date -u +%H:%M:%S)] $*"; }
say "bundle $HERE, out $OUT, tmp $T, limit ${LIMIT_S} s, args: $*"
uname -a
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# ---- check and unpack -------------------------------------------------------------------------------
if command -v sha256sum > /dev/null; then
  (cd "$HERE" && sha256sum --quiet -c SHA256SUMS) || { say "bundle files damaged (SHA256SUMS)"; finish 1; }
fi
rm -rf "$T"
mkdir -p "$T/debroot" "$T/xdg"
chmod 700 "$T/xdg"

# xz and dpkg when present, python3 (lzma, tarfile, the ar format) otherwise.
unxz_to() { # src dst
  if command -v xz > /dev/null; then xz -dc "$1" > "$2"; else
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' "$1" "$2"
  fi
}
untar_xz() { # src dir
  if command -v xz > /dev/null && command -v tar > /dev/null; then xz -dc "$1" | tar -C "$2" -xf -; else
    python3 -c 'import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
  fi
}
deb_x() { # deb dir
  if command -v dpkg > /dev/null; then dpkg -x "$1" "$2"; else
    python3 - "$1" "$2" << 'PY'
import io, sys, tarfile
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'!<arch>\n', 'not a deb'
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip('/')
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith('data.tar'):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
  fi
}

NODE=$T/node
unxz_to "$HERE/node.xz" "$NODE" && chmod +x "$NODE" || { say "cannot unpack node.xz"; finish 1; }
untar_xz "$HERE/app.tar.xz" "$T" || { say "cannot unpack app.tar.xz"; finish 1; }
say "node $("$NODE" --version), app at commit $(cat "$T/app/COMMIT")"

# ---- Vulkan loader and driver -------------------------------------------------------------------------
for deb in "$HERE"/debs/*.deb; do deb_x "$deb" "$T/debroot" || { say "cannot unpack $deb"; finish 1; }; done
if [ "$(id -u)" = 0 ] && ! ldconfig -p 2> /dev/null | grep -q 'libvulkan\.so\.1 '; then
  say "installing libvulkan1, libegl1, libglvnd0 into / (dpkg -x) and running ldconfig"
  for deb in "$HERE"/debs/*.deb; do deb_x "$deb" /; done
  ldconfig
fi
LIBDIR=$T/debroot/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XDG_RUNTIME_DIR=$T/xdg
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  # The loader searches /usr/share, /usr/local/share and /etc vulkan/icd.d itself; NVIDIA's json
  # elsewhere (the container runtime's /usr/local/nvidia) has to be named.
  standard=no
  for f in /usr/share/vulkan/icd.d/nvidia*.json /usr/local/share/vulkan/icd.d/nvidia*.json \
    /etc/vulkan/icd.d/nvidia*.json; do
    [ -f "$f" ] && standard=yes
  done
  if [ "$standard" = no ]; then
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/icd.d/nvidia_icd.json \
      /usr/local/nvidia/etc/vulkan/icd.d/nvidia_icd.json; do
      if [ -f "$icd" ]; then
        export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd # the second for older loaders
        break
      fi
    done
  fi
fi
{
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ls -l /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d 2>&1
  for f in $(echo "${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}}" | tr ':' ' '); do echo "== $f"; cat "$f" 2>&1; done
  ldconfig -p 2> /dev/null | grep -E 'libvulkan|libGLX_nvidia|libEGL' || true
} > "$OUT/vulkan.txt" 2>&1
say "Vulkan: VK_DRIVER_FILES=${VK_DRIVER_FILES:-(loader default)}"

# ---- models and bench -----------------------------------------------------------------------------
# The bench generates its models (scripts/generate-models.ts, bundled) into $T/models first.
cd "$T/app"
say "bench-gpu $*"
timeout -k 10 "$LIMIT_S" "$NODE" --no-liftoff bench-gpu.mjs --models-dir "$T/models" \
  --out "$OUT/bench-gpu.json" "$@"
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  say "stopped after ${LIMIT_S} s: the table holds what was measured until then"
  cat "$OUT/bench-gpu.md" 2> /dev/null
fi
say "exit $rc; wrote $(ls "$OUT" | tr '\n' ' ')"
finish "$rc"
