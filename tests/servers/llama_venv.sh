#!/usr/bin/env bash
# Create (idempotently) a Python venv with llama.cpp's OpenAI-compatible server
# (llama-cpp-python[server], built from source, CPU only) and the `gguf` writer.
#
#   bash tests/servers/llama_venv.sh            # venv at ./.venv-llama (repo root)
#   LLAMA_VENV=/tmp/v bash tests/servers/llama_venv.sh
#
# Needs: python3 (>= 3.8) with venv, a C/C++ compiler (gcc/g++), network to PyPI.
# cmake and ninja come from PyPI automatically (build isolation) if not on PATH.
# A second venv on the same machine reuses pip's wheel cache (~/.cache/pip) and
# takes seconds instead of minutes.
#
# Environment:
#   LLAMA_VENV        venv dir (relative paths are taken from the repo root)
#   PYTHON            interpreter to create the venv with (default python3)
#   LLAMA_CMAKE_ARGS  extra CMake arguments appended to the fast defaults below
#   LLAMA_BUILD_JOBS  parallel compile jobs (default: number of CPUs)
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
GGUF_VERSION=0.19.0

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"
venv="${LLAMA_VENV:-.venv-llama}"
case "$venv" in /*) ;; *) venv="$repo_root/$venv" ;; esac
python="${PYTHON:-python3}"

check() {
    [ -x "$venv/bin/python" ] || return 1
    "$venv/bin/python" - "$LLAMA_CPP_PYTHON_VERSION" "$GGUF_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
assert version("llama_cpp_python") == sys.argv[1], version("llama_cpp_python")
assert version("gguf") == sys.argv[2], version("gguf")
import llama_cpp, gguf                      # noqa: F401  (loads libllama.so)
import llama_cpp.server.app, uvicorn        # noqa: F401  (the [server] extra)
EOF
}

if check; then
    echo "llama_venv: $venv already has llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION gguf==$GGUF_VERSION (skipped)"
    exit 0
fi

# Serialize concurrent runs (two test processes starting at once).
mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then
    lock="${TMPDIR:-/tmp}/llama-venv-$(printf '%s' "$venv" | cksum | cut -d' ' -f1).lock"
    exec 9>"$lock"
    flock 9
    if check; then
        echo "llama_venv: $venv was completed by another run (skipped)"
        exit 0
    fi
fi

if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1; then
    echo "llama_venv: no C++ compiler found (apt-get install -y build-essential)" >&2
    exit 1
fi

start=$(date +%s)
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"

# CMake hook run when llama.cpp's project() is entered: llama-cpp-python forces
# LLAMA_BUILD_COMMON=ON, but the Python bindings never load libllama-common
# (chat/json/http helpers: ~100 heavy C++ objects). Turning it off after the
# force roughly halves the build.
hook_dir="$(mktemp -d)"
trap 'rm -rf "$hook_dir"' EXIT
printf 'set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)\n' \
    > "$hook_dir/skip-common.cmake"

# Fast CPU-only build:
# - no multimodal lib (LLAVA_BUILD), no common lib, no tests/examples/tools/server
# - -O0 instead of -O3: speed is irrelevant for the tiny model (2 layers, n_embd 64: an answer of
#   32 tokens in 0.14 s); the build takes 225 processor seconds, 139 s on 2 cores with downloads
# - no OpenMP (plain ggml threadpool), no llamafile sgemm, no Q4 repacking
# - GGML_NATIVE=OFF: portable x86-64-v3 (AVX2/FMA/F16C) code, not -march=native
export CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$hook_dir/skip-common.cmake \
-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF -DGGML_CPU_REPACK=OFF -DGGML_CCACHE=OFF \
-DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DGGML_RPC=OFF \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
'-DCMAKE_C_FLAGS_RELEASE=-O0 -DNDEBUG' '-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG' ${LLAMA_CMAKE_ARGS:-}"
export CMAKE_BUILD_PARALLEL_LEVEL="${LLAMA_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"
export FORCE_CMAKE=1

echo "llama_venv: installing llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION gguf==$GGUF_VERSION into $venv"
echo "llama_venv: (a cold build compiles llama.cpp: several minutes on 2 cores; cached wheels are reused)"
nice -n 10 "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off -q --no-compile \
    "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" "gguf==$GGUF_VERSION"

if ! check; then
    echo "llama_venv: install finished but the import check failed" >&2
    exit 1
fi
end=$(date +%s)
echo "llama_venv: ready in $((end - start)) s ($venv)"
