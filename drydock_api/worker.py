"""The `drydock-worker` console script: runs task workers against Drydock's database."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from collections.abc import Sequence
from types import FrameType

from common.config import existing_file

LOG = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="drydock-worker",
                                     description="Claim and run Drydock tasks.")
    parser.add_argument("--config-file", type=existing_file, default=None)
    parser.add_argument("--workers", type=int, default=1,
                        help="Worker loops in this process (each runs up to [worker] "
                             "max_tasks tasks).")
    args = parser.parse_args(argv)
    if args.config_file:
        os.environ["DRYDOCK_CONFIG_FILE"] = os.path.abspath(args.config_file)
    from common.logging import setup_logging
    from drydock_api import config
    from drydock_api.runtime import build_runtime

    conf = config.load(args.config_file)
    setup_logging(conf.logging.level, conf.logging.json)
    runtime = build_runtime(conf)
    done = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        LOG.info("Signal %s: stopping after the current steps", signum)
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    workers = runtime.start_workers(max(1, args.workers))
    if conf.reboot.enabled:
        runtime.start_reconciler()
    LOG.info("drydock-worker running: %s", ", ".join(w.owner for w in workers))
    done.wait()
    runtime.stop()


if __name__ == "__main__":
    main()
