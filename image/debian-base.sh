#!/bin/sh
# Build the image's base (Debian bookworm with Python 3.11) from a Debian mirror with
# debootstrap and import it into podman: the air-gapped path, no container registry needed.
# Usage: image/debian-base.sh [TAG]
#   env DEBIAN_MIRROR           default http://deb.debian.org/debian
#       DEBIAN_SECURITY_MIRROR  default http://deb.debian.org/debian-security
# Skips the build when TAG already exists (debootstrap takes minutes).
set -eu
tag=${1:-localhost/berth-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
if podman image exists "$tag"; then
    echo "base image $tag exists; not rebuilt"
    exit 0
fi
root=$(mktemp -d /var/tmp/berth-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$mirror"
cat > "$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
SOURCES
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
tar -C "$root" --numeric-owner -c . | podman import \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' - "$tag"
echo "built base image $tag"
