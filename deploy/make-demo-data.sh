#!/bin/sh
# Example data for a trial run: fedanon's synthetic hospital table (6000 patients, no real
# person), split at random over hospital-a/b/c into deploy/data/, its taxonomy as
# deploy/config/taxonomy.toml (taken from the installed fedanon, so the two always match), and
# an empty deploy/out/. A real federation puts its own tables and agreed taxonomy there instead.
# Needs no activated venv: fedanon-command.sh finds the repository's .venv (or python3); PYTHON
# selects another interpreter with fedanon installed.
set -eu
cd "$(dirname "$0")"
unset FEDANON                    # this script runs Python itself: PYTHON must import fedanon
. ./fedanon-command.sh
mkdir -p data out
# The leader (uid 10001 in the image, or the uid make-certs.sh wrote to .env) writes to out/.
[ "$(id -u)" != 0 ] || chown 10001:10001 out
"$PYTHON" - <<'PY'
import shutil

import numpy as np
from fedanon.synth import generate_hospital, hospital_taxonomy_path

table = generate_hospital()
order = np.random.default_rng(1).permutation(len(table))
for name, rows in zip(("a", "b", "c"), np.array_split(order, 3)):
    part = table.iloc[np.sort(rows)]
    part.to_csv(f"data/hospital-{name}.csv", index=False)
    print(f"data/hospital-{name}.csv: {len(part)} rows")
shutil.copyfile(hospital_taxonomy_path(), "config/taxonomy.toml")
print("config/taxonomy.toml: the demo data's taxonomy")
PY
