"""The GitHub workflows (.github/): valid for GitHub (check-jsonschema's vendored workflow and action schemas,
no download), running only commands the README documents, holding no AWS key, and deploying in the order
and with the permissions docs/deploying.md "CI pipelines" describes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from config import load_environment
from constructs.github_deploy_role import MAX_SESSION
from stacks.ci_access_stack import ci_access_stack_name
from tests.test_docs_commands import problem, shell_commands, simple_commands

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONS = sorted((ROOT / ".github" / "actions").glob("*/action.yml"))
LINTER = Path(sys.executable).parent / "check-jsonschema"
MAKEFILE = (ROOT / "Makefile").read_text()
# What a step may run besides the README's commands: the shell's own plumbing, each for one reason.
SHELL_UTILITIES = {
    "echo": "writes the log, the step's outputs ($GITHUB_OUTPUT) and workflow commands (::warning::)",
    "cat": "copies the comment into the job summary ($GITHUB_STEP_SUMMARY)",
    "touch": "marks a restored cache as up to date for make (.github/actions/toolchain)",
    "[": "a condition",
    "exit": "ends the gate step with a failure",
    "git": "reads the checkout's own state (has the deployed record changed?)",
}
SHELL_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
PINNED = re.compile(r"^\s*(?:- )?uses: (?P<action>[\w.-]+/[\w.-]+)@(?P<ref>\S+)(?P<comment>\s+# v\d+(\.\d+)*)?\s*$")


def load(path: Path) -> dict:
    return YAML(typ="safe", pure=True).load(path.read_text())  # YAML 1.2: `on` stays a string


def steps(path: Path) -> list[dict]:
    document = load(path)
    if "runs" in document:
        return document["runs"]["steps"]
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


def script_commands(script: str) -> list[list[str]]:
    """The simple commands of a `run:` script, shell keywords, `for` headers and assignments left out."""
    lines, pending = [], ""
    for raw in script.splitlines():
        line = f"{pending} {raw.strip()}".strip() if pending else raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        if line and not line.startswith("#"):
            lines.append(line)
    commands = []
    for words in (w for line in lines for w in simple_commands(line)):
        while words and (words[0] in SHELL_KEYWORDS or ASSIGNMENT.match(words[0])):
            words = words[1:]
        if words and words[0] != "for":
            commands.append(words)
    return commands


def signature(words: list[str]) -> tuple[str, ...]:
    """What a command is, as the README would show it: the make target, the bin/ops command, the module."""
    program, args = words[0], [a for a in words[1:] if "=" not in a and not a.startswith("$")]
    if program == "make":
        return (program, *[a for a in args if not a.startswith("-")][:1])
    if program == "bin/ops":
        return (program, *args[:1])
    if program == ".venv/bin/python" and args[:1] == ["-m"]:
        return (program, "-m", *args[1:2])
    return (program,)


def readme_commands() -> set[tuple[str, ...]]:
    return {signature(w) for _, line in shell_commands((ROOT / "README.md").read_text()) for w in simple_commands(line)}


def undocumented(path: Path) -> list[str]:
    documented = readme_commands()
    found = []
    for step in steps(path):
        for words in script_commands(step.get("run", "")):
            if words[0] in SHELL_UTILITIES:
                continue
            if signature(words) not in documented:
                found.append(f"{path.name}: `{' '.join(words)}` is not a command the README shows")
            elif reason := problem(words):
                found.append(f"{path.name}: `{' '.join(words)}`: {reason}")
    return found


def lint(*files: Path, schema: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINTER), "--builtin-schema", schema, *map(str, files)], capture_output=True, text=True, timeout=120
    )


def test_there_are_the_two_workflows_and_the_toolchain_action() -> None:
    assert [p.name for p in WORKFLOWS] == ["deploy.yml", "pull-request.yml"]
    assert [p.parent.name for p in ACTIONS] == ["toolchain"]


@pytest.mark.parametrize(
    ("files", "schema"),
    [
        (WORKFLOWS, "vendor.github-workflows"),
        (WORKFLOWS, "custom.github-workflows-require-timeout"),
        (ACTIONS, "vendor.github-actions"),
    ],
    ids=["workflows", "job-timeouts", "actions"],
)
def test_the_linter_passes_every_workflow_and_action(files: list[Path], schema: str) -> None:
    result = lint(*files, schema=schema)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_fails_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text((ROOT / ".github/workflows/pull-request.yml").read_text().replace("runs-on:", "run-on:", 1))

    result = lint(broken, schema="vendor.github-workflows")

    assert result.returncode == 1 and "broken.yml" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOWS + ACTIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_a_workflow_runs_is_one_the_readme_documents(path: Path) -> None:
    assert undocumented(path) == []


def test_the_command_check_refuses_what_the_readme_does_not_show(tmp_path: Path) -> None:
    workflow = tmp_path / "w.yml"
    script = [
        "make lint",
        "npx cdk deploy --all",
        "aws s3 cp review-out/review.md s3://somewhere/",
        'for E in $X; do bin/ops restore-scaling "$E" snapshot.json; done',
        "CODE=0; .venv/bin/python -m tools.no_such_tool || CODE=$?",
        'if [ -n "$(curl -s https://example.com)" ]; then exit 1; fi',
    ]
    run = "".join(f"          {line}\n" for line in script)
    workflow.write_text(f"jobs:\n  j:\n    steps:\n      - run: |\n{run}      - run: make synth && bin/plan prod\n")

    found = undocumented(workflow)

    assert [line.split("`")[1].split()[0] for line in found] == [
        "make", "npx", "aws", "bin/ops", ".venv/bin/python", "curl",
    ]  # fmt: skip


def test_every_action_is_pinned_to_a_full_commit_sha_with_its_version() -> None:
    uses = [line for path in WORKFLOWS + ACTIONS for line in path.read_text().splitlines() if "uses:" in line]
    remote = [line for line in uses if "./" not in line]
    assert remote and all(PINNED.match(line) for line in remote), remote
    assert all(re.fullmatch(r"[0-9a-f]{40}", PINNED.match(line)["ref"]) and PINNED.match(line)["comment"]
               for line in remote), remote  # fmt: skip


def test_no_aws_key_anywhere_and_no_credentials_in_the_pull_request_workflow() -> None:
    texts = {path.name: path.read_text() for path in WORKFLOWS + ACTIONS}
    assert not [name for name, text in texts.items() if "secrets." in text or "aws-access-key-id" in text]
    pull_request = texts["pull-request.yml"]
    assert "id-token" not in pull_request and "configure-aws-credentials" not in pull_request
    assert [list(load(path)["on"]) for path in WORKFLOWS] == [["push", "workflow_dispatch"], ["pull_request"]]


def test_no_expression_is_expanded_inside_a_script() -> None:
    """`${{ }}` in `run:` or a github-script `script:` is pasted into the code before it runs (script
    injection); the workflows pass such values through `env:`."""
    scripts = [s.get("run", "") + s.get("with", {}).get("script", "") for p in WORKFLOWS + ACTIONS for s in steps(p)]
    assert scripts and not [s for s in scripts if "${{" in s]


def deploy_jobs() -> dict[str, dict]:
    return load(ROOT / ".github/workflows/deploy.yml")["jobs"]


def test_the_deploy_workflow_deploys_staging_then_prod_behind_its_environment_one_at_a_time() -> None:
    workflow = load(ROOT / ".github/workflows/deploy.yml")
    jobs = workflow["jobs"]
    assert list(jobs) == ["staging", "prod"] and jobs["prod"]["needs"] == "staging"
    assert workflow["concurrency"] == {"group": "deploy", "cancel-in-progress": False}
    assert workflow["permissions"] == {"contents": "read"}
    for env, job in jobs.items():
        runs = [s["run"] for s in job["steps"] if "run" in s]
        assert job["environment"] == env
        assert job["permissions"] == {"id-token": "write", "contents": "read"}
        assert [r for r in runs if not r.startswith("if ")] == [
            f".venv/bin/python -m ops.pipeline.assumed_capacity {env}",
            f"bin/ops preflight {env}", f"make deploy ENV={env} APPROVAL=never", f"bin/ops verify {env}",
            f"bin/ops smoke {env}"
        ]  # fmt: skip
        names = [s.get("name") or s.get("uses", "") for s in job["steps"]]
        # the capacity gate refuses before the first AWS call: the role's credentials come after it
        assert names.index("No production deploy on an assumed capacity") < next(
            i for i, n in enumerate(names) if "configure-aws-credentials" in n
        )
        for step in job["steps"]:
            if "ops.pipeline.assumed_capacity" in step.get("run", "") or step.get("run", "").startswith("make deploy"):
                assert step["env"] == {"ACCEPT_ASSUMED_CAPACITY": "${{ vars.ACCEPT_ASSUMED_CAPACITY }}"}


def test_each_deploy_job_assumes_its_environments_role_within_the_roles_session_limit() -> None:
    for env, job in deploy_jobs().items():
        (credentials,) = [s["with"] for s in job["steps"] if "configure-aws-credentials" in s.get("uses", "")]
        assert credentials["role-to-assume"] == "${{ vars.AWS_DEPLOY_ROLE_ARN }}"
        assert credentials["aws-region"] == "${{ vars.AWS_REGION }}"
        assert credentials["role-duration-seconds"] <= MAX_SESSION.to_seconds()
        ci = load_environment(env).ci
        assert ci is not None and ci.github_environment == job["environment"]  # the role's subject names it


def test_make_deploy_names_its_two_stacks_and_asks_for_approval_as_told() -> None:
    recipe = re.search(r"^deploy: deps\n((?:\t.*\n)+)", MAKEFILE, re.MULTILINE).group(1)
    ci_access = re.search(r"^deploy-ci-access: deps\n((?:\t.*\n)+)", MAKEFILE, re.MULTILINE).group(1)
    assert re.search(r"^APPROVAL \?= broadening$", MAKEFILE, re.MULTILINE)
    assert "--require-approval $(APPROVAL)" in recipe and "--all" not in recipe
    assert "MangaAssist-$(ENV)-Image MangaAssist-$(ENV)-Serving" in recipe
    assert "--exclusively" in ci_access and ci_access_stack_name("$(ENV)") in ci_access
    help_text = subprocess.run(
        [str(ROOT / "node_modules/.bin/cdk"), "deploy", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--exclusively" in help_text and re.search(r'--require-approval[\s\S]*"never"', help_text)


def test_the_cache_stamps_the_toolchain_action_touches_are_the_makefiles() -> None:
    touched = [w[1] for s in steps(ACTIONS[0]) for w in script_commands(s.get("run", "")) if w[0] == "touch"]
    stamps = re.findall(r"^(\S+/\.installed):", MAKEFILE.replace("$(VENV)", ".venv"), re.MULTILINE)
    assert touched == [".venv/.installed", "node_modules/.installed"] and set(touched) <= set(stamps)
