"""What the user tells the loader about the httpd that will read the config."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from advisor.config.inputs import InputRecorder
    from advisor.config.overlay import Overlay


@dataclass
class LoadOptions:
    defines: dict[str, str | None] = field(default_factory=dict)
    """`--define NAME[=VALUE]`, like httpd's `-D`."""
    modules: set[str] = field(default_factory=set)
    """`--module NAME`: modules loaded by means the config does not show."""
    modules_from: str | None = None
    """`--modules-from FILE`: the output of `apachectl -M`."""
    mpm: str | None = None
    """`--mpm NAME` (prefork, worker, event): the MPM httpd runs when the
    config loads none, i.e. one compiled in. Its module then counts as
    loaded from the first line, for `<IfModule>` as for the rules; a config
    that loads an MPM itself is read without it."""
    apache_version: str = "2.4"
    """The httpd version `<IfVersion>` tests against."""
    server_root: str | None = None
    """httpd's `-d`; by default derived from the main file's location."""
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    envvars: str | None = None
    """A Debian envvars file whose exports apache2ctl would give httpd; by
    default the one beside apache2.conf. Its values win over the environment,
    as when apache2ctl sources it."""
    use_envvars: bool = True
    allow_missing_includes: bool = False
    """Treat an Include that finds nothing like IncludeOptional, with a
    warning: for linting one file taken out of its tree (httpd itself would
    refuse to start)."""
    max_include_depth: int = 128
    """httpd's AP_MAX_INCLUDE_DEPTH."""
    recorder: "InputRecorder | None" = None
    """Told of every file, directory and variable the reading depended on
    (for the lint result cache)."""
    root: str | None = None
    """A local directory that stands for `/` of the host whose config this
    is (a copy of a remote server's tree): every path the config names is
    looked up under it, and the model keeps the host's own paths."""
    overlay: "Overlay | None" = None
    """One file read from elsewhere (`lint --as PATH CANDIDATE`): the tree
    as it will be once the candidate replaces PATH (advisor/config/overlay.py)."""
    effective: bool = False
    """Build the effective tree (`Config.effective`) while reading instead
    of copying the raw tree afterwards: one pass less for a command that
    needs it (lint); a dump of the raw tree does not."""
