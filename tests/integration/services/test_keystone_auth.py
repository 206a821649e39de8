"""The keystone auth strategy against a real Keystone: valid tokens pass, roles decide."""

import pytest
import requests

from tests.support.services import ServiceProcess


@pytest.fixture(scope="module")
def promenade_with_keystone(keystone, tmp_path_factory):
    keystone.create_user("outsider", "out-secret", "observer")
    keystone.create_user("viewer", "view-secret", "reader")
    work = tmp_path_factory.mktemp("keystone-promenade")
    proc = ServiceProcess("promenade", work, {
        "auth": {"strategy": "keystone"},
        "keystone_authtoken": {
            "www_authenticate_uri": f"{keystone.url}/v3", "auth_url": f"{keystone.url}/v3",
            "auth_type": "password", "username": "admin", "password": "secret",
            "project_name": "admin", "user_domain_id": "default",
            "project_domain_id": "default", "interface": "public"},
    })
    yield proc
    proc.stop()


def test_request_without_token_is_401_status_body(promenade_with_keystone):
    resp = requests.get(f"{promenade_with_keystone.url}/api/v1.0/health/extended", timeout=30)
    assert resp.status_code == 401 and resp.json()["reason"] == "Unauthenticated"


def test_invalid_token_is_401(promenade_with_keystone):
    resp = requests.get(f"{promenade_with_keystone.url}/api/v1.0/health/extended",
                        headers={"X-Auth-Token": "not-a-token"}, timeout=30)
    assert resp.status_code == 401


def test_keystone_roles_decide_the_policy(keystone, promenade_with_keystone):
    url = f"{promenade_with_keystone.url}/api/v1.0/health/extended"
    viewer = keystone.token("viewer", "view-secret")
    outsider = keystone.token("outsider", "out-secret")
    admin = keystone.token("admin", "secret")
    assert requests.get(url, headers={"X-Auth-Token": viewer}, timeout=30).status_code in (
        200, 503)
    assert requests.get(url, headers={"X-Auth-Token": outsider}, timeout=30).status_code == 403
    assert requests.get(url, headers={"X-Auth-Token": admin}, timeout=30).status_code in (
        200, 503)
