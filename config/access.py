"""IAM names the CDK app and the ops CLI share: each environment's policies and the tag that marks the
scalable targets its operators may change.

Two policies per environment, so that whoever may shift a canary's weight may not deploy:
- `MangaAssist-<env>-Operator` (constructs/operator_policy.py): every ops command but the deploy itself.
- `MangaAssist-<env>-Deployer` (constructs/deployer_policy.py): what `make deploy` needs, the CDK
  bootstrap roles; `bin/ops deploy` needs both.
Which command needs which: ops/operations/permissions.py, and docs/operations.md "Permissions".
"""

from __future__ import annotations

from config.naming import PROJECT

OPERATOR = "Operator"
DEPLOYER = "Deployer"
# Issue 28 §2: reading captured payloads (users' prompts and answers) is a policy of its own, break-glass.
CAPTURE_READER = "CaptureReader"

# Application Auto Scaling writes are allowed only on scalable targets carrying this tag with the
# environment's endpoint name (aws:ResourceTag; aws:RequestTag when one is registered anew): the
# scalable-target ARN ends in an ID assigned at registration, so an ARN cannot name them (Service
# Authorization Reference, "Actions, resources, and condition keys for Application Auto Scaling").
SCALING_TAG_KEY = "MangaAssistEndpoint"

# Issue 38: the policies that keep a deploy from widening itself, created by `make bootstrap`
# (ops/pipeline/execution_policy.py) with an administrator's credentials and named under a prefix of their own,
# outside every name the execution policy lets CloudFormation write (`MangaAssist-<env>-…`).
GUARD_PREFIX = f"{PROJECT}Guard"
EXECUTION_POLICY = f"{GUARD_PREFIX}-CloudFormationExecution"  # `-1`, `-2`, …: one per part, per account
STACK_ROLE_BOUNDARY = f"{GUARD_PREFIX}-StackRoleBoundary"  # the permissions boundary of every stack role
# The stacks' own managed policies, the only ones CloudFormation may create, change or attach to a role.
STACK_POLICIES = (OPERATOR, DEPLOYER, CAPTURE_READER)


# Every role the image and serving stacks create lives under this IAM path (constructs/role_path.py): the
# execution policy scopes roles by it, since CloudFormation cuts generated role names (issue 50 §1).
ROLE_PATH_ROOT = f"/{PROJECT.lower()}/"


def role_path(env_name: str) -> str:
    """`/mangaassist/prod/`: the IAM path of the environment's stack roles."""
    return f"{ROLE_PATH_ROOT}{env_name}/"


def policy_name(env_name: str, policy: str) -> str:
    """`MangaAssist-prod-Operator`, `MangaAssist-prod-Deployer`, …: the customer-managed policy's name."""
    return f"{PROJECT}-{env_name}-{policy}"


def scaling_tags(endpoint_name: str) -> dict[str, str]:
    """The tag CDK gives the endpoint's scalable targets and `bin/ops` passes when it registers one again."""
    return {SCALING_TAG_KEY: endpoint_name}
