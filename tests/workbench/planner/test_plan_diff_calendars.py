"""`make plan-diff` judges each side in the peak windows of its own release_calendar, on the same minutes."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workbench.planner import cli

REPO = Path(__file__).resolve().parents[3]
EXTRA = '    - {name: thursday-special, weekdays: [THU], at: "18:00", timezone: Asia/Tokyo, hours: 2}\n'


def test_each_side_is_judged_by_its_own_calendar(tmp_path, monkeypatch):
    text = (REPO / "config" / "environments" / "dev.yaml").read_text()
    anchor = '    - {name: friday-chapters, weekdays: [FRI], at: "18:00", timezone: Asia/Tokyo, hours: 4}\n'
    assert anchor in text
    base = tmp_path / "dev.yaml"
    base.write_text(text.replace(anchor, anchor + EXTRA))
    seen = []
    # Records what each side is planned on and stops after the second: the replay is not under test.
    monkeypatch.setattr(cli, "_plan", lambda cfg, traffic, **kw: seen.append((kw.get("source"), traffic)) or _stop(seen))
    result = CliRunner().invoke(cli.app, ["diff", "dev", "--base", str(base)])
    assert result.exit_code == 0, result.output
    (_, base_traffic), (_, head_traffic) = seen
    assert base_traffic.requests_per_minute == head_traffic.requests_per_minute
    assert any(p.name == "thursday-special" for p in base_traffic.peaks)
    assert not any(p.name == "thursday-special" for p in head_traffic.peaks)


def _stop(seen):
    if len(seen) == 2:
        raise SystemExit(0)
