#!/bin/sh
# Build Berth's image with podman (`make image`, and the image test, run this).
#
# Environment:
#   IMAGE          the tag to build            (default localhost/berth:latest)
#   BASE           the base image: Debian bookworm with python3 = 3.11 and its venv module,
#                  e.g. docker.io/library/python:3.11-slim-bookworm where a registry is
#                  reachable. Default localhost/berth-base:bookworm, built here from the Debian
#                  mirror with debootstrap (image/debian-base.sh) when it does not exist yet.
#   CA_BUNDLE      extra CA certificates pip trusts during the build, passed as the build
#                  secret `ca_bundle` (never stored in the image). Default: the host's trust
#                  store /etc/ssl/certs/ca-certificates.crt; set it empty to pass none.
#   PIP_INDEX_URL  a PyPI mirror for the build (default: pip's own index).
# Installs podman, buildah, runc and debootstrap from Debian when missing (as root).
set -eu
cd "$(dirname "$0")/.."
image=${IMAGE:-localhost/berth:latest}
base=${BASE:-localhost/berth-base:bookworm}
ca_bundle=${CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}

missing=""
for tool in podman buildah runc debootstrap; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "missing:$missing (run as root to install them from Debian)" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc debootstrap
fi

if [ "$base" = localhost/berth-base:bookworm ]; then
    image/debian-base.sh "$base"
fi

secret=$(mktemp)
trap 'rm -f "$secret"' EXIT
if [ -n "$ca_bundle" ] && [ -f "$ca_bundle" ]; then
    cat "$ca_bundle" > "$secret"
fi

previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
podman build --runtime runc --network host --layers \
    --build-arg BASE="$base" --build-arg PIP_INDEX_URL="${PIP_INDEX_URL:-}" \
    --secret id=ca_bundle,src="$secret" \
    --tag "$image" --file Dockerfile .
current=$(podman image inspect --format '{{.Id}}' "$image")
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
    # the image this build replaced, untagged now: drop it unless a container still uses it
    podman rmi "$previous" >/dev/null 2>&1 || true
fi
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "built $image: $((size / 1000000)) MB"
