"""P108: zero-copy file serving switched off for the whole server."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

DOC = Doc(
    summary="EnableMMAP Off or EnableSendfile Off at server scope",
    what=(
        "Flags `EnableMMAP Off` or `EnableSendfile Off` written at server scope or in a "
        "virtual host, and notes (info) when EnableSendfile is off only because that is "
        "httpd 2.4's default. Off inside a <Directory> for a network filesystem is the "
        "right pattern and is not flagged."
    ),
    why=(
        "Serving a file from memory instead of read()/write() copies matters: Arlitt & "
        "Williamson (2004, sec. 5.1.4) raised Apache's peak from 5,700 to 7,300 replies/s "
        "(+28 %) by mapping the served file once at start-up with mod_file_cache's MMapFile. "
        "That is not EnableMMAP, which maps each file per request: no seed measured "
        "EnableMMAP or EnableSendfile on their own, so the figure bounds what serving from "
        "memory can win rather than what this switch wins. Hu, Nanda & Yang (1999) found Apache "
        "spent 35-50 % of its CPU in system calls, and recommended sending data straight "
        "from the file cache to the network, which is what sendfile does. The exception: on "
        "NFS or other network filesystems mmap and sendfile can serve stale or truncated "
        "files, so turn them off for those directories only."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.4): MMapFile (mod_file_cache, the file mapped "
        "once at start-up, not EnableMMAP) raised the peak from 5,700 to 7,300 replies/s (+28 %)."
    ),
    bad="EnableMMAP Off\nEnableSendfile Off",
    good=(
        "EnableMMAP On\nEnableSendfile On\n<Directory /mnt/nfs/www>\n"
        "    EnableMMAP Off\n    EnableSendfile Off\n</Directory>"
    ),
    fix=(
        "Set EnableMMAP On and EnableSendfile On at server scope; turn them off only "
        "inside <Directory> sections that live on a network filesystem."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.4 (MMapFile: one file mapped at start-up by mod_file_cache)",
        "Hu, Nanda & Yang 1999, IPCCC'99 (system-call share; file cache to network)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#enablesendfile",
        "https://httpd.apache.org/docs/2.4/mod/core.html#enablemmap",
    ),
)

_NFS_NOTE = ("unless the served files live on NFS or another network filesystem (then turn "
             "it off only in that <Directory>)")


def check(ctx: LintContext, report: Report) -> None:
    for name, on_fix in (("EnableMMAP", "EnableMMAP On"), ("EnableSendfile", "EnableSendfile On")):
        written = False
        for node in ctx.directives(name):
            parent = node.parent
            if parent is None or not (parent.is_root or parent.lname == "virtualhost"):
                continue
            written = written or parent.is_root
            if parse_flag(node.arg(0)) is False:
                report(node, f"{name} Off for the whole {'server' if parent.is_root else 'virtual host'}: "
                             f"files are copied through user space; keep it On {_NFS_NOTE}.",
                       fix=on_fix, edit=set_value(ctx, node, "On"))
        if name == "EnableSendfile" and not written and ctx.at_least(2, 3, 9) and ctx.complete:
            report(ctx.main_location(),
                   "EnableSendfile is Off: httpd's default since 2.3.9, not written anywhere; "
                   f"turn it On to send files without copying them {_NFS_NOTE}.",
                   fix=on_fix, severity="info", edit=add_directive(ctx, on_fix))


RULE = Rule(code="P108", slug="mmap-sendfile-off", severity="warning", category="performance",
            directives=("EnableMMAP", "EnableSendfile"), doc=DOC, check=check, fixable=True)
