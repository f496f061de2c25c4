"""`verify` fails on an alarm subscription awaiting confirmation (issue 27), set on moto's own record
("PendingConfirmation", SNS API reference ListSubscriptionsByTopic).
"""

from __future__ import annotations

from moto.sns.models import sns_backends

from config import naming

PAGER = "https://events.pagerduty.com/integration/0123456789abcdef0123456789abcdef/enqueue"


def deploy_topics(world) -> dict[str, str]:
    """The serving stack's two topics in its outputs, prod.yaml's paging subscriptions and a pager."""
    sns = world.client("sns")
    stack = naming.serving_stack_name("prod")
    paging = sns.create_topic(Name=f"{stack}-PagingTopicF7F4870D-1A2B3C4D5E6F")["TopicArn"]
    ticket = sns.create_topic(Name=f"{stack}-TicketsTopicC7E9F99F-6F5E4D3C2B1A")["TopicArn"]
    sns.subscribe(TopicArn=paging, Protocol="email", Endpoint="oncall-mangaassist@example.com")
    sns.subscribe(TopicArn=paging, Protocol="https", Endpoint=PAGER)
    sns.subscribe(TopicArn=ticket, Protocol="email", Endpoint="team@example.com")
    world.stack(world.config_names[-1], **{naming.OUTPUT_ALARM_TOPIC_ARN: paging, naming.OUTPUT_TICKET_TOPIC_ARN: ticket})
    return {"paging": paging, "ticket": ticket}


def not_yet_confirmed(world, topic_arn: str, endpoint: str) -> None:
    _, _, _, region, account, _ = topic_arn.split(":")
    (subscription,) = [
        s
        for s in sns_backends[account][region].subscriptions.values()
        if s.topic.arn == topic_arn and s.endpoint == endpoint
    ]
    subscription.arn = "PendingConfirmation"


def test_confirmed_subscriptions_hold(prod, cli):
    deploy_topics(prod)

    result = cli("verify", "prod")

    assert result.exit_code == 0, result.output
    assert "✓ paging topic: 2 subscription(s), none waiting for confirmation" in result.output
    assert "✓ ticket topic: 1 subscription(s), none waiting for confirmation" in result.output


def test_an_unconfirmed_paging_address_fails_and_says_how_to_confirm(prod, cli):
    topics = deploy_topics(prod)
    not_yet_confirmed(prod, topics["paging"], "oncall-mangaassist@example.com")

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert (
        "✗ paging topic: email oncall-mangaassist@example.com has not confirmed its subscription and hears nothing: "
        "open the mail from AWS Notifications and confirm the subscription" in result.output
    )
    assert f"aws sns subscribe --topic-arn {topics['paging']} --protocol email" in result.output
    assert "✓ ticket topic: 1 subscription(s), none waiting for confirmation" in result.output


def test_an_unconfirmed_pager_is_named_without_its_integration_key(prod, cli):
    topics = deploy_topics(prod)
    not_yet_confirmed(prod, topics["paging"], PAGER)

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert "✗ paging topic: https https://events.pagerduty.com/… has not confirmed its subscription" in result.output
    assert "0123456789abcdef" not in result.output


def test_a_topic_the_outputs_name_but_that_is_gone_fails(prod, cli):
    topics = deploy_topics(prod)
    prod.client("sns").delete_topic(TopicArn=topics["ticket"])

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert f"✗ ticket topic {topics['ticket']} does not exist: deploy prod again" in result.output
