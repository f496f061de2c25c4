"""`python -m ops.pipeline.execution_policy ENV`: `make bootstrap`'s first step, the guard policies.

Creates or updates `MangaAssistGuard-StackRoleBoundary` (constructs/stack_role_boundary.py; issue 38) and the
`MangaAssistGuard-CloudFormationExecution-<n>` policies (constructs/execution_policy.py), and prints the latter's
ARNs comma-separated for `cdk bootstrap --cloudformation-execution-policies`. A changed document becomes the new
default version, the oldest deleted first at IAM's five versions per managed policy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from urllib.parse import unquote

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from config.access import STACK_ROLE_BOUNDARY
from constructs.execution_policy import execution_documents, policy_names
from constructs.stack_role_boundary import boundary_document
from ops.pipeline.environment_arg import USAGE, environment_or_say_why

MAX_VERSIONS = 5  # IAM: a managed policy keeps at most five versions
AWS_ERROR, WRONG_ACCOUNT = 1, 5  # docs/reference/commands.md's exit codes for the same failures (USAGE: 2)


DESCRIPTIONS = {
    STACK_ROLE_BOUNDARY: "Permissions boundary of every role the MangaAssist stacks create: the project's resources only, no IAM or KMS administration",
}
EXECUTION_DESCRIPTION = "CloudFormation execution role of CDK's bootstrap stack: the MangaAssist stacks' resource types"


def ensure_policy(iam, arn: str, name: str, document: dict) -> str:
    """Create the policy, or make `document` its default version if it differs; returns what was done."""
    text = json.dumps(document, separators=(",", ":"))
    try:
        policy = iam.get_policy(PolicyArn=arn)["Policy"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "NoSuchEntity":
            raise
        iam.create_policy(
            PolicyName=name,
            PolicyDocument=text,
            Description=DESCRIPTIONS.get(name, EXECUTION_DESCRIPTION),
        )
        return "created"
    current = iam.get_policy_version(PolicyArn=arn, VersionId=policy["DefaultVersionId"])["PolicyVersion"]
    stored = current["Document"]
    if (json.loads(unquote(stored)) if isinstance(stored, str) else stored) == document:
        return "unchanged"
    versions = iam.list_policy_versions(PolicyArn=arn)["Versions"]
    if len(versions) >= MAX_VERSIONS:
        oldest = min((v for v in versions if not v["IsDefaultVersion"]), key=lambda v: v["CreateDate"])
        iam.delete_policy_version(PolicyArn=arn, VersionId=oldest["VersionId"])
    iam.create_policy_version(PolicyArn=arn, PolicyDocument=text, SetAsDefault=True)
    return "updated"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.pipeline.execution_policy", description=__doc__.splitlines()[0]
    )
    parser.add_argument("env")
    parser.add_argument(
        "--boundary-only",
        action="store_true",
        help="only the stack-role boundary (make bootstrap EXECUTION_POLICIES=…: the account brings its own)",
    )
    args = parser.parse_args(argv)
    cfg = environment_or_say_why(args.env)
    if cfg is None:
        return USAGE
    session = boto3.Session(region_name=cfg.region or os.environ.get("AWS_REGION") or None)
    try:
        caller = session.client("sts").get_caller_identity()
        if cfg.account and caller["Account"] != cfg.account:
            print(
                f"error: the credentials are account {caller['Account']}'s; {cfg.name} deploys to {cfg.account}",
                file=sys.stderr,
            )
            return WRONG_ACCOUNT
        partition = caller["Arn"].split(":")[1]
        iam = session.client("iam")
        arns = []
        for name, document in guard_policies(partition, caller["Account"])[: 1 if args.boundary_only else None]:
            arn = f"arn:{partition}:iam::{caller['Account']}:policy/{name}"
            print(f"{name}: {ensure_policy(iam, arn, name, document)}", file=sys.stderr)
            arns.append(arn)
    except (ClientError, BotoCoreError) as error:
        print(f"error: {error}", file=sys.stderr)
        return AWS_ERROR
    print(",".join(arns[1:]))  # the execution policies; the boundary is named by the stacks themselves
    return 0


def guard_policies(partition: str, account: str) -> list[tuple[str, dict]]:
    """(name, document): the boundary first (the execution policy names it), then the execution policies."""
    documents = execution_documents(partition, account)
    boundary = boundary_document(partition, account)  # the project's resources in this account (issue 51)
    return [(STACK_ROLE_BOUNDARY, boundary), *zip(policy_names(len(documents)), documents, strict=True)]


if __name__ == "__main__":
    sys.exit(main())
