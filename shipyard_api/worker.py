"""The `shipyard-worker` console script: engine threads without the API."""

from __future__ import annotations

import argparse
import os
import signal
from types import FrameType

from common.config import existing_file
from common.logging import setup_logging


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="shipyard-worker",
                                     description="Run Shipyard actions from the database.")
    parser.add_argument("--config-file", type=existing_file, default=None)
    parser.add_argument("--threads", type=int, default=None,
                        help="Engine threads (default: [workflow] api_workers, at least 1).")
    args = parser.parse_args(argv)
    if args.config_file:
        os.environ["SHIPYARD_CONFIG_FILE"] = os.path.abspath(args.config_file)
    from shipyard_api import config
    from shipyard_api.runtime import build_runtime

    conf = config.load()
    setup_logging(conf.logging.level, conf.logging.json)
    runtime = build_runtime(conf, args.threads or max(1, conf.workflow.api_workers))

    def on_signal(signum: int, frame: FrameType | None) -> None:
        runtime.workers.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    runtime.workers.run_forever()
