# Sourced by make-certs.sh and make-demo-data.sh (from deploy/): sets PYTHON and FEDANON so the
# scripts work from a fresh checkout without an activated venv.
#   PYTHON   an interpreter that imports fedanon: $PYTHON if set, else the repository's
#            .venv/bin/python, else python3 (e.g. inside the image, where fedanon is installed)
#   FEDANON  the fedanon command: $FEDANON if set, else "$PYTHON -m fedanon.cli.main"
# Stops with one line when that interpreter cannot import fedanon.
if [ -z "${PYTHON:-}" ]; then
    if [ -x ../.venv/bin/python ]; then
        PYTHON=$(cd .. && pwd)/.venv/bin/python
    else
        PYTHON=python3
    fi
fi
if [ -z "${FEDANON:-}" ]; then
    if ! "$PYTHON" -c "import fedanon" 2>/dev/null; then
        echo "$0: $PYTHON cannot import fedanon: run 'python3 -m venv .venv &&" \
             ".venv/bin/pip install .' at the repository root, or set PYTHON or FEDANON" >&2
        exit 2
    fi
    FEDANON="$PYTHON -m fedanon.cli.main"
fi
