"""The serving image's repository and build: deployed before, and outliving, the endpoint.

The stack builds container/ during the deploy and completes only once the image is in ECR; the
serving stack depends on it, so its models are created after the image exists.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import CfnOutput, Stack

from config import naming
from config.schema import EnvironmentConfig
from constructs import Construct
from constructs.encryption_key import service_key
from constructs.image_build import ImageBuild
from constructs.image_repository import ImageRepository

CONTAINER_DIR = Path(__file__).resolve().parent.parent / "container"


class ImageStack(Stack):
    def __init__(self, scope: Construct, id: str, *, cfg: EnvironmentConfig, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)
        key = service_key(self, "BuildKey", description="Serving image build logs and artifacts")
        self.image = ImageRepository(
            self, "Image", source_dir=CONTAINER_DIR, keep_images=cfg.image_build.keep_images, encryption_key=key
        )
        self.build = ImageBuild(
            self,
            "SourceBuild",
            project=self.image.build_project,
            repository=self.image.repository,
            tag=self.image.default_tag,
            encryption_key=key,
        )
        CfnOutput(self, naming.OUTPUT_SOURCE_IMAGE_TAG, value=self.build.resource.get_att_string("ImageTag"))
        CfnOutput(self, naming.OUTPUT_REPOSITORY_URI, value=self.image.repository.repository_uri)
        CfnOutput(self, naming.OUTPUT_REPOSITORY_NAME, value=self.image.repository.repository_name)
        CfnOutput(self, naming.OUTPUT_BUILD_PROJECT, value=self.image.build_project.project_name)
