"""The config's region check reads botocore's endpoint data instead of aws-cdk-lib's fact table
(reaching that table starts Node): the two lists must stay the same, or a botocore or aws-cdk-lib
bump would let a region through that synth fails on inside jsii, or refuse one it accepts."""

from __future__ import annotations

from aws_cdk.region_info import RegionInfo

from config.checks import known_regions


def test_botocores_regions_are_aws_cdk_libs_regions() -> None:
    cdk_regions = {region.name for region in RegionInfo.regions}

    assert set(known_regions()) == cdk_regions
    assert {"ap-northeast-1", "us-east-1", "cn-north-1", "us-gov-west-1"} <= cdk_regions
