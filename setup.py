"""Entry points. The simulator's and the launcher's console scripts exist only where their
packages are built in: the image's build context holds the services alone."""

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
SERVICES = {
    "shipyard-api": "shipyard_api.server:main",
    "promenade-api": "promenade_api.server:main",
    "drydock-api": "drydock_api.server:main",
    "drydock-worker": "drydock_api.worker:main",
    "shipyard-worker": "shipyard_api.worker:main",
    "shipyard-db": "shipyard_api.db.cli:main",
    "drydock-db": "drydock_api.db.cli:main",
    "promenade-db": "promenade_api.db.cli:main",
    "shipyard": "shipyard_api.cli.main:main",
    "drydock": "drydock_api.cli.main:main",
}
TOOLS = {
    "berth": "berth_launcher.up:main",
    "sitesim": "sitesim.cli:main",
}
scripts = {**SERVICES, **{name: target for name, target in TOOLS.items()
                          if (HERE / target.split(".", 1)[0]).is_dir()}}

setup(entry_points={
    "console_scripts": [f"{name} = {target}" for name, target in scripts.items()],
    "oslo.config.opts": [f"{svc} = {svc}_api.config:list_opts"
                         for svc in ("shipyard", "promenade", "drydock")],
    "oslo.policy.policies": [f"{svc} = {svc}_api.policy:list_rules"
                             for svc in ("shipyard", "promenade", "drydock")],
})
