"""Accessibility checks of a page in a real browser: labels, contrast (WCAG ratio of each
text's computed colour on its effective background), landmarks and headings, alternative
text, and keyboard (every control reached by Tab, with a visible focus style).

Each check returns the problems it found as sentences (an empty list: the page passes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

MIN_CONTRAST = 4.5

_STATIC_CHECKS = (Path(__file__).with_name("a11y_checks.js")).read_text()

_MARK_INTERACTIVE = r"""
const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, ' +
  '[tabindex]:not([tabindex="-1"])';
const out = [];
document.querySelectorAll(sel).forEach((el, i) => {
  if (el.disabled || !el.getClientRects().length) return;
  el.dataset.a11yId = String(i);
  out.push(String(i));
});
document.activeElement && document.activeElement.blur();
window.scrollTo(0, 0);
return out;
"""

_FOCUSED = r"""
const el = document.activeElement;
if (!el || el === document.body) return null;
const s = getComputedStyle(el);
const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
const shadow = s.boxShadow && s.boxShadow !== 'none';
return [el.dataset.a11yId || '', outline || shadow,
        el.tagName.toLowerCase() + ' "' +
        (el.textContent || el.name || '').trim().slice(0, 40) + '"'];
"""


def static_problems(driver: Any) -> list[str]:
    """Labels, contrast, landmarks and headings, alternative text."""
    return list(driver.execute_script(_STATIC_CHECKS, MIN_CONTRAST))


def keyboard_problems(driver: Any) -> list[str]:
    """Tab through the page: every visible control must get the focus, each with a visible
    focus indicator (an outline or a shadow)."""
    wanted = list(driver.execute_script(_MARK_INTERACTIVE))
    reached: set[str] = set()
    problems = []
    for _ in range(len(wanted) + 10):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        got = driver.execute_script(_FOCUSED)
        if got is None:
            continue
        ident, shown, what = got
        if ident in reached:
            break  # wrapped around
        reached.add(ident)
        if not shown:
            problems.append(f"keyboard: no visible focus style on {what}")
    missing = [i for i in wanted if i not in reached]
    if missing:
        names = driver.execute_script(
            "return arguments[0].map(i => { const e = document.querySelector("
            "'[data-a11y-id=\"' + i + '\"]'); return e.tagName + ' ' + "
            "(e.textContent || e.name || '').trim().slice(0, 30); });", missing)
        problems.append(f"keyboard: not reached by Tab: {names}")
    if not wanted:
        problems.append("keyboard: no interactive element")
    return problems


def problems(driver: Any) -> list[str]:
    return static_problems(driver) + keyboard_problems(driver)
