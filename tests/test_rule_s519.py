"""S519 at the edges of httpd's advisory ranges, and its note when the patch
level is unknown: what one fixture per version cannot say."""

from __future__ import annotations

import pytest

from advisor.rules.s519_h2_dos_version import ADVISORIES, advisories_for
from lint_helpers import RULES_CORPUS, lint_json, run_cli

TLS_SITE = str(RULES_CORPUS / "S519" / "tls_vhost_2457.conf")
NOT_OFFERED = str(RULES_CORPUS / "S519" / "not_offered_fp.conf")

# Release -> the advisories that name it, from httpd's vulnerabilities_24 page.
EXPECTED = {
    "2.4.16": [],  # before mod_http2
    "2.4.17": ["CVE-2023-45802", "CVE-2024-27316", "CVE-2025-53020", "CVE-2026-49975"],
    "2.4.55": ["CVE-2023-43622", "CVE-2023-45802", "CVE-2024-27316", "CVE-2024-36387",
               "CVE-2025-53020", "CVE-2026-49975"],
    "2.4.57": ["CVE-2023-43622", "CVE-2023-45802", "CVE-2024-27316", "CVE-2024-36387",
               "CVE-2025-53020", "CVE-2026-49975"],
    "2.4.58": ["CVE-2024-27316", "CVE-2024-36387", "CVE-2025-53020", "CVE-2026-49975"],
    "2.4.59": ["CVE-2024-36387", "CVE-2025-53020", "CVE-2026-49975"],
    "2.4.63": ["CVE-2025-53020", "CVE-2026-49975"],
    "2.4.64": ["CVE-2026-49975"],
    "2.4.67": ["CVE-2026-49975"],
    "2.4.68": [],
}


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in text.split("."))
    return major, minor, patch


@pytest.mark.parametrize("version", sorted(EXPECTED, key=_version))
def test_the_table_names_exactly_the_advisories_of_each_release(version):
    assert [a.cve for a in advisories_for(_version(version))] == EXPECTED[version]


def test_the_two_issue_cves_have_httpds_ranges():
    by_cve = {advisory.cve: advisory for advisory in ADVISORIES}
    assert (by_cve["CVE-2023-45802"].first, by_cve["CVE-2023-45802"].last) == ((2, 4, 17), (2, 4, 57))
    assert by_cve["CVE-2023-45802"].fixed_in == "2.4.58"
    assert (by_cve["CVE-2024-27316"].first, by_cve["CVE-2024-27316"].last) == ((2, 4, 17), (2, 4, 58))
    assert by_cve["CVE-2024-27316"].fixed_in == "2.4.59"


@pytest.mark.parametrize("version", ["2.4.16", "2.4.17", "2.4.57", "2.4.58", "2.4.59", "2.4.67", "2.4.68"])
def test_lint_reports_the_release_s_advisories_on_the_protocols_line(version):
    findings = [f for f in lint_json(TLS_SITE, "--apache-version", version, "--select", "S519")
                if f["code"] == "S519"]
    expected = EXPECTED[version]
    if not expected:
        assert findings == []
        return
    assert [f["line"] for f in findings] == [16]
    message = findings[0]["message"]
    named = sorted(advisory.cve for advisory in ADVISORIES if advisory.cve in message)
    assert named == sorted(expected)
    assert f"httpd {version} speaks HTTP/2 (h2)" in message
    assert "Upgrade to 2.4.68 or later" in message


def test_an_unknown_patch_level_is_silent_with_a_note_only_where_http2_is_offered():
    offered = run_cli("lint", "--isolated", "--no-live", "--fail-on", "never", "--select", "S519", TLS_SITE)
    assert offered.exit_code == 0, offered.output
    assert "S519 skipped: HTTP/2 is offered but httpd's patch level is unknown" in offered.stdout
    assert "warning S519" not in offered.stdout
    plain = run_cli("lint", "--isolated", "--no-live", "--fail-on", "never", "--select", "S519", NOT_OFFERED)
    assert plain.exit_code == 0, plain.output
    assert "S519" not in plain.stdout
