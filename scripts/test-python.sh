#!/usr/bin/env bash
# The Python package's tests (docs/python.md): a virtual environment under the cargo target
# directory with the package's test tools from PyPI, the wheel built by maturin and installed
# into it, then the pytest suite (python/tests), which compares every number with the
# command line's and executes examples/notebooks/adaptbf-priorities.ipynb.
#
# Runs after `cargo test` in scripts/test.sh: the wheel is built with the settings of cargo's
# test profile into the same target directory, so only the extension module itself compiles.
#
# `--tools-only` makes the environment and installs the tools, then stops (scripts/test.sh runs
# that beside the Rust build, then this script again for the rest, which finds them there).
set -euo pipefail
tools_only=0
case "${1:-}" in
  --tools-only) tools_only=1 ;;
  "") ;;
  *) echo "test-python: unknown argument $1 (the one argument it takes: --tools-only)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
repo=$(pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/python-venv
wheels=$target/python-wheels
export PIP_DISABLE_PIP_VERSION_CHECK=1

python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "test-python: '$python' is missing: install Python 3.9 or later (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))'; then
  echo "test-python: $("$python" --version 2>&1) is older than 3.9, the oldest the package supports" >&2
  exit 1
fi

# A virtual environment of its own (reused when it still works: a later run only checks it).
if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" 2>/dev/null; then
    # Debian's python3 keeps venv (and its pip) in a package of their own.
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -qq --no-install-recommends python3-venv >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }
      rm -rf "$venv"
      "$python" -m venv "$venv"
    else
      echo "test-python: '$python -m venv' failed: install python3-venv" >&2
      exit 1
    fi
  fi
fi
py=$venv/bin/python
pip() { timeout 900 "$py" -m pip install --quiet --retries 5 "$@"; }
# The build tool, the package's dependencies and the test tools. pyarrow is optional (pandas
# uses it for string columns when present); tqdm is optional (progress bars).
pip maturin pandas numpy matplotlib pytest nbclient nbformat ipykernel tqdm
pip pyarrow || echo "test-python: pyarrow could not be installed; the tests run without it" >&2
if [[ $tools_only == 1 ]]; then
  exit 0
fi

# The command line the tests compare against: what `cargo test` built (a no-op then). Not
# `cargo build -p pfsqos-cli`: without the workspace's dev-dependencies the features of
# tokio and others resolve differently, and half the workspace would build again.
cargo test --workspace --locked --no-run --quiet
cli=$target/debug/pfsqos

# The wheel, with the test profile's settings (the dev profile at opt-level 1, in
# target/debug: cargo test's artifacts are reused). `maturin build --profile test` would
# build the library as a test harness, not as the extension.
rm -rf "$wheels"
CARGO_PROFILE_DEV_OPT_LEVEL=1 CARGO_TARGET_DIR=$target \
  "$venv/bin/maturin" build --profile dev --locked --quiet --out "$wheels"
wheel=$(ls "$wheels"/pfsqos-*-abi3-*.whl)
"$py" -m pip install --quiet --force-reinstall --no-deps "$wheel"

# The installed package, not the sources: run from outside the repository's python/.
cd "$target"
PFSQOS_CLI=$cli timeout 1200 "$py" -m pytest -q -p no:cacheprovider "$repo/python/tests"
