#!/usr/bin/env bash
# Prints the path of a Python venv holding the reference implementations the test command checks
# deploy-gate against, creating it first when it is missing. The venvs are kept outside the
# checkout, one per set of pinned versions and Python version, so a second run (or another
# checkout) reuses them instead of downloading and building the same packages again:
#
#   scripts/reference-venv.sh stats     statsmodels, scipy, numpy, mpmath (the versions the
#                                       known answers' fixtures record), model-signing 1.1.1
#                                       with pyOpenSSL, and pytest
#   scripts/reference-venv.sh confseq   confseq 0.0.11 (built from source: its C++ extension
#                                       needs Debian's libboost-dev) with numpy < 2 (it uses
#                                       np.float_)
#
# None of these venvs holds deploy-gate's Python package: its tests run in a fresh venv the test
# command creates each time. The cache is ${DEPLOY_GATE_VENV_CACHE:-~/.cache/deploy-gate/venvs};
# a venv is used only once it was completed (a marker written last), so an interrupted build is
# done again; delete the folder to start over. pip's output goes to stderr, the path to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { printf 'reference-venv: error: %s\n' "$*" >&2; exit 1; }

# The pip installs, in order (each a list of arguments): changing one makes a new venv.
case ${1:-} in
  stats)
    phases=("statsmodels==0.15.0 scipy==1.17.1 numpy==2.4.6 mpmath==1.4.1 model-signing==1.1.1 pyOpenSSL==26.4.0 pytest") ;;
  confseq)
    # The build requirements first, then confseq without build isolation (so it builds against
    # them): its own build requirements do not build on this Python.
    phases=("pybind11>=2.10 cmake scikit-build setuptools wheel numpy<2"
            "--no-build-isolation confseq==0.0.11 numpy<2") ;;
  *) fail "usage: scripts/reference-venv.sh stats|confseq" ;;
esac

python=${PYTHON:-python3}
version=$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
key=$(printf '%s\n' "$1" "$version" "${phases[@]}" | sha256sum | cut -c1-16)
cache=${DEPLOY_GATE_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/deploy-gate/venvs}
venv=$cache/$1-py$version-$key

if [ -f "$venv/.complete" ]; then
  printf '%s\n' "$venv"
  exit 0
fi
mkdir -p "$cache"
# Two runs at once: the second waits for the first, then uses its venv.
exec 9>"$venv.lock"
flock 9
if [ -f "$venv/.complete" ]; then
  printf '%s\n' "$venv"
  exit 0
fi
printf 'reference-venv: creating %s\n' "$venv" >&2
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile --upgrade pip >&2
for phase in "${phases[@]}"; do
  read -ra args <<<"$phase"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile "${args[@]}" >&2
done
printf '%s\n' "${phases[@]}" >"$venv/.complete"
printf '%s\n' "$venv"
