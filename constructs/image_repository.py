"""The serving image's ECR repository and the CodeBuild project that builds container/ into it.

`cdk synth` never needs Docker: container/ is zipped as a plain S3 asset, and the image is built
by CodeBuild during the deploy (constructs/image_build.py) or when someone starts the project. Tags
are immutable, and the default tag is `src-` + the content hash of container/, so one source tree
maps to one image; a variant names it as `image_tag: source`.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, IgnoreMode, RemovalPolicy, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets

from config import naming
from constructs import Construct
from constructs.nag import INLINE_POLICY_REASON, acknowledge, arn_in_finding

BUILDSPEC = {
    "version": "0.2",
    "env": {"shell": "bash"},
    "phases": {
        "pre_build": {
            "commands": [
                'REGISTRY="${REPOSITORY_URI%%/*}"',
                'aws ecr get-login-password | docker login --username AWS --password-stdin "$REGISTRY"',
                # Tags are immutable: an existing tag means this source is already built.
                'if aws ecr describe-images --repository-name "$REPOSITORY_NAME" --image-ids imageTag="$IMAGE_TAG"'
                ' >/dev/null 2>&1; then echo "$IMAGE_TAG already built"; SKIP=1; fi',
            ]
        },
        "build": {
            # Target `serving`: no weights in the image; SageMaker mounts the S3 model data.
            "commands": [
                '[ -n "${SKIP:-}" ] || docker build --pull --target serving --tag "$REPOSITORY_URI:$IMAGE_TAG" .'
            ],
        },
        "post_build": {
            "commands": [
                '[ -n "${SKIP:-}" ] || docker push "$REPOSITORY_URI:$IMAGE_TAG"',
                'echo "image: $REPOSITORY_URI:$IMAGE_TAG"',
            ]
        },
    },
}


# Below the deploy-time build's deadline (constructs/image_build.py), so CodeBuild ends a stuck build itself.
BUILD_TIMEOUT = Duration.minutes(45)
RELEASE_IMAGES_KEPT = 9999  # "never": the count the CDK's own ECR example uses for images to keep


def _lifecycle_rules(keep_images: int) -> list[ecr.LifecycleRule]:
    """Count-based expiry only for source builds (`src-…`); release tags never expire.

    ECR: "An image that matches the tagging requirements of a rule cannot be expired by a rule with a
    lower priority" (docs.aws.amazon.com/AmazonECR/latest/userguide/LifecyclePolicies.html). A release
    is a build's image given a release tag too, so rule 2 selects release-tagged images first and, with
    a count no repository reaches, keeps them out of rule 3's reach. Tags matching neither rule never
    expire; untagged manifests (interrupted pushes) go after a week.
    """
    return [
        ecr.LifecycleRule(
            description="Drop untagged manifests from interrupted builds",
            tag_status=ecr.TagStatus.UNTAGGED,
            max_image_age=Duration.days(7),
            rule_priority=1,
        ),
        ecr.LifecycleRule(
            description=f"Release tags ({naming.RELEASE_TAG_PATTERN}) never expire: shields them from the build rule",
            tag_status=ecr.TagStatus.TAGGED,
            tag_pattern_list=[naming.RELEASE_TAG_PATTERN],
            max_image_count=RELEASE_IMAGES_KEPT,
            rule_priority=2,
        ),
        ecr.LifecycleRule(
            description=f"Keep the newest {keep_images} source builds ({naming.SOURCE_TAG_PREFIX}<hash>)",
            tag_status=ecr.TagStatus.TAGGED,
            tag_prefix_list=[naming.SOURCE_TAG_PREFIX],
            max_image_count=keep_images,
            rule_priority=3,
        ),
    ]


def _dockerignore(source_dir: Path) -> list[str]:
    path = source_dir / ".dockerignore"
    if not path.exists():
        return []
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


class ImageRepository(Construct):
    """ECR repository (scan on push, immutable tags, lifecycle) plus its build project."""

    def __init__(
        self, scope: Construct, id: str, *, source_dir: Path, keep_images: int, encryption_key: kms.IKey
    ) -> None:
        super().__init__(scope, id)
        self.repository = self._repository(keep_images)
        source = self._source(source_dir)
        self.default_tag = f"{naming.SOURCE_TAG_PREFIX}{source.asset_hash[:12]}"
        self.build_project = self._build_project(source, encryption_key)
        self.repository.grant_pull_push(self.build_project)
        self._acknowledge_build_findings()
        # describe-images for the "already built" check, on this repository only.
        self.build_project.add_to_role_policy(
            iam.PolicyStatement(actions=["ecr:DescribeImages"], resources=[self.repository.repository_arn])
        )

    def _repository(self, keep_images: int) -> ecr.Repository:
        return ecr.Repository(
            self,
            "Repository",
            image_scan_on_push=True,
            image_tag_mutability=ecr.TagMutability.IMMUTABLE,
            encryption=ecr.RepositoryEncryption.KMS,
            # Images referenced by a deployed endpoint must outlive a stack deletion.
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=_lifecycle_rules(keep_images),
        )

    def _source(self, source_dir: Path) -> s3_assets.Asset:
        """The asset is exactly the Docker build context, so its hash (and the default tag) changes only
        when something the image copies changes, never for caches or local model files."""
        return s3_assets.Asset(
            self,
            "Source",
            path=str(source_dir),
            ignore_mode=IgnoreMode.DOCKER,
            # `serving` target: local weights (model/) are not part of the image, so not of the source.
            exclude=[*_dockerignore(source_dir), "model"],
        )

    def _build_project(self, source: s3_assets.Asset, encryption_key: kms.IKey) -> codebuild.Project:
        """CodeBuild building `source` into the repository as `default_tag`, logging to its own log group."""
        build_logs = logs.LogGroup(
            self,
            "BuildLogs",
            retention=logs.RetentionDays.THREE_MONTHS,
            encryption_key=encryption_key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        return codebuild.Project(
            self,
            "Build",
            description="Builds container/ into the serving image repository",
            source=codebuild.Source.s3(bucket=source.bucket, path=source.s3_object_key),
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxBuildImage.STANDARD_7_0,
                compute_type=codebuild.ComputeType.LARGE,
                privileged=True,  # docker build needs the Docker daemon
            ),
            environment_variables={
                "REPOSITORY_URI": codebuild.BuildEnvironmentVariable(value=self.repository.repository_uri),
                "REPOSITORY_NAME": codebuild.BuildEnvironmentVariable(value=self.repository.repository_name),
                "IMAGE_TAG": codebuild.BuildEnvironmentVariable(value=self.default_tag),
            },
            build_spec=codebuild.BuildSpec.from_object(BUILDSPEC),
            encryption_key=encryption_key,
            timeout=BUILD_TIMEOUT,
            logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=build_logs)),
        )

    def _acknowledge_build_findings(self) -> None:
        """cdk-nag findings on the build role that CDK's own grants and defaults cause, each with its reason."""
        role = self.build_project.role
        project_id = Stack.of(self).resolve(Stack.of(self).get_logical_id(self.build_project.node.default_child))
        for finding, reason in (
            ("Resource::*", "ecr:GetAuthorizationToken has no resource type"),
            ("Action::s3:GetObject*", "CodeBuild reads the container/ source asset (CDK's S3 source grant)"),
            ("Action::s3:GetBucket*", "CodeBuild reads the container/ source asset (CDK's S3 source grant)"),
            ("Action::s3:List*", "CodeBuild reads the container/ source asset (CDK's S3 source grant)"),
            ("Action::kms:GenerateDataKey*", "encrypts build logs and artifacts with this stack's build key only"),
            ("Action::kms:ReEncrypt*", "encrypts build logs and artifacts with this stack's build key only"),
            (
                f"Resource::{arn_in_finding(self, 'logs', f'log-group:/aws/codebuild/<{project_id}>:*')}",
                "CodeBuild's own log group for this project (CDK default); streams are named per build",
            ),
            (
                f"Resource::{arn_in_finding(self, 'codebuild', f'report-group/<{project_id}>-*')}",
                "test report groups named after this project (CDK default)",
            ),
        ):
            acknowledge(role, f"AwsSolutions::AwsSolutions-IAM5[{finding}]", reason)
        acknowledge(role, "NIST.800.53.R5::NIST.800.53.R5-IAMNoInlinePolicy", INLINE_POLICY_REASON)
        # aws-cdk-lib's built-in validation (off in app.py, on in a bare cdk.App) reads the project's ServiceRole as
        # a Ref and says a role under a path needs its ARN; the template written has Fn::GetAtt Arn (CDK's Project:
        # `serviceRole: this.role.roleArn`), which cfn-lint's E3050 passes in `make synth`.
        acknowledge(
            self.build_project,
            "CloudFormation-Validate::E3050",
            "ServiceRole is the role's ARN (Fn::GetAtt Arn) in the synthesised template, path included",
        )

    def resolve_tag(self, tag: str) -> str:
        """`source` → this source tree's build tag; any other tag or digest as it is."""
        return self.default_tag if tag == naming.SOURCE_IMAGE_TAG else tag

    def image_uri(self, tag: str) -> str:
        """An image reference by immutable tag (`source` resolved), or by digest when `tag` is `sha256:...`."""
        tag = self.resolve_tag(tag)
        separator = "@" if tag.startswith("sha256:") else ":"
        return f"{self.repository.repository_uri}{separator}{tag}"

    def grant_pull(self, grantee: iam.IGrantable) -> None:
        self.repository.grant_pull(grantee)
