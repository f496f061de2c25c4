"""A cost guard: one AWS Budgets budget per environment (docs/alarms.md "Cost guard").

The monthly limit is what `make plan` says the configured fleet costs (the "Configured: schedules +
policies" scenario: the environment's scaling config simulated on its `planning.traffic`, on-demand
prices from config/catalog.yaml for the region it deploys to, config.prices) times `alarms.budget_margin`, computed at synth from files in this
repository, so a change of config, capacity or prices moves the limit at the next deploy. The ticket
topic hears when the month's forecast or its actual cost passes the limit.

The budget counts only costs tagged `Environment=<name>`: the stack tags its resources so, but AWS
Budgets sees a tag only once it is activated as a cost allocation tag (Billing console, by the
management account) and only for costs from then on. Until it is, the budget reads $0 and never
notifies: docs/alarms.md says how to activate it and check.
"""

from __future__ import annotations

from aws_cdk import aws_budgets as budgets

from config.prices import variant_prices
from config.schema import Catalog, EnvironmentConfig
from constructs import Construct
from constructs.alarm_topic import AlarmTopic
from workbench.planner.build import limits, variant_models
from workbench.planner.environment_traffic import traffic_for
from workbench.planner.simulate import simulate
from workbench.planner.totals import add_totals

# (notification type, % of the limit): the forecast warns before the money is spent, the actual says it is.
THRESHOLDS = (("FORECASTED", 100), ("ACTUAL", 100))
CONFIGURED_KEY, CONFIGURED_TITLE = "configured", "Configured: schedules + policies"  # as planner.build names it


def planned_monthly_cost_usd(cfg: EnvironmentConfig, catalog: Catalog) -> float:
    """The configured scenario's monthly cost, as `make plan` computes it (planner.build.build_plan's
    first scenario and planner.totals; tests/stacks/test_alarm_routing.py holds the two equal)."""
    traffic = traffic_for(cfg.planning.traffic)
    scenario = simulate(
        variant_models(cfg, catalog, traffic, with_schedules=True),
        list(traffic.requests_per_minute),
        traffic.start,
        key=CONFIGURED_KEY,
        title=CONFIGURED_TITLE,
        provisioning_minutes=cfg.planning.provisioning_minutes,
        **limits(cfg),
    )
    return add_totals(scenario, variant_prices(cfg, catalog)).total.monthly_cost_usd


class CostBudget(Construct):
    """A monthly COST budget of `limit_usd`, scoped to one tag, notifying `topic` (which it lets publish)."""

    def __init__(
        self, scope: Construct, id: str, *, limit_usd: float, tag_key: str, tag_value: str, topic: AlarmTopic
    ) -> None:
        super().__init__(scope, id)
        self.limit_usd = round(limit_usd)
        topic.allow_budgets()
        subscriber = budgets.CfnBudget.SubscriberProperty(subscription_type="SNS", address=topic.topic.topic_arn)
        self.budget = budgets.CfnBudget(
            self,
            "Budget",
            budget=budgets.CfnBudget.BudgetDataProperty(
                budget_type="COST",
                time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=self.limit_usd, unit="USD"),
                filter_expression=budgets.CfnBudget.ExpressionProperty(
                    tags=budgets.CfnBudget.TagValuesProperty(key=tag_key, values=[tag_value], match_options=["EQUALS"])
                ),
            ),
            notifications_with_subscribers=[
                budgets.CfnBudget.NotificationWithSubscribersProperty(
                    notification=budgets.CfnBudget.NotificationProperty(
                        notification_type=kind,
                        comparison_operator="GREATER_THAN",
                        threshold=percent,
                        threshold_type="PERCENTAGE",
                    ),
                    subscribers=[subscriber],
                )
                for kind, percent in THRESHOLDS
            ],
        )
        # After the topic and its policy: a notification is not created before it may publish.
        self.budget.node.add_dependency(topic.policy)
