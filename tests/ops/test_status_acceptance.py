"""`status` shows that the last deploy went out on an assumed capacity, and why (config/deployed/<env>.json)."""

from __future__ import annotations

import json

from config import deployed

ACCEPTED = {
    "reason": "first deploy; staging measurement booked for Monday",
    "types": ["ml.g5.xlarge", "ml.g6.xlarge"],
    "by": "octo-reviewer",
    "at": "2026-11-27T02:00:00+00:00",
}


def test_status_shows_a_deploy_accepted_on_an_assumed_capacity(prod, cli, tmp_path, monkeypatch):
    monkeypatch.setattr(deployed, "DEPLOYED_DIR", tmp_path)
    (tmp_path / "prod.json").write_text(json.dumps({"variants": {}, "accepted_assumed_capacity": ACCEPTED}))

    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    assert (
        "! deployed on an assumed capacity of ml.g5.xlarge, ml.g6.xlarge, accepted 2026-11-27 02:00 UTC by "
        "octo-reviewer: 'first deploy; staging measurement booked for Monday'"
    ) in " ".join(result.output.split())
    document = json.loads(cli("status", "prod", "--json").output)
    assert document["accepted_assumed_capacity"] == ACCEPTED


def test_status_says_nothing_of_it_when_the_record_has_none(prod, cli, tmp_path, monkeypatch):
    monkeypatch.setattr(deployed, "DEPLOYED_DIR", tmp_path)
    (tmp_path / "prod.json").write_text(json.dumps({"variants": {}}))

    assert "assumed capacity of" not in cli("status", "prod").output
    assert json.loads(cli("status", "prod", "--json").output)["accepted_assumed_capacity"] is None
