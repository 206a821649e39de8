# One image for Shipyard, Promenade and Drydock; choose the service with the command, e.g.
#   docker run berth shipyard-api --bind 0.0.0.0:9000 --config-file /etc/berth/shipyard.conf
#   docker run berth drydock-worker --config-file /etc/berth/drydock.conf
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml setup.cfg setup.py README.md ./
COPY common common
COPY shipyard_api shipyard_api
COPY promenade_api promenade_api
COPY drydock_api drydock_api
COPY sitesim sitesim
COPY schemas schemas
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends ipmitool \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/berth --create-home berth
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY etc /etc/berth/samples
USER berth
WORKDIR /var/lib/berth
EXPOSE 9000 9001 9002
CMD ["shipyard-api", "--bind", "0.0.0.0:9000", "--config-file", "/etc/berth/shipyard.conf"]
