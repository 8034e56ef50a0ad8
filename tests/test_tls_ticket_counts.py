"""A trial does not count handshakes from mod_ssl's cache counters while the
server's session tickets are on: a resumption by ticket leaves them (with
TLS 1.2 the cache stores nothing; with TLS 1.3 one session per resumed
handshake, which the counters' arithmetic would read as half a full one:
bench/tls_resumption.py). The config is read with the config model, as the
trial reads the target's."""

from __future__ import annotations

from types import SimpleNamespace

from advisor.config.load_options import LoadOptions
from advisor.tuner.trial.connection_facts import session_tickets_on, tls_causes
from advisor.tuner.trial.runner import _tls_trial

SERVER = "LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so\nServerName t.test\n"


class _Target:
    """The one thing these readers ask of a staging target: its config."""

    def __init__(self, path):
        self.path = path

    def config_source(self):
        return str(self.path), LoadOptions(apache_version="2.4")


def _target(tmp_path, text: str) -> _Target:
    path = tmp_path / "httpd.conf"
    path.write_text(SERVER + text)
    return _Target(path)


def test_tickets_on_by_default_or_by_a_line_and_off_by_a_line(tmp_path):
    assert "httpd's default" in session_tickets_on(_target(tmp_path, ""))
    on = session_tickets_on(_target(tmp_path, "SSLSessionTickets on\n"))
    assert on.endswith("httpd.conf:3: SSLSessionTickets on")
    assert session_tickets_on(_target(tmp_path, "SSLSessionTickets off\n")) is None


def test_a_trial_with_tickets_on_counts_no_handshakes_and_says_why():
    info = SimpleNamespace(version="TLSv1.3", key_type="ecdsa", cipher="TLS_AES_128_GCM_SHA256")
    inputs = SimpleNamespace(tls_resume="session")
    # 1,026 full and 1,000 resumed by ticket: the cache stored 2,052 + 1,000 sessions and was hit never.
    before = {"CacheRetrieveHitCount": 0, "CacheStoreCount": 0}
    after = {"CacheRetrieveHitCount": 0, "CacheStoreCount": 3052}
    counted = _tls_trial(info, None, inputs, before, after, 0.0, 1.0, 2026, 10.0, 0)
    assert (counted.full_handshakes, counted.resumed_handshakes) == (1526, 0)  # what the arithmetic alone reads
    ticketed = _tls_trial(info, None, inputs, before, after, 0.0, 1.0, 2026, 10.0, 0,
                          tickets_on="SSLSessionTickets on (httpd's default: no line sets it)")
    assert ticketed.full_handshakes is None and ticketed.resumed_handshakes is None
    assert ticketed.counted_by.startswith("not counted: SSLSessionTickets on")


def test_a_none_after_a_cache_line_is_no_cause_of_full_handshakes(tmp_path):
    cache = 'SSLSessionCache "shmcb:/tmp/x(512000)"\n'
    causes = tls_causes(_target(tmp_path, cache + "SSLSessionCache none\n"), None)
    assert not [cause for cause in causes if "SSLSessionCache" in cause]
    assert any("SSLSessionCache none" in c for c in tls_causes(_target(tmp_path, "SSLSessionCache none\n"), None))
