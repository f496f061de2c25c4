"""A cost guard: one AWS Budgets budget per environment (docs/alarms.md "Cost guard").

The monthly limit is a figure the stack passes in: the environment's `alarms.monthly_budget_usd`, which
the planner writes (`bin/plan ENV --write-config`: the configured fleet's cost on its planning.traffic at
its region's prices, times `alarms.budget_margin`) and `bin/plan ENV` checks, so a change of config,
capacity or prices that moves the cost fails the PR's plan until the figure follows it; synth runs no
simulation. The ticket topic hears when the month's forecast or its actual cost passes the limit.

The budget counts only costs tagged `Environment=<name>`: the stack tags its resources so, but AWS
Budgets sees a tag only once it is activated as a cost allocation tag (Billing console, by the
management account) and only for costs from then on. Until it is, the budget reads $0 and never
notifies: docs/alarms.md says how to activate it and check.
"""

from __future__ import annotations

from aws_cdk import aws_budgets as budgets

from constructs import Construct
from constructs.alarm_topic import AlarmTopic

# (notification type, % of the limit): the forecast warns before the money is spent, the actual says it is.
THRESHOLDS = (("FORECASTED", 100), ("ACTUAL", 100))


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
