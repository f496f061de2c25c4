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
# Issue 51: the policies and roles people (and the pipeline) wear are the administrator-deployed access stack's
# (stacks/ci_access_stack.py), never the image or serving stack's: the execution policy may create, change,
# attach or detach none of them, so whoever deploys cannot change what a person may do.
GITHUB_DEPLOY = "GitHubDeploy"  # the pipeline's role (constructs/github_deploy_role.py) …
GITHUB_DEPLOY_BOUNDARY = "GitHubDeployBoundary"  # … and its permissions boundary
PEOPLE_POLICIES = (OPERATOR, DEPLOYER, CAPTURE_READER, GITHUB_DEPLOY_BOUNDARY)
PEOPLE_ROLES = (CAPTURE_READER, GITHUB_DEPLOY)  # `MangaAssist-<env>-CaptureReader`, `…-GitHubDeploy`

# Issue 51: every resource of the image and serving stacks carries this tag (stacks/environment.py), and the
# stack-role boundary lets a role use a KMS key, start a CodeBuild project or a state machine, or push to an
# ECR repository only when the resource has it (aws:ResourceTag, listed for each of those actions' resource
# types in the Service Authorization Reference): CloudFormation generates those resources' names and IDs.
# Not the config's `Project` tag: its value is each environment's, the boundary is one per account.
PROJECT_TAG_KEY = f"{PROJECT}Project"
PROJECT_TAG_VALUE = PROJECT


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
