"""JSON log lines that carry the context marker of the request or workflow step."""

from __future__ import annotations

import json
import logging
import sys
import time

from common.context import current_marker


class MarkerFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.marker = current_marker.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "marker": getattr(record, "marker", current_marker.get()),
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def setup_logging(level: str = "INFO", as_json: bool = True) -> None:
    """Configure the root logger once per process."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(MarkerFilter())
    handler.setFormatter(
        JsonFormatter() if as_json
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(marker)s] %(message)s")
    )
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
