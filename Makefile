# The two set-up commands: `make run` (the whole suite on a simulated site) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# A real Keystone in its own venv, for the keystone auth strategy's tests.
KEYSTONE_STAMP := .venv-keystone/.installed
# npm (any Node.js that brings it) fetches axe-core for the browser tests.
DEBS   := etcd-server postgresql ipmitool openipmi wrk chromium chromium-driver
PACKAGES := common shipyard_api promenade_api drydock_api sitesim berth_launcher

.PHONY: run test lint typecheck unit debs venv keystone clean image lock kube docs ironic wiretypes

run: venv debs
	$(BIN)/berth up

# The suite mostly waits on real processes, so it runs on TEST_WORKERS pytest-xdist workers, each
# taking whole modules (their sites and control planes start once per worker), longest first.
TEST_WORKERS ?= 4

# The site's Kubernetes is built first (cold: about 7 minutes on 2 cores; warm: reused), so
# the tests of the real control plane never skip here.

test: venv debs keystone kube ironic image lint typecheck
	BERTH_KUBE_REQUIRED=1 BERTH_IRONIC_REQUIRED=1 $(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) \
	    --dist loadscope --no-loadscope-reorder --durations=25 tests

unit: venv
	$(BIN)/pytest -q -m 'not slow' tests/unit

# ruff, and the layers and no-cycle contracts of .importlinter.
lint: venv
	$(BIN)/ruff check $(PACKAGES) tests bench tools
	$(BIN)/lint-imports

# mypy's cache lives beside the other build caches: a fresh clone checks only what changed
# (it trusts an entry only when the file's content hash matches).
MYPY_CACHE ?= $(HOME)/.cache/berth/mypy

typecheck: venv
	$(BIN)/mypy --cache-dir $(MYPY_CACHE) $(PACKAGES)

# The docs site into build/site (strict: a broken link, anchor or missing page fails); the
# reference pages and diagrams are generated from the code (tools/docs/hooks.py).
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

venv: $(STAMP)

# The clients' wire types (common/clients/generated/) from the OpenAPI documents in
# schemas/openapi/; tests/unit/common/test_wire_types_current.py fails when they are stale.
wiretypes: venv
	$(BIN)/python tools/wiretypes.py

# The services' image (Dockerfile), built with podman; see image/build.sh for BASE, CA_BUNDLE,
# PIP_INDEX_URL and IMAGE. Without BASE the base is made from the Debian mirror (debootstrap).
image:
	image/build.sh

# Re-pin image/constraints.txt to the versions installed in .venv (the ones tested).
lock: venv
	$(BIN)/python image/lock.py

keystone: $(KEYSTONE_STAMP)

# The site's Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok),
# built with the local Go into $BERTH_KUBE_CACHE (default ~/.cache/berth/kube)/<key>/bin, reused warm.
kube:
	sitesim/kube/build.sh

# OpenStack Ironic (Drydock's second provisioner) in its own venv, in $BERTH_IRONIC_CACHE
# (default ~/.cache/berth/ironic)/<version>/venv, reused warm.
ironic:
	sitesim/ironic/install.sh

$(KEYSTONE_STAMP):
	test -x .venv-keystone/bin/python || $(PYTHON) -m venv .venv-keystone
	.venv-keystone/bin/pip install -q keystone gunicorn
	touch $(KEYSTONE_STAMP)

# The services, the simulated site and the benchmarks (extra `sim`), the test tools, the docs
# site's generator (extra `docs`) and the BMC check's validator (extra `bmc`); the services'
# libraries at the versions image/constraints.txt
# pins (the image's, the tested ones).
$(STAMP): setup.cfg setup.py pyproject.toml image/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -c image/constraints.txt -e '.[sim,test,docs,bmc,ironic]'
	touch $(STAMP)

# Debian packages the simulated site and the tests need (etcd, PostgreSQL, IPMI tools).
debs:
	@missing=""; \
	for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing Debian packages (run as root to install):$$missing"; fi; \
	fi

clean:
	rm -rf $(VENV) .venv-keystone .berth build *.egg-info
