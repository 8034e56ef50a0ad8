"""E409's reading of cipher strings, where a fixture cannot show it: which TLS
1.2 suites RFC 7540's Appendix A lists, `@STRENGTH` reordering a list, and a
finding that holds for one certificate kind only."""

from __future__ import annotations

import pytest

from advisor.rules._ciphers import admitted, describe
from advisor.rules.e409_h2_appendix_a_cipher import failing


@pytest.mark.parametrize("name, listed", [
    ("ECDHE-RSA-AES128-GCM-SHA256", False),       # the suite RFC 7540 makes mandatory
    ("ECDHE-ECDSA-CHACHA20-POLY1305", False),
    ("ECDHE-ECDSA-AES128-CCM8", False),
    ("DHE-RSA-AES256-GCM-SHA384", False),
    ("DHE-PSK-AES128-GCM-SHA256", False),          # ephemeral and AEAD: not listed
    ("ECDHE-RSA-AES128-SHA256", True),             # CBC although ECDHE
    ("ECDHE-RSA-AES256-SHA", True),
    ("AES128-GCM-SHA256", True),                   # AEAD but RSA key exchange
    ("RSA-PSK-AES128-GCM-SHA256", True),
    ("ADH-AES128-GCM-SHA256", True),               # anonymous, though ephemeral and AEAD
    ("DES-CBC3-SHA", True),
])
def test_appendix_a_lists_every_suite_without_ephemeral_aead(name, listed):
    assert (describe(name).http2_prohibited is not None) is listed


def test_gcm_suites_are_aead_for_openssl_aliases():
    # OpenSSL's SHA256 alias names suites whose MAC is SHA256, not GCM ones.
    names = [cipher.name for cipher in admitted("SHA256")]
    assert "ECDHE-RSA-AES128-SHA256" in names
    assert all("GCM" not in name for name in names)


def test_strength_sort_can_put_a_cbc_suite_first():
    ordered = "ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA"
    assert [c.name for c in admitted(ordered + ":@STRENGTH")] == ["AES256-SHA",
                                                                   "ECDHE-RSA-AES128-GCM-SHA256"]
    assert failing(ordered, honored=True) == []
    assert [pick.prohibited.name for pick in failing(ordered + ":@STRENGTH", honored=True)] == [
        "AES256-SHA"]


def test_a_finding_names_the_certificate_kind_it_holds_for():
    spec = "ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256"
    assert [pick.key for pick in failing(spec, honored=True)] == ["ECDSA"]
    assert failing(spec, honored=False) == []


def test_suites_no_client_can_get_do_not_count():
    # RC4 is gone from OpenSSL 1.1.0 on, and no browser offers NULL or anonymous suites.
    assert failing("RC4-SHA:NULL-SHA:ADH-AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256", True) == []
    assert [p.prohibited.name for p in failing("RC4-SHA:AES128-SHA:HIGH", True)] == ["AES128-SHA"]
