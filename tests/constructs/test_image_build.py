"""The deploy-time image build on the synthesised templates: what it builds, in which order, with which
rights and time limits, and that ECR expiry cannot reach release tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match

from config import naming
from constructs.image_build import RESOURCE_TYPE
from container.serving import contract


def only(template, resource_type: str) -> dict:
    (resource,) = template.find_resources(resource_type).values()
    return resource


@pytest.fixture(scope="module")
def build(dev) -> dict:
    return only(dev.image, RESOURCE_TYPE)


def logical_id(template, resource_type: str) -> str:
    (name,) = template.find_resources(resource_type)
    return name


def test_the_image_stack_builds_the_source_tag_of_its_own_project_and_repository(dev, build) -> None:
    props = build["Properties"]
    assert props["ImageTag"] == dev.image_stack.image.default_tag
    assert props["ImageTag"].startswith(naming.SOURCE_TAG_PREFIX) and len(props["ImageTag"]) == 16
    assert props["ProjectName"] == {"Ref": logical_id(dev.image, "AWS::CodeBuild::Project")}
    assert props["RepositoryName"] == {"Ref": logical_id(dev.image, "AWS::ECR::Repository")}
    assert int(props["ServiceTimeout"]) == 3600  # CloudFormation's maximum for a custom resource


def test_the_build_starts_only_once_the_project_may_read_its_source_and_push(dev, build) -> None:
    (project,) = dev.image.find_resources("AWS::CodeBuild::Project").values()
    project_role = project["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    (policy_id,) = dev.image.find_resources("AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": project_role}]}})
    assert policy_id in build["DependsOn"]


def test_models_naming_source_pull_exactly_what_the_image_stack_built(dev, build) -> None:
    assert {v.image_tag for v in dev.cfg.variants} == {naming.SOURCE_IMAGE_TAG}
    images = [
        m["Properties"]["PrimaryContainer"]["Image"]
        for m in dev.serving.find_resources("AWS::SageMaker::Model").values()
    ]
    assert len(images) == len(dev.cfg.variants)
    for image in images:
        rendered = json.dumps(image)
        assert rendered.endswith(f':{build["Properties"]["ImageTag"]}"]]}}'), rendered
        assert "Fn::ImportValue" in rendered  # the repository the image stack owns


def test_the_container_is_told_the_built_tag_as_its_model_version(dev, build) -> None:
    for model in dev.serving.find_resources("AWS::SageMaker::Model").values():
        variables = model["Properties"]["PrimaryContainer"]["Environment"]
        assert variables[contract.ENV_MODEL_VERSION] == build["Properties"]["ImageTag"]


def test_models_are_created_only_after_the_image_stack_and_its_build(dev, prod) -> None:
    for env in (dev, prod):
        assert env.image_stack in env.serving_stack.dependencies
        env.image.resource_count_is(RESOURCE_TYPE, 1)  # part of the image stack: it completes after the build


def test_release_tags_stay_as_they_are(prod) -> None:
    images = [
        m["Properties"]["PrimaryContainer"]["Image"]
        for m in prod.serving.find_resources("AWS::SageMaker::Model").values()
    ]
    assert all(json.dumps(i).endswith(':v0.1.0"]]}') for i in images), images


def _statements(template, role_id: str) -> list[dict]:
    policies = template.find_resources("AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": role_id}]}})
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _role_of(template, handler: str) -> str:
    (function,) = template.find_resources("AWS::Lambda::Function", {"Properties": {"Handler": handler}}).values()
    return function["Properties"]["Role"]["Fn::GetAtt"][0]


@pytest.mark.parametrize(
    ("handler", "codebuild_actions"),
    [
        ("handler.on_event", ["codebuild:StartBuild"]),
        ("handler.is_complete", ["codebuild:BatchGetBuilds", "codebuild:StopBuild"]),
    ],
)
def test_each_handler_may_touch_only_this_project_and_this_repository(dev, handler, codebuild_actions) -> None:
    project, repository = (
        logical_id(dev.image, "AWS::CodeBuild::Project"),
        logical_id(dev.image, "AWS::ECR::Repository"),
    )
    statements = _statements(dev.image, _role_of(dev.image, handler))
    by_action = {}
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            by_action[action] = statement["Resource"]
    assert by_action.pop("ecr:DescribeImages") == {"Fn::GetAtt": [repository, "Arn"]}
    for action in codebuild_actions:
        assert by_action.pop(action) == {"Fn::GetAtt": [project, "Arn"]}
    assert set(by_action) == {"logs:CreateLogStream", "logs:PutLogEvents"}  # its own log group only
    assert all(resource != "*" for resource in by_action.values())


def test_time_limits_nest_so_the_build_log_reaches_the_deploy(dev) -> None:
    (project,) = dev.image.find_resources("AWS::CodeBuild::Project").values()
    build_timeout = project["Properties"]["TimeoutInMinutes"] * 60
    (poll,) = dev.image.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": "handler.is_complete"}}
    ).values()
    deadline = int(poll["Properties"]["Environment"]["Variables"]["BUILD_DEADLINE_SECONDS"])
    (machine,) = dev.image.find_resources("AWS::StepFunctions::StateMachine").values()
    definition = json.dumps(machine["Properties"]["DefinitionString"])
    interval = int(definition.split('\\"IntervalSeconds\\":')[1].split(",")[0])
    attempts = int(definition.split('\\"MaxAttempts\\":')[1].split(",")[0])
    service_timeout = int(only(dev.image, RESOURCE_TYPE)["Properties"]["ServiceTimeout"])
    assert build_timeout < deadline < interval * attempts < service_timeout <= 3600, (
        build_timeout,
        deadline,
        interval * attempts,
        service_timeout,
    )


def test_the_handlers_run_our_python_module(dev) -> None:
    # cdk-nag's AwsSolutions-L1 (unacknowledged) keeps the runtime the latest one
    dev.image.resource_properties_count_is(
        "AWS::Lambda::Function",
        {
            "Handler": Match.string_like_regexp(r"^handler\.(on_event|is_complete)$"),
            "Runtime": Match.string_like_regexp(r"^python3\."),
        },
        2,
    )


def _lifecycle(prod) -> list[dict]:
    (repository,) = prod.image.find_resources("AWS::ECR::Repository").values()
    return json.loads(repository["Properties"]["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]


def test_count_based_expiry_selects_only_source_builds(prod) -> None:
    rules = _lifecycle(prod)
    counted = [r for r in rules if r["selection"]["countType"] == "imageCountMoreThan"]
    assert all(r["selection"]["tagStatus"] != "any" for r in rules)
    build_rule = next(r for r in counted if r["selection"].get("tagPrefixList") == [naming.SOURCE_TAG_PREFIX])
    assert build_rule["selection"]["countNumber"] == prod.cfg.image_build.keep_images


def test_release_tagged_images_are_shielded_from_the_build_rule(prod) -> None:
    rules = {
        json.dumps(r["selection"].get("tagPatternList") or r["selection"].get("tagPrefixList")): r
        for r in _lifecycle(prod)
    }
    release, build = rules[json.dumps([naming.RELEASE_TAG_PATTERN])], rules[json.dumps([naming.SOURCE_TAG_PREFIX])]
    # A rule that matches an image's tags first keeps lower-priority rules from expiring it (ECR docs).
    assert release["rulePriority"] < build["rulePriority"]
    assert release["selection"]["countNumber"] >= 9999


def test_synth_needs_no_docker_the_build_happens_in_codebuild(dev) -> None:
    assembly = dev.app.synth()
    manifests = list(Path(assembly.directory).glob("*.assets.json"))
    assert manifests
    for manifest in manifests:
        contents = json.loads(manifest.read_text())
        assert not contents.get("dockerImages"), manifest.name
    handler_assets = [
        a for m in manifests for a in json.loads(m.read_text())["files"].values() if a["source"]["packaging"] == "zip"
    ]
    assert handler_assets  # container/ and the handler code travel as plain zip assets
