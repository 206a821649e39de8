"""A skip under CI=true fails the run (tests.support.ci_skips); elsewhere it stays a skip."""

import pytest

pytest_plugins = ["pytester"]

SKIPPING = """
import pytest

def test_needs_a_tool():
    pytest.skip("the tool is not installed")

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
"""


@pytest.mark.parametrize(("ci", "failed", "skipped"), [("true", 1, 0), ("", 0, 1)])
def test_a_skip_fails_only_under_ci(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                    ci: str, failed: int, skipped: int) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makepyfile(SKIPPING)
    result = pytester.runpytest_inprocess("-p", "tests.support.ci_skips")
    result.assert_outcomes(failed=failed, skipped=skipped, xfailed=1)
    if failed:
        result.stdout.fnmatch_lines(["*skipped under CI=true*the tool is not installed*"])
