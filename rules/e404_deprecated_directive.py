"""E404: an old spelling httpd 2.4 still accepts."""

from __future__ import annotations



from advisor.lint.context import LintContext
from advisor.lint.edits import rename
from advisor.lint.rule import Doc, Report, Rule

RENAMED = {"maxclients": "MaxRequestWorkers", "maxrequestsperchild": "MaxConnectionsPerChild"}
ACCESS = ("order", "allow", "deny", "satisfy")

DOC = Doc(
    summary="Deprecated spelling: MaxClients, MaxRequestsPerChild, NameVirtualHost, Order/Allow/Deny",
    what=(
        "For a 2.4 target, flags MaxClients and MaxRequestsPerChild (renamed "
        "MaxRequestWorkers and MaxConnectionsPerChild), NameVirtualHost (no effect since "
        "2.3.11), SSLCertificateChainFile (deprecated in 2.4.8), DefaultType other than "
        "none, and the 2.2 access directives Order, Allow, Deny and Satisfy. Those last "
        "ones are an error when mod_access_compat is not loaded, because httpd then "
        "refuses them."
    ),
    why=(
        "Old names keep working until they do not: they hide what the setting is called "
        "in the current manual, and mixing Order/Allow/Deny with Require in one tree gives "
        "access rules whose combination surprises (the two systems merge in ways the "
        "upgrade guide warns about). httpd 2.4's upgrade notes ask for the new spellings."
    ),
    evidence=(
        "httpd 2.4's upgrading notes: MaxClients became MaxRequestWorkers, "
        "MaxRequestsPerChild became MaxConnectionsPerChild, and Order/Allow/Deny need "
        "mod_access_compat and should become Require."
    ),
    bad="MaxClients 150\nNameVirtualHost *:80\n<Directory /var/www>\n    Order allow,deny\n    Allow from all\n</Directory>",
    good="MaxRequestWorkers 150\n<Directory /var/www>\n    Require all granted\n</Directory>",
    fix="Use the new name with the same arguments; translate Allow/Deny to Require (the fix line when mechanical).",
    references=(
        "https://httpd.apache.org/docs/2.4/upgrading.html#access",
        "https://httpd.apache.org/docs/2.4/mod/mod_access_compat.html",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html#maxrequestworkers",
    ),
)


def _is_address(word: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_network(word, strict=False)
        return True
    except ValueError:
        return all(part.isdigit() for part in word.rstrip(".").split(".")) and word[:1].isdigit()


def require_for(name: str, args: list[str]) -> str | None:
    """Allow/Deny translated to Require, where the translation is exact."""
    lname = name.lower()
    if len(args) < 2 or args[0].lower() != "from":
        return None
    hosts = args[1:]
    if [h.lower() for h in hosts] == ["all"]:
        return "Require all granted" if lname == "allow" else "Require all denied"
    if lname != "allow":
        return None
    if all(h.lower().startswith("env=") and not h[4:].startswith("!") for h in hosts):
        return "Require env " + " ".join(h[4:] for h in hosts)
    if all(_is_address(h) for h in hosts):
        return "Require ip " + " ".join(hosts)
    if all(not _is_address(h) and "=" not in h for h in hosts):
        return "Require host " + " ".join(hosts)
    return None


def check(ctx: LintContext, report: Report) -> None:
    if not ctx.at_least(2, 3, 0):
        return
    compat = ctx.has_module("access_compat_module", "mod_access_compat.c")
    for node in ctx.raw_directives(*RENAMED, "namevirtualhost", "sslcertificatechainfile",
                                   "defaulttype", *ACCESS):
        lname = node.name.lower()
        if lname in RENAMED:
            new = RENAMED[lname]
            report(node, f"{node.name} is the pre-2.4 name of {new}.",
                   fix=f"{new} {node.raw_args}".rstrip(), edit=rename(ctx, node, new))
        elif lname == "namevirtualhost":
            report(node, "NameVirtualHost has no effect since httpd 2.3.11 (name-based virtual "
                         "hosting is automatic) and only produces a warning.", fix="")
        elif lname == "sslcertificatechainfile":
            report(node, "SSLCertificateChainFile is deprecated since 2.4.8: append the chain "
                         "certificates to the file named by SSLCertificateFile.")
        elif lname == "defaulttype" and node.arg(0).lower() != "none":
            report(node, f"DefaultType {node.arg(0)} has no effect since httpd 2.3.2; use "
                         "ForceType or AddType.", fix="")
        elif lname in ACCESS:
            fix = require_for(node.name, node.args) if lname in ("allow", "deny") else None
            if compat:
                report(node, f"{node.name} is 2.2 access control kept alive by mod_access_compat; "
                             "write Require instead (mixing both gives surprising results).",
                       fix=fix)
            elif ctx.modules_known:
                report(node, f"{node.name} needs mod_access_compat, which is not loaded: httpd "
                             "refuses it. Write Require instead.", fix=fix, severity="error")


RULE = Rule(code="E404", slug="deprecated-directive", severity="warning", category="correctness",
            directives=("MaxClients", "MaxRequestsPerChild", "NameVirtualHost", "Order", "Allow",
                        "Deny", "Satisfy", "SSLCertificateChainFile", "DefaultType"),
            doc=DOC, check=check, fixable=True)
