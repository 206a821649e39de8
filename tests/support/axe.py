"""axe-core (Deque's accessibility engine, from npm) run on a page in the browser: fetched
with `npm pack` once into a cache outside git, injected with the WebDriver, WCAG 2 A/AA rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

VERSION = "4.10.3"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "berth" / "axe-core"
RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a',
                                                    'wcag21aa', 'best-practice']}})
  .then(r => done(r.violations.map(v => v.id + ' (' + v.impact + '): ' + v.help + ': ' +
    v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' ' + (n.failureSummary || '')
      .replace(/\\s+/g, ' ')).join(' | '))))
  .catch(e => done(['axe failed: ' + e]));
"""


def axe_script() -> Path | None:
    """The cached axe.min.js, fetched with npm when missing; None when npm cannot."""
    target = CACHE / VERSION / "axe.min.js"
    if target.exists():
        return target
    npm = shutil.which("npm")
    if npm is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([npm, "pack", f"axe-core@{VERSION}", "--pack-destination", tmp],
                              capture_output=True, text=True, timeout=300, check=False)
        packed = list(Path(tmp).glob("axe-core-*.tgz"))
        if done.returncode != 0 or not packed:
            return None
        with tarfile.open(packed[0]) as tar:
            member = tar.extractfile("package/axe.min.js")
            if member is None:
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".part")
            partial.write_bytes(member.read())
            partial.replace(target)
    return target


def violations(driver: Any, script: Path) -> list[str]:
    """axe's violations on the page now, one sentence each (empty: none)."""
    driver.execute_script(script.read_text(encoding="utf-8"))
    driver.set_script_timeout(60)
    return list(driver.execute_async_script(RUN))
