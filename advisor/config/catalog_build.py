"""Build the packaged directive catalog from httpd's manual facts.

Run: python -m advisor.config.catalog_build ../shared/data
It writes advisor/config/data/directives.json: for each httpd version, the directives
keyed by lower-case name with module, contexts, default, override and block.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VERSIONS = ("2.0", "2.2", "2.4")

# httpd 2.4 still accepts these 2.2 spellings (its command tables keep them
# as aliases) although the 2.4 manual no longer lists them.
ALIASES_24 = {
    "MaxClients": "MaxRequestWorkers",
    "MaxRequestsPerChild": "MaxConnectionsPerChild",
}


# Where the manual's spelling differs from the name in httpd 2.4's command
# tables, which is the one httpd prints in its dump. Found by matching the
# catalog against the strings in Debian's apache2 binary and modules.
COMMAND_TABLE_SPELLING = {
    "Anonymous_NoUserID": "Anonymous_NoUserId",
    "CookieHTTPOnly": "CookieHttpOnly",
    "Dav": "DAV",
    "DavBasePath": "DAVBasePath",
    "DavDepthInfinity": "DAVDepthInfinity",
    "DavGenericLockDB": "DAVGenericLockDB",
    "DavLockDB": "DAVLockDB",
    "DavLockDiscovery": "DAVLockDiscovery",
    "DavMinTimeout": "DAVMinTimeout",
    "DeflateAlterETag": "DeflateAlterEtag",
    "LimitRequestFieldSize": "LimitRequestFieldsize",
    "ListenBackLog": "ListenBacklog",
    "ProxyHTMLDocType": "ProxyHTMLDoctype",
    "SSIETag": "SSIEtag",
    "SSLOCSPNoverify": "SSLOCSPNoVerify",
    "TimeOut": "Timeout",
    # mod_access_compat registers its directives in lower case.
    "Order": "order",
    "Allow": "allow",
    "Deny": "deny",
}


def build(source_dir: Path) -> dict:
    catalog: dict = {}
    for version in VERSIONS:
        data = json.loads((source_dir / f"apache-{version}-directives.json").read_text())
        table = {}
        for entry in data["directives"]:
            name = entry["name"]
            if version == "2.4":
                name = COMMAND_TABLE_SPELLING.get(name, name)
            table[name.lower()] = {
                "name": name,
                "module": entry["module"],
                "modules": entry["modules"],
                "syntax": entry["syntax"],
                "default": entry["default"],
                "contexts": entry["contexts"],
                "override": entry["override"],
                "status": entry["status"],
                "block": entry["block"],
            }
        if version == "2.4":
            for old, new in ALIASES_24.items():
                alias = dict(table[new.lower()])
                alias["name"] = old
                alias["alias_of"] = new
                table[old.lower()] = alias
        catalog[version] = table
    return catalog


def main() -> None:
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
    catalog = build(source)
    out = Path(__file__).parent / "data" / "directives.json"
    out.write_text(json.dumps(catalog, sort_keys=True, separators=(",", ":")) + "\n")
    # The spellings alone, for commands that only print names (dump): a
    # fraction of the full catalog's load time.
    names = sorted(entry["name"] for entry in catalog["2.4"].values())
    spelling = Path(__file__).parent / "data" / "names-2.4.json"
    spelling.write_text(json.dumps(names, separators=(",", ":")) + "\n")
    print(f"wrote {out} and {spelling}")


if __name__ == "__main__":
    main()
