#!/usr/bin/env bash
# Installs OpenStack Ironic into its own venv in a cache outside the git tree
# ($BERTH_IRONIC_CACHE, default ~/.cache/berth/ironic)/<version>/venv, reused when warm.
# Ironic brings ~110 packages (oslo.*, eventlet, pecan ...) that Berth's own venv must not carry.
# The last line on stdout is the venv's bin directory.
# `install.sh --check` installs nothing: it prints that directory and exits 0 when warm, 3 when not.
set -euo pipefail

IRONIC_VERSION="${BERTH_IRONIC_VERSION:-39.0.0}"
PYTHON="${PYTHON:-python3}"
cache_root="${BERTH_IRONIC_CACHE:-${HOME}/.cache/berth/ironic}"
venv="${cache_root}/${IRONIC_VERSION}/venv"
stamp="${venv}/.installed"

if [[ -f "${stamp}" && -x "${venv}/bin/ironic" && -x "${venv}/bin/ironic-dbsync" ]]; then
    echo "${venv}/bin"
    exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
    echo "${venv}/bin"
    exit 3
fi
echo "ironic: installing ironic==${IRONIC_VERSION} into ${venv} (about 300 MB)" >&2
test -x "${venv}/bin/python" || "${PYTHON}" -m venv "${venv}"
"${venv}/bin/pip" install -q --upgrade pip setuptools wheel >&2
"${venv}/bin/pip" install -q "ironic==${IRONIC_VERSION}" >&2
touch "${stamp}"
echo "${venv}/bin"
