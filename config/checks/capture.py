"""Data capture keeps users' prompts (and answers, where configured): personal data. Capture is
refused unless it is encrypted with the capture bucket's own KMS key and every captured object
expires; a production environment keeps it 7 days unless a reason for longer is written beside it. The
break-glass reader's trust must be one its readers can meet (issue 51)."""

from __future__ import annotations

from config.problems import Problem, quote
from config.schema import EnvironmentConfig
from config.sections import is_none, skip_invalid

PRODUCTION_MAX_DAYS_WITHOUT_REASON = 7
# IAM Identity Center's roles for permission sets live under this path (IAM Identity Center User Guide,
# "Referencing permission sets in resource policies ..."): their sessions come from a SAML federation, whose
# requests IAM sees without aws:MultiFactorAuthPresent (IAM User Guide, "AWS global condition context keys":
# the key is present only for temporary credentials obtained with MFA through STS or the console).
IDENTITY_CENTER_ROLES = ":role/aws-reserved/sso.amazonaws.com/"


def check_data_capture(cfg: EnvironmentConfig) -> list[Problem]:
    if not cfg.data_capture.enabled:
        return []
    return [
        *skip_invalid(_check_encryption, cfg),
        *skip_invalid(_check_expiry, cfg),
        *skip_invalid(_check_production_retention, cfg),
        *skip_invalid(_check_reader_mfa, cfg),
    ]


def _check_reader_mfa(cfg: EnvironmentConfig) -> list[Problem]:
    """MFA required of readers whose sessions never carry it: nobody could assume the role when it is needed."""
    federated = [arn for arn in cfg.data_capture.readers if IDENTITY_CENTER_ROLES in arn]
    if cfg.data_capture.reader_mfa and federated:
        return [
            (
                "data_capture.reader_mfa",
                f"{quote(federated[0])} is an IAM Identity Center role, whose sessions IAM sees without "
                "aws:MultiFactorAuthPresent: with reader_mfa true nobody could assume the reader role. Set "
                "reader_mfa: false and require MFA at the identity source's sign-in (docs/operations.md "
                '"Break-glass: reading captured prompts")',
            )
        ]
    return []


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
