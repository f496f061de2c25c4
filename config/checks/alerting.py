"""Who hears the alarms: production environments and those with `alarms.paging_required` page someone, an existing topic lives where the alarms do,
and the capacity-ceiling alarm waits longer than a scale-out takes (docs/reference/alarms.md)."""

from __future__ import annotations

from config.problems import Problem, quote, refuse
from config.schema import AlarmDestination, EnvironmentConfig
from config.sections import is_none, skip_invalid

# Target tracking's own scale-out alarm: 3 one-minute datapoints on the standard metric (workbench/planner/autoscaling.py).
SCALE_OUT_REACTION_MINUTES = 3

HOW_TO_PAGE = (
    "give one of alarms.paging.emails (e.g. [oncall@your-company.com]; each address confirms the mail SNS sends), "
    "alarms.paging.https_endpoints (the Amazon SNS integration URL of PagerDuty or Opsgenie, e.g. "
    "[https://events.pagerduty.com/integration/<key>/enqueue]) or alarms.paging.topic_arn (an existing topic in "
    'this account and region, e.g. arn:aws:sns:<region>:<account>:oncall); docs/reference/alarms.md "Two destinations"'
)


def check_alerting(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    return [
        *skip_invalid(_check_paging_required, cfg, env_name),
        *skip_invalid(_check_topic_location, cfg, "paging"),
        *skip_invalid(_check_topic_location, cfg, "ticket"),
    ]


def _check_paging_required(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    if not (cfg.production or cfg.alarms.paging_required):
        return []
    paging = cfg.alarms.paging
    if paging.emails or paging.https_endpoints or not is_none(paging.topic_arn):
        return []
    return refuse("alarms.paging", f"{env_name} pages nobody: {HOW_TO_PAGE}")


def _check_topic_location(cfg: EnvironmentConfig, which: str) -> list[Problem]:
    """An alarm action publishes only to a topic in the alarm's own region; a topic of another account
    would also need that account's topic and key policies, which this stack cannot see: refused too.
    An environment-agnostic config (no account or region) is not checked."""
    destination: AlarmDestination = getattr(cfg.alarms, which)
    if is_none(destination.topic_arn) or is_none(cfg.region) or is_none(cfg.account):
        return []
    _, _, _, region, account, _ = destination.topic_arn.split(":", 5)
    if (region, account) != (cfg.region, cfg.account):
        return refuse(
            f"alarms.{which}.topic_arn",
            f"must be a topic in this environment's region {cfg.region} and account {cfg.account} (alarms "
            f"publish only to topics in their own region), got {quote(destination.topic_arn)}",
        )
    return []


def check_ceiling_after_scale_out(cfg: EnvironmentConfig) -> list[Problem]:
    """capacity-ceiling means "wanted more than max": a healthy scale-out, load above target until the
    new instances are in service, must end before it can fire."""
    minutes = cfg.alarms.capacity_ceiling_minutes
    needed = cfg.planning.provisioning_minutes + SCALE_OUT_REACTION_MINUTES
    if minutes <= needed:
        return refuse(
            "alarms.capacity_ceiling_minutes",
            f"must exceed planning.provisioning_minutes + {SCALE_OUT_REACTION_MINUTES} (the minutes target "
            f"tracking needs to see the load and the new instances to arrive) = {needed}, or every healthy "
            f"scale-out raises it, got {minutes}",
        )
    return []
