"""Data capture keeps users' prompts (and answers, where configured): personal data. Capture is
refused unless it is encrypted with the capture bucket's own KMS key and every captured object
expires; a production environment keeps it 7 days unless a reason for longer is written beside it."""

from __future__ import annotations

from config.problems import Problem, quote
from config.schema import EnvironmentConfig
from config.sections import is_none, skip_invalid

PRODUCTION_MAX_DAYS_WITHOUT_REASON = 7


def check_data_capture(cfg: EnvironmentConfig) -> list[Problem]:
    if not cfg.data_capture.enabled:
        return []
    return [
        *skip_invalid(_check_encryption, cfg),
        *skip_invalid(_check_expiry, cfg),
        *skip_invalid(_check_production_retention, cfg),
    ]


def _check_encryption(cfg: EnvironmentConfig) -> list[Problem]:
    encryption = cfg.data_capture.encryption
    if encryption != "kms":
        return [
            (
                "data_capture.encryption",
                "captured prompts are personal data: capture is stored only under the capture bucket's own KMS key "
                f"(reading needs kms:Decrypt on it, logged in CloudTrail), got {quote(encryption)} (allowed: 'kms', "
                "or enabled: false)",
            )
        ]
    return []


def _check_expiry(cfg: EnvironmentConfig) -> list[Problem]:
    if is_none(cfg.data_capture.retention_days):
        return [
            (
                "data_capture.retention_days",
                "captured prompts are personal data and must expire: give the days S3 keeps them, got null "
                f"(allowed: 1-3650; in production at most {PRODUCTION_MAX_DAYS_WITHOUT_REASON} unless "
                "retention_reason says why)",
            )
        ]
    return []


def _check_production_retention(cfg: EnvironmentConfig) -> list[Problem]:
    days, reason = cfg.data_capture.retention_days, cfg.data_capture.retention_reason
    if not cfg.production or is_none(days) or days <= PRODUCTION_MAX_DAYS_WITHOUT_REASON:
        return []
    if is_none(reason) or not reason.strip():
        return [
            (
                "data_capture.retention_days",
                f"a production environment keeps captured prompts at most {PRODUCTION_MAX_DAYS_WITHOUT_REASON} days "
                f"unless data_capture.retention_reason says why they are needed longer, got {days} days and no "
                f"reason (allowed: 1-{PRODUCTION_MAX_DAYS_WITHOUT_REASON}, or a retention_reason beside it)",
            )
        ]
    return []
