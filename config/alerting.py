"""Paging destinations that reach nobody: the addresses and accounts reserved for documentation.

`make deploy` of a production environment refuses them before any AWS call (ops/pipeline/paging_check.py);
synth accepts them, so a fresh clone synthesises as shipped. Reserved names: example.com, example.net
and example.org (RFC 2606 §3) and the top-level names .example, .test, .invalid and .localhost (RFC 2606
§2, RFC 6761); accounts the AWS documentation uses in its examples (IAM User Guide, "Identifiers"
examples: 123456789012, 111122223333, 444455556666, 777788889999).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from config.schema import AlarmDestination

RESERVED_DOMAINS = ("example.com", "example.net", "example.org")
RESERVED_TOP_LEVEL = ("example", "test", "invalid", "localhost")
DOCUMENTATION_ACCOUNTS = ("123456789012", "111122223333", "444455556666", "777788889999")


def is_reserved_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host.rsplit(".", 1)[-1] in RESERVED_TOP_LEVEL or any(
        host == domain or host.endswith(f".{domain}") for domain in RESERVED_DOMAINS
    )


def placeholders(destination: AlarmDestination) -> list[str]:
    """Each address, URL or topic of `destination` that reaches nobody, as written in the config."""
    found = [
        f"alarms.paging.emails: {email}" for email in destination.emails if is_reserved_host(email.rsplit("@", 1)[-1])
    ]
    for url in destination.https_endpoints:
        host = urlsplit(url).hostname or ""
        if is_reserved_host(host) or "<" in url or ">" in url:  # a template's `<key>` left in
            found.append(f"alarms.paging.https_endpoints: {urlsplit(url).scheme}://{host}/…")
    if destination.topic_arn is not None and destination.topic_arn.split(":")[4] in DOCUMENTATION_ACCOUNTS:
        found.append(f"alarms.paging.topic_arn: {destination.topic_arn}")
    return found
