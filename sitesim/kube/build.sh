#!/usr/bin/env bash
# Builds the simulated site's Kubernetes binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl from this module; etcd 3.6 from ./etcd; kwok from its published
# module) into a cache outside the git tree, keyed by both modules' go.mod and go.sum, the Go
# version and the kwok version.
# kwok's default Stages (node-initialize, node-heartbeat-with-lease, pod-ready, pod-complete,
# pod-delete) are copied from the same kwok module into <key>/stages. A warm cache is reused
# as is. The last line on stdout is the directory of the binaries.
# `build.sh --check` builds nothing: it prints that directory and exits 0 when the cache is warm,
# and exits 3 when it is not.
set -euo pipefail

export GOTOOLCHAIN=local
KWOK_VERSION=v0.8.0
KWOK_PKG=sigs.k8s.io/kwok/cmd/kwok
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The version the binaries report (kubectl version, /version, skew checks), stamped as
# Kubernetes' own release builds do (hack/lib/version.sh); the commit is not in a module zip.
k8s_version="$(sed -n 's|^require k8s.io/kubernetes \(v[0-9][0-9.]*\)$|\1|p' "${here}/go.mod")"
[[ "${k8s_version}" =~ ^v([0-9]+)\.([0-9]+)\. ]] || { echo "kube: no k8s.io/kubernetes version in go.mod" >&2; exit 1; }
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=${BASH_REMATCH[1]}"
    LDFLAGS+=" -X ${pkg}.gitMinor=${BASH_REMATCH[2]} -X ${pkg}.gitTreeState=clean"
    LDFLAGS+=" -X ${pkg}.gitCommit="
done
BUILD_FLAGS=(-trimpath "-ldflags=${LDFLAGS}")
# kwok and etcd carry their own version variables: only stripped.
KWOK_BUILD_FLAGS=(-trimpath "-ldflags=-s -w")
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
KWOK_STAGES=(
    node/fast/node-initialize.yaml
    node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
    pod/fast/pod-ready.yaml
    pod/fast/pod-complete.yaml
    pod/fast/pod-delete.yaml
)

cache_root="${BERTH_KUBE_CACHE:-${HOME}/.cache/berth/kube}"

command -v go >/dev/null || {
    echo "kube: Go is needed to build the site's Kubernetes (Go 1.26 or newer; GOTOOLCHAIN=local)" >&2
    exit 1
}
go_version="$(go version)"
key="$(
    {
        cat "${here}/go.mod" "${here}/go.sum" "${here}/etcd/go.mod" "${here}/etcd/go.sum"
        printf '%s\n' "${go_version}" "kwok ${KWOK_VERSION}" "flags ${BUILD_FLAGS[*]}" \
            "kwok flags ${KWOK_BUILD_FLAGS[*]}"
    } | sha256sum | cut -c1-16
)"
out="${cache_root}/${key}"
bin="${out}/bin"

log() { printf 'kube: %s\n' "$*" >&2; }

all_built() {
    local name
    for name in "${K8S_CMDS[@]}" etcd kwok; do
        [[ -x "${bin}/${name}" ]] || return 1
    done
    [[ -f "${out}/stages/.complete" ]]
}

copy_stages() {
    local dir stage
    [[ -f "${out}/stages/.complete" ]] && return 0
    dir="$(cd "${out}" && go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -n "${dir}" ]] || { log "cannot locate sigs.k8s.io/kwok@${KWOK_VERSION} in the module cache"; return 1; }
    mkdir -p "${out}/stages"
    for stage in "${KWOK_STAGES[@]}"; do
        cp "${dir}/kustomize/stage/${stage}" "${out}/stages/$(basename "${stage}")"
    done
    touch "${out}/stages/.complete"
    log "kwok stages in ${out}/stages"
}

if all_built; then
    log "warm cache ${bin}"
    printf '%s\n' "${bin}"
    exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
    log "not built yet: ${bin} (run sitesim/kube/build.sh or make kube)"
    exit 3
fi

mkdir -p "${bin}"
exec 9>"${out}/.lock"
flock 9
if all_built; then
    log "built by another run: ${bin}"
    printf '%s\n' "${bin}"
    exit 0
fi

total=$(( ${#K8S_CMDS[@]} + 2 ))
n=0
started=${SECONDS}
for name in "${K8S_CMDS[@]}"; do
    n=$(( n + 1 ))
    if [[ -x "${bin}/${name}" ]]; then
        log "[${n}/${total}] ${name}: already built"
        continue
    fi
    log "[${n}/${total}] building ${name} (k8s.io/kubernetes/cmd/${name}) ..."
    t0=${SECONDS}
    (cd "${here}" && go build "${BUILD_FLAGS[@]}" -o "${bin}/.${name}.tmp" "k8s.io/kubernetes/cmd/${name}")
    mv -f "${bin}/.${name}.tmp" "${bin}/${name}"
    log "[${n}/${total}] ${name} done in $(( SECONDS - t0 ))s"
done

n=$(( n + 1 ))
if [[ -x "${bin}/etcd" ]]; then
    log "[${n}/${total}] etcd: already built"
else
    log "[${n}/${total}] building etcd (go.etcd.io/etcd/server/v3) ..."
    t0=${SECONDS}
    (cd "${here}/etcd" && go build "${KWOK_BUILD_FLAGS[@]}" -o "${bin}/.etcd.tmp" go.etcd.io/etcd/server/v3)
    mv -f "${bin}/.etcd.tmp" "${bin}/etcd"
    log "[${n}/${total}] etcd done in $(( SECONDS - t0 ))s"
fi

n=$(( n + 1 ))
if [[ -x "${bin}/kwok" ]]; then
    log "[${n}/${total}] kwok: already built"
else
    log "[${n}/${total}] building kwok (${KWOK_PKG}@${KWOK_VERSION}) ..."
    t0=${SECONDS}
    tmp_bin="$(mktemp -d "${out}/.kwok.XXXXXX")"
    (cd "${out}" && GOBIN="${tmp_bin}" go install "${KWOK_BUILD_FLAGS[@]}" "${KWOK_PKG}@${KWOK_VERSION}")
    mv -f "${tmp_bin}/kwok" "${bin}/kwok"
    rmdir "${tmp_bin}"
    log "[${n}/${total}] kwok done in $(( SECONDS - t0 ))s"
fi

copy_stages

{
    printf '# %s\n' "${go_version}"
    for name in "${K8S_CMDS[@]}" etcd kwok; do
        go version -m "${bin}/${name}"
    done
} > "${out}/versions.txt"
log "built in $(( SECONDS - started ))s; module versions in ${out}/versions.txt"
printf '%s\n' "${bin}"
