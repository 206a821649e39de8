# One image for Shipyard, Promenade and Drydock: the services only (no simulator, no launcher).
# Choose the service with the command, e.g.
#   podman run localhost/berth:latest shipyard-api --bind 0.0.0.0:9000 \
#       --config-file /etc/berth/shipyard/shipyard.conf
#   podman run localhost/berth:latest drydock-worker --config-file /etc/berth/drydock/drydock.conf
# Build with `make image` (image/build.sh), which passes the build arguments and the secret.
#
# BASE: any Debian bookworm image whose `python3` is Python 3.11 with the venv module, e.g.
# python:3.11-slim-bookworm from a registry, or (air-gapped, the default) the one
# image/debian-base.sh makes from a Debian mirror with debootstrap.
ARG BASE=localhost/berth-base:bookworm

FROM ${BASE} AS build
# PIP_INDEX_URL: a PyPI mirror when pypi.org is out of reach (empty: pip's default index).
ARG PIP_INDEX_URL=
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python3 -m venv /opt/berth
# The pinned dependencies first (a layer that changes only with image/constraints.txt). The
# secret `ca_bundle` (may be empty) holds extra CA certificates pip should trust, e.g. a
# site's TLS-inspecting proxy; it is mounted for this step only and never stored.
COPY image/constraints.txt ./
RUN --mount=type=secret,id=ca_bundle,target=/run/secrets/ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        cat /etc/ssl/certs/ca-certificates.crt /run/secrets/ca_bundle > /tmp/ca.pem; \
        export PIP_CERT=/tmp/ca.pem; \
    fi; \
    if [ -n "$PIP_INDEX_URL" ]; then export PIP_INDEX_URL; else unset PIP_INDEX_URL; fi; \
    /opt/berth/bin/pip install -q -r constraints.txt && rm -f /tmp/ca.pem
COPY pyproject.toml setup.cfg setup.py README.md ./
COPY common common
COPY shipyard_api shipyard_api
COPY promenade_api promenade_api
COPY drydock_api drydock_api
COPY schemas schemas
# Berth itself, from these sources only (no download: the build backend is in the venv), then
# pip goes (the runtime image installs nothing), and so does the kubernetes client's asyncio
# copy (kubernetes/aio, ~70 MB), which nothing imports.
RUN /opt/berth/bin/pip install -q --no-deps --no-build-isolation . \
    && /opt/berth/bin/python -m pip uninstall -q -y pip \
    && rm -rf /opt/berth/lib/python3.11/site-packages/kubernetes/aio

FROM ${BASE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends ipmitool \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
    && groupadd --system --gid 10001 berth \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/berth --create-home \
        --shell /usr/sbin/nologin berth
# Only the virtualenv crosses over from the build stage: no wheels, no sources, no pip.
COPY --from=build /opt/berth /opt/berth
# The configuration the Kubernetes manifests mount (deploy/kubernetes/base/config): the
# image starts with it as is; a Pod's ConfigMap mounted over /etc/berth/<service> replaces it.
COPY deploy/kubernetes/base/config/shipyard.conf /etc/berth/shipyard/shipyard.conf
COPY deploy/kubernetes/base/config/promenade.conf deploy/kubernetes/base/config/kubeconfig.yaml \
     /etc/berth/promenade/
COPY deploy/kubernetes/base/config/drydock.conf /etc/berth/drydock/drydock.conf
ENV PATH=/opt/berth/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LANG=C.UTF-8
USER 10001:10001
WORKDIR /var/lib/berth
EXPOSE 9000 9001 9002
CMD ["shipyard-api", "--bind", "0.0.0.0:9000", "--config-file", "/etc/berth/shipyard/shipyard.conf"]
