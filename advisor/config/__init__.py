"""The configuration reader: files in, the configuration model out.

Read a tree as httpd does and get both views of it::

    from advisor.config import LoadOptions, load_config
    cfg = load_config("/etc/apache2", LoadOptions(apache_version="2.4"))
    cfg.server_value("KeepAlive")    # a Directive with .file and .line, or None

Inside the package the dependencies run one way::

    loader -> includes, conditions, macros -> state -> model, modules, options
           -> lexer, envvars, inputs, catalog

`model` knows nothing of how it was read, and nothing here imports the
rules, the commands or the output formatters.

The names below are imported on first use (PEP 562), so that a command that
needs only `LoadOptions` (a cached lint) does not pay for the whole reader.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from advisor.errors import ConfigError

if TYPE_CHECKING:
    from advisor.config.load_options import LoadOptions
    from advisor.config.loader import load_config
    from advisor.config.model import Config, Diagnostic, Directive, Include, Node, Section

_EXPORTS = {
    "load_config": "advisor.config.loader",
    "Config": "advisor.config.model",
    "Diagnostic": "advisor.config.model",
    "Directive": "advisor.config.model",
    "Include": "advisor.config.model",
    "Node": "advisor.config.model",
    "Section": "advisor.config.model",
    "LoadOptions": "advisor.config.load_options",
}

__all__ = ["ConfigError", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'advisor.config' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
