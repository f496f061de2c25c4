"""One SageMaker model per production variant, sharing a least-privilege execution role.

Each variant has its own model so the canary can run a different image (or model data) than
the primary. Network isolation is on: weights come from S3 as uncompressed model data mounted at
/opt/ml/model, never from the internet.
"""

from __future__ import annotations

from aws_cdk import Aws, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sagemaker as sagemaker

from config.container_env import container_environment
from config.schema import EnvironmentConfig, Variant
from constructs import Construct
from constructs.image_repository import ImageRepository
from constructs.nag import INLINE_POLICY_REASON, acknowledge, arn_in_finding

SAGEMAKER_METRIC_NAMESPACES = ["/aws/sagemaker/*", "AWS/SageMaker"]
RETENTION = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
}


def split_s3_uri(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix


class ServingModels(Construct):
    """The execution role, the endpoint's log group, and a `CfnModel` per variant."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cfg: EnvironmentConfig,
        image: ImageRepository,
        encryption_key: kms.IKey,
    ) -> None:
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "ExecutionRole",
            description=f"SageMaker execution role for {cfg.endpoint_name}",
            assumed_by=iam.ServicePrincipal(
                "sagemaker.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
        )
        # SageMaker writes container stdout (including the EMF metric lines) to this group. Its name is
        # fixed (SageMaker picks it), so it must not outlive a failed first create: a kept group makes
        # every retry fail with "already exists". Kept on update and delete, removed on a failed create.
        # The models depend on it (through the role's policy), so it is deleted after the endpoint.
        self.log_group = logs.LogGroup(
            self,
            "EndpointLogs",
            log_group_name=f"/aws/sagemaker/Endpoints/{cfg.endpoint_name}",
            retention=RETENTION[cfg.container.log_retention_days],
            encryption_key=encryption_key,
            removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
        )
        self.log_group.grant_write(self.role)
        self.log_group.grant(self.role, "logs:DescribeLogStreams")
        image.grant_pull(self.role)
        acknowledge(
            self.role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken has no resource type; cloudwatch:PutMetricData has none either and is "
            "limited to SageMaker's namespaces by condition",
        )
        acknowledge(self.role, "NIST.800.53.R5::NIST.800.53.R5-IAMNoInlinePolicy", INLINE_POLICY_REASON)
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="SageMakerInstanceMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],  # PutMetricData has no resource type; the namespace condition scopes it
                conditions={"StringLike": {"cloudwatch:namespace": SAGEMAKER_METRIC_NAMESPACES}},
            )
        )
        for uri in sorted({v.model_data_s3_uri for v in cfg.variants}):
            self._grant_model_data(uri)
        if cfg.model_data_kms_key_arn:
            self._grant_model_data_key(cfg.model_data_kms_key_arn)

        self.models = {v.name: self._model(cfg, v, image) for v in cfg.variants}

    def _grant_model_data(self, uri: str) -> None:
        """Read-only on the model data prefix: GetObject under it, ListBucket limited to it."""
        bucket, prefix = split_s3_uri(uri)
        bucket_arn = f"arn:{Stack.of(self).partition}:s3:::{bucket}"
        self.role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[f"{bucket_arn}/{prefix}*"]))
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )
        acknowledge(
            self.role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{arn_in_finding(self, 's3', f'{bucket}/{prefix}*')}]",
            "SageMaker downloads every object under the model data prefix (base weights and adapters)",
        )

    def _grant_model_data_key(self, key_arn: str) -> None:
        """Decrypt with the model-data buckets' customer-managed key, and only when S3 asks KMS on the role's
        behalf (`kms:ViaService`: AWS KMS Developer Guide, "kms:ViaService"; S3 calls KMS Decrypt for a GET of
        an SSE-KMS object with the caller's credentials: Amazon S3 User Guide, "Using SSE-KMS")."""
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ModelDataKeyThroughS3",
                actions=["kms:Decrypt"],
                resources=[key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"s3.{Stack.of(self).region}.amazonaws.com"}},
            )
        )

    def _model(self, cfg: EnvironmentConfig, variant: Variant, image: ImageRepository) -> sagemaker.CfnModel:
        built = variant.model_copy(update={"image_tag": image.resolve_tag(variant.image_tag)})  # `source` → src-…
        model = sagemaker.CfnModel(
            self,
            f"Model-{variant.name}",
            execution_role_arn=self.role.role_arn,
            enable_network_isolation=True,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image.image_uri(built.image_tag),
                environment=container_environment(cfg, built),
                model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
                    s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                        s3_uri=variant.model_data_s3_uri, s3_data_type="S3Prefix", compression_type="None"
                    )
                ),
            ),
        )
        # CreateModel checks the role can pull the image: attach the policy first.
        model.node.add_dependency(self.role.node.find_child("DefaultPolicy"))
        return model

    def grant_describe_alarms(self, alarm_arns: list[str]) -> None:
        """Blue/green auto-rollback reads the rollback alarms with this role."""
        self.role.add_to_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"], resources=alarm_arns))
