"""The dev-sec apache-baseline (InSpec) controls, for the coverage table.

Fourteen controls (controls/apache_spec.rb of dev-sec/apache-baseline). The
first five look at a running host (the service, its processes, file
ownership and modes), which a configuration linter cannot see; the other
nine are about the configuration, and each names the rules that judge it by
meaning (`Rule.baseline`). Titles are our short paraphrases.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Control:
    id: str
    title: str
    live_host: bool
    """Needs the running host (service state, processes, file modes)."""


DEV_SEC_APACHE = (
    Control("apache-01", "Apache is installed and running", True),
    Control("apache-02", "Apache starts at boot", True),
    Control("apache-03", "At most one httpd process runs as root", True),
    Control("apache-04", "Config directory owned by root, not readable by others", True),
    Control("apache-05", "Config files owned by root, not readable by others", True),
    Control("apache-06", "User and Group are an unprivileged account", False),
    Control("apache-07", "ServerTokens Prod", False),
    Control("apache-08", "No dav, cgi, cgid or include modules loaded", False),
    Control("apache-09", "TraceEnable Off", False),
    Control("apache-10", "HTTP methods restricted (`<LimitExcept GET POST>`)", False),
    Control("apache-11", "-FollowSymLinks or +SymLinksIfOwnerMatch on alias directories", False),
    Control("apache-12", "-Indexes on alias directories", False),
    Control("apache-13", "SSLHonorCipherOrder On for SSL hosts", False),
    Control("apache-14", "A CustomLog for every virtual host", False),
)
