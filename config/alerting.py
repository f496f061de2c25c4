"""Names the alerting parts share without CDK (config checks, the serving stack, `bin/ops verify`).

The paging topic's ARN is the serving stack's `naming.OUTPUT_ALARM_TOPIC_ARN` output, as the one topic's
was before issue 27; the ticket topic and the budget have outputs of their own.
"""

from __future__ import annotations

# Environments whose alarms must page someone, besides any `production: true` one; dev may page nobody.
PAGED_ENVIRONMENTS = ("prod", "staging")

OUTPUT_TICKET_TOPIC_ARN = "TicketTopicArn"
OUTPUT_MONTHLY_BUDGET = "MonthlyBudgetUsd"  # the AWS Budgets limit (configured plan cost x budget_margin)
