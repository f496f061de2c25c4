"""`python -m workbench.review` refuses what it cannot review with a message and exit 2, no traceback."""

from __future__ import annotations

from workbench.review.cli import main


def test_an_unknown_base_is_named(capsys, tmp_path) -> None:
    assert main(["no-such-rev", "--out", str(tmp_path / "r.md")]) == 2
    assert capsys.readouterr().err == (
        "error: BASE 'no-such-rev' is not a commit here, nor is origin/no-such-rev "
        "(a shallow clone? `git fetch origin no-such-rev`)\n"
    )
    assert not (tmp_path / "r.md").exists()


def test_an_unknown_environment_is_named(capsys, tmp_path) -> None:
    assert main(["HEAD", "--env", "qa", "--out", str(tmp_path / "r.md")]) == 2
    assert capsys.readouterr().err == "error: unknown environment 'qa'; known: dev, prod, staging\n"
