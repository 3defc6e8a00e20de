#!/bin/sh
# Regenerate deploy/requirements.lock (fedanon's runtime dependencies from pyproject.toml) and
# deploy/requirements-build.lock (what building fedanon and pyfim needs), every file of every
# pinned release listed with its SHA-256 (the image installs them with --require-hashes).
# Run after changing [project] dependencies; needs pip-tools (pip install pip-tools) and PyPI.
# The host's pip configuration (local mirrors, constraints) is ignored: the locks name PyPI's
# files. tests/deploy/test_lock.py fails while pyproject.toml and the lock disagree.
set -eu
cd "$(dirname "$0")"
compile() {
    env -u PIP_FIND_LINKS -u PIP_CONSTRAINT -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
        CUSTOM_COMPILE_COMMAND="deploy/lock.sh" \
        pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
        --no-emit-find-links --upgrade "$@"
}
compile -o requirements.lock ../pyproject.toml
compile -o requirements-build.lock requirements-build.in
