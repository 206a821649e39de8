"""berth up tags the committed design site-action-success only for a site that starts deployed."""

import pytest

from berth_launcher import up


class Reply:
    def __init__(self, code, body=None):
        self.status_code, self._body, self.text = code, body, ""

    def json(self):
        return self._body


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def post(url, **kwargs):
        seen.append(url)
        return Reply(201 if "/configdocs/" in url or "/tags/" in url else 200)

    monkeypatch.setattr(up.requests, "post", post)
    monkeypatch.setattr(up.requests, "get",
                        lambda url, **kw: Reply(200, {"results": [{"id": 1}, {"id": 2}]}))
    return seen


def test_deployed_site_design_is_tagged_site_action_success(calls):
    ref = up.commit_design("http://sy", "t", "docs", deployed=True)
    assert ref == "deckhand+http://sy/api/v1.0/revisions/2/rendered-documents"
    assert calls[-1] == "http://sy/api/v1.0/revisions/2/tags/site-action-success"


def test_undeployed_site_design_is_only_committed(calls):
    up.commit_design("http://sy", "t", "docs", deployed=False)
    assert not any("/tags/" in url for url in calls)
