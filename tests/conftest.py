"""Every test runs Node from the pinned toolchain (ops/pipeline/toolchain.py), also when pytest is started
without make, and synthesises as app.py does, without aws-cdk-lib's built-in CloudFormation validation
(cfn-lint is the template validator; see app.py): both set before any test module imports aws_cdk."""

import os
from collections.abc import Iterator

import pytest

from ops.pipeline.toolchain import use_pinned_node
from tests import shared_synthesis
from tests.shared_botocore import shared_botocore

use_pinned_node()
# What app.py's `cdk.App(builtin_cloud_formation_validation=False)` does, for every App a test builds
# (aws-cdk-lib: "Set CDK_VALIDATION=false in your environment"); read by jsii's Node process at its start.
os.environ["CDK_VALIDATION"] = "false"


@pytest.fixture(scope="session", autouse=True)
def _synthesis_shared_between_workers(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Synthesised environments go to this run's directory, which every xdist worker sees (tests/shared_synthesis.py)."""
    shared_synthesis.share_between_workers(tmp_path_factory)


@pytest.fixture(scope="session", autouse=True)
def _botocore_parts_built_once() -> Iterator[None]:
    """The CLI opens a session per command and a client per service: botocore's loader, client classes,
    built-in handlers and event-name aliases are built once per process (tests/shared_botocore.py)."""
    with shared_botocore():
        yield
