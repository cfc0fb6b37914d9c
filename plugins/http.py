"""Built-in transport: HTTP endpoints (``http:`` hook entries), in every phase.

A hook entry ``{http: {url, method, headers, query, body, extract, save, ...}}``
sends one request per phase call and turns the response into the hook
contract's JSON object with JMESPath paths. See ``docs/http.md``; the pieces
live in :mod:`rook_plugins.http_transport`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rook_core.errors import ConfigError
from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec, phase_hooks

if TYPE_CHECKING:
    from rook_plugins.http_transport.entry import HttpConfig


def resolve(config: HttpConfig, agent: Any) -> HttpConfig:
    """Find a ``verify_tls`` CA bundle (workspace first, then the agent's folder)."""
    if not isinstance(config.verify_tls, str):
        return config
    candidates = agent.candidates(config.verify_tls)
    for candidate in candidates:
        if candidate.is_file():
            config.verify_tls = str(candidate.resolve())
            _check_bundle(config.verify_tls)
            return config
    for candidate in candidates:
        if candidate.is_dir():  # /etc/ssl/certs, say: OpenSSL's folder, no bundle
            raise ConfigError(
                f"http.verify_tls: {candidate} is a folder; give the path of the PEM file "
                "(-----BEGIN CERTIFICATE-----) that signed the server's certificate"
            )
    tried = " and ".join(str(c) for c in candidates)
    raise ConfigError(f"http.verify_tls: CA bundle {config.verify_tls!r} not found; tried {tried}")


def _check_bundle(path: str) -> None:
    """A CA bundle the TLS library can load (PEM certificates), or a ConfigError
    naming it: otherwise every request of the run fails with a raw SSLError."""
    import ssl

    try:
        ssl.create_default_context(cafile=path)
    except (ssl.SSLError, ValueError, OSError) as exc:
        raise ConfigError(
            f"http.verify_tls: {path} holds no CA certificate Rook can use ({exc}); give "
            "the path of the PEM file (-----BEGIN CERTIFICATE-----) that signed the "
            "server's certificate"
        ) from None


KEY = "http"
# The entry schema (with JMESPath), httpx and the request machinery load only
# when a profile uses http: entries, so every other run starts without them.


def load_config(value: Any) -> HttpConfig:
    """Validate an ``http:`` entry (see :func:`rook_plugins.http_transport.config.load_config`)."""
    from rook_plugins.http_transport.config import load_config as load

    return load(value)


def env_names(config: HttpConfig) -> list[tuple[str, str]]:
    """Every ``{{env.NAME}}`` of the entry, with its field path (``body.a``)."""
    from rook_plugins.http_transport.names import request_parts
    from rook_plugins.http_transport.template import ENV_NAME, placeholders

    found = []
    for key, value in request_parts(config).items():
        for where, name in placeholders(value, key):
            m = ENV_NAME.match(name)
            if m:
                found.append((where, m.group(1)))
    return found


def saved_names(config: HttpConfig) -> list[str]:
    """The names the entry saves for later phases (its ``save:``)."""
    return list(config.save)


def check(config: HttpConfig, plugins: Any, phase: str, profile: Any) -> HttpConfig:
    """Every ``{{NAME}}`` must be fillable in ``phase``: saved by an earlier phase of
    ``profile``, or a built-in of that phase (:mod:`rook_plugins.http_transport.names`)."""
    from rook_plugins.http_transport.names import check as check_names

    return check_names(config, plugins, phase, profile)


async def start(run: Any) -> Any:
    """One set of clients per run, shared by every scenario (connections are reused)."""
    from rook_plugins.http_transport.client import HttpResources

    return HttpResources(run.profile.concurrency)


async def stop(resources: Any) -> None:
    await resources.aclose()


def scenario_ended(resources: Any, sr: Any) -> None:
    """A scenario run is over: its cookies and saved values are let go."""
    resources.forget(sr.key)


def run_http(call: Any) -> Any:
    from rook_plugins.http_transport.phase import run_http as run

    return run(call)


@hookimpl
def rook_register_transports(register: Any) -> None:
    register(
        TransportSpec(
            key=KEY,
            handles_timeout=True,
            load_config=load_config,
            resolve=resolve,
            env_names=env_names,
            check=check,
            saved_names=saved_names,
            start=start,
            stop=stop,
            scenario_ended=scenario_ended,
            description="send an HTTP request (JSON body with placeholders; JMESPath extraction)",
        )
    )


(
    rook_auth_prepare,
    rook_session_open,
    rook_transport_execute,
    rook_session_close,
    rook_evidence_collect,
) = phase_hooks(KEY, run_http)
