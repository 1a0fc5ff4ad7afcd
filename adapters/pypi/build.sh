#!/usr/bin/env bash
# Makes adapters/pypi/venv, a virtual environment of Debian's Python (/usr/bin/python3, which
# stays the project's own), with requirements.txt's packages installed from PyPI at its exact
# versions, each checked against its hashes (--require-hashes). The Python adapters whose
# library is not Debian's run with venv/bin/python (their lock files say so). Fetched here, at
# set-up, once; nothing is fetched while a case runs. Quiet, and done at once, when the venv is
# newer than requirements.txt and this script; scripts/setup runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$here/venv
stamp=$venv/.installed
if [ -f "$stamp" ] && [ ! "$here/requirements.txt" -nt "$stamp" ] && [ ! "$here/build.sh" -nt "$stamp" ]; then
  exit 0
fi
/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || { echo "pypi: Python's venv is missing: apt-get install python3-venv" >&2; exit 1; }
# Made beside, then put in place whole: a failed install leaves the old venv (or none). Only
# venv/bin/python is used, which finds its packages wherever the folder is (its scripts, pip's
# among them, keep the path they were made at).
rm -rf "$venv.new"
trap 'rm -rf "$venv.new"' EXIT
/usr/bin/python3 -m venv "$venv.new"
"$venv.new/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --require-hashes --only-binary=:all: \
  -r "$here/requirements.txt"
touch "$venv.new/.installed"
rm -rf "$venv"
mv "$venv.new" "$venv"
