"""What `apache-advisor lint` is asked: its command-line options and `LintOptions`.

The options are `Annotated` aliases, one per option, so that the command's
signature stays a list of names; the switches every config-reading command
shares (`--define`, `--module`...) are advisor.commands.options's.
`LintOptions` is what the options say once parsed, before the settings file
is merged in; `fix` builds one too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, List, Optional, Tuple

import typer


@dataclass
class LintOptions:
    """Everything `lint` was asked, before the config file is merged in."""

    paths: list[str]
    format: str = "text"
    output: str | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    profile: str | None = None
    tls_profile: str | None = None
    """--tls-profile: Mozilla's modern, intermediate or old (None: the settings file's, else intermediate)."""
    fail_on: str | None = None
    ram: str | None = None
    worker_memory: str | None = None
    expected_clients: int | None = None
    mpm: str | None = None
    apache_version: str | None = None
    defines: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    modules_from: str | None = None
    server_root: str | None = None
    allow_missing_includes: bool = False
    config: str | None = None
    isolated: bool = False
    live: bool | None = None
    show_evidence: bool = True
    cache: bool = True
    cache_dir: str | None = None
    group: bool = True
    """Text output: a finding repeated in many places in the same shape once."""
    statistics: bool = False
    """Counts per rule instead of the findings (text and JSON)."""
    log_paths: list[str] = field(default_factory=list)
    """--log: access logs whose busiest second gives C202 the expected clients."""
    log_format: str | None = None
    fpm_config: list[str] = field(default_factory=list)
    """php-fpm.conf, pool files or pool.d directories (issue 30)."""
    fpm_memory: str | None = None
    """Memory of one php-fpm child; default measured or assumed."""
    live_facts: str | None = None
    """A saved snapshot of a running host (JSON, as advisor.lint.host.collect_live_facts
    writes it) for the live-host rules: what rule fixtures and offline checks use."""
    as_candidate: tuple[str, str] | None = None
    """--as PATH CANDIDATE: the tree linted as it will be once CANDIDATE's
    content replaces PATH (advisor/commands/lint_as.py)."""
    edits: bool = True
    """Whether the findings need their mechanical edits (`fix` does, SARIF shows
    them). A result saved to the cache always has them, whatever this says."""


PathsArgument = Annotated[Optional[List[str]], typer.Argument(help="Main config file(s), or directories holding apache2.conf / httpd.conf (with --host or --inventory: the main config's path on each host, default /etc/apache2/apache2.conf).")]
FormatOption = Annotated[str, typer.Option("--format", "-f", help="text, json, sarif or github.")]
OutputOption = Annotated[Optional[str], typer.Option("--output", "-o", help="Write the report to FILE instead of stdout.")]
SelectOption = Annotated[Optional[List[str]], typer.Option("--select", help="Only these rules: codes, prefixes, categories or slugs (comma-separated or repeated).")]
IgnoreOption = Annotated[Optional[List[str]], typer.Option("--ignore", help="Skip these rules (same forms as --select).")]
ProfileOption = Annotated[Optional[str], typer.Option("--profile", help="performance, security or all (default all).")]
TlsProfileOption = Annotated[Optional[str], typer.Option("--tls-profile", help="The TLS clients to expect, as Mozilla's Server Side TLS profiles name them: modern, intermediate (default) or old; the TLS rules judge protocols, ciphers and HSTS by it.")]
FailOnOption = Annotated[Optional[str], typer.Option("--fail-on", help="Exit 1 when a finding is at least this severe: error, warning (default), info or never.")]
RamOption = Annotated[Optional[str], typer.Option("--ram", help="RAM of the server that runs this config, e.g. 4G.")]
WorkerMemoryOption = Annotated[Optional[str], typer.Option("--worker-memory", help="Private memory of one httpd child process, e.g. 48M.")]
ExpectedClientsOption = Annotated[Optional[int], typer.Option("--expected-clients", help="Concurrent clients the server should hold.")]
LogOption = Annotated[Optional[List[str]], typer.Option("--log", help="Access log whose busiest second (busy workers by Little's law, from %D) gives C202 the expected clients when --expected-clients is not given; repeat for rotated files.")]
LogFormatOption = Annotated[Optional[str], typer.Option("--log-format", help="--log: the log's LogFormat string, or common/combined (default: the CustomLog's format in the config).")]
MpmOption = Annotated[Optional[str], typer.Option("--mpm", help="The MPM in use (prefork, worker, event) when the config does not load one.")]
SettingsFileOption = Annotated[Optional[str], typer.Option("--config", help="Settings file (default: nearest .apache-advisor.toml or pyproject.toml).")]
IsolatedOption = Annotated[bool, typer.Option("--isolated", help="Ignore any settings file.")]
LiveOption = Annotated[Optional[bool], typer.Option("--live/--no-live", help="Measure RAM and worker memory on this host (default: when the config is under /etc); an explicit --live also runs the live-host rules S513-S518 here.")]
EvidenceOption = Annotated[bool, typer.Option("--evidence/--no-evidence", help="Show each finding's evidence line in text output.")]
CacheOption = Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse the last result when no file, directory or variable it read has changed (also APACHE_ADVISOR_NO_CACHE=1).")]
CacheDirOption = Annotated[Optional[str], typer.Option("--cache-dir", help="Where results are kept (default $APACHE_ADVISOR_CACHE_DIR, else ~/.cache/apache-advisor).")]
GroupOption = Annotated[bool, typer.Option("--group/--no-group", help="Text output: print a finding repeated in 4 or more places in the same shape once, with its count and first places (--no-group prints every one; JSON and SARIF always do).")]
StatisticsOption = Annotated[bool, typer.Option("--statistics", help="Print the number of findings per rule instead of the findings (text or JSON); the exit code is unchanged.")]
FpmConfigOption = Annotated[Optional[List[str]], typer.Option("--fpm-config", help="php-fpm.conf, a pool file or a pool.d directory the config hands PHP to (default on this host: /etc/php/*/fpm/pool.d, /etc/php-fpm.d); repeat for several.")]
FpmMemoryOption = Annotated[Optional[str], typer.Option("--fpm-memory", help="Memory of one php-fpm child, e.g. 48M (default: measured PSS of its running children, else 48M).")]
HostOption = Annotated[Optional[List[str]], typer.Option("--host", help="Lint the tree [USER@]HOST[:PORT] reads, over SSH, with that host's modules, version, MPM and RAM (repeat for several).")]
InventoryOption = Annotated[Optional[str], typer.Option("--inventory", "-i", help="Lint the hosts of an Ansible inventory (INI or YAML), over SSH.")]
LimitOption = Annotated[Optional[str], typer.Option("--limit", help="With --inventory: an Ansible host pattern (group, host, glob, ~regex, !excluded, &also).")]
SshOptionOption = Annotated[Optional[List[str]], typer.Option("--ssh-option", help="With --host or --inventory: an ssh -o option, e.g. UserKnownHostsFile=FILE (repeat).")]
IdentityOption = Annotated[Optional[str], typer.Option("--identity", help="With --host or --inventory: the private key ssh uses (an inventory's ansible_ssh_private_key_file wins).")]
BecomeOption = Annotated[bool, typer.Option("--become", help="With --host or --inventory: read each host's tree under `sudo -n` there (never asks for a password; the ssh user needs NOPASSWD sudo). An inventory's ansible_become, ansible_become_user and ansible_become_method win.")]
BecomeUserOption = Annotated[Optional[str], typer.Option("--become-user", help="With --become: the user sudo runs the reading as (default root).")]
JobsOption = Annotated[int, typer.Option("--jobs", "-j", help="With --host or --inventory: hosts read at once.")]
LiveFactsOption = Annotated[Optional[str], typer.Option("--live-facts", help="A saved snapshot of a running host (JSON) for the live-host rules S513-S518.")]
AsOption = Annotated[Optional[Tuple[str, str]], typer.Option("--as", metavar="PATH CANDIDATE", help="Lint the tree as it will be once CANDIDATE's content replaces PATH (a vhost, a conf-available file or the main config), and have httpd test it so: the validate step of Ansible, Puppet, Chef or Salt (CANDIDATE is their temporary file, %s). Findings in it are shown at CANDIDATE's lines.")]
