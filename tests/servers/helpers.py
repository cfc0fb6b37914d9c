"""Profiles for the HTTP transport's tests: entries aimed at :class:`AgentServer`."""

from __future__ import annotations

from typing import Any

from .agent_server import AgentServer

CAPS = {"multi_turn": True, "calls": True, "usage": True}
CHAT_EXTRACT = {
    "output": "choices[0].message.content",
    "usage": {"input": "usage.prompt_tokens", "output": "usage.completion_tokens"},
    "calls": "choices[0].message.tool_calls[].{name: function.name, "
    "arguments: function.arguments} || `[]`",
    "evidence": {"model": "model"},
}


def chat(server: AgentServer, **over: Any) -> dict[str, Any]:
    """An execute entry for the OpenAI-compatible endpoint, authorised with {{env.AGENT_KEY}}."""
    entry = {
        "url": f"{server.url}/v1/chat/completions",
        "headers": {"Authorization": "Bearer {{env.AGENT_KEY}}"},
        "body": {"model": "fake-model", "messages": [{"role": "user", "content": "{{goal}}"}]},
        "extract": CHAT_EXTRACT,
    }
    entry.update(over)
    return {"http": entry}


def write_profile(
    ws: Any, hooks: dict[str, Any], env: tuple[str, ...] = ("AGENT_KEY",), **extra: Any
) -> None:
    ws.profile(
        {
            "id": "p",
            "hooks": hooks,
            "env": [{"variable": v, "purpose": f"{v} for the fake agent"} for v in env],
            "capabilities": CAPS,
            **extra,
        }
    )


def hooks_of(report: dict[str, Any], phase: str) -> list[dict[str, Any]]:
    return [h for s in report["scenarios"] for h in s["hooks"] if h["phase"] == phase]


def record_hooks(ws: Any, run_id: str, key: str, phase: str) -> list[dict[str, Any]]:
    return [h for h in ws.record(run_id, key)["hooks"] if h["phase"] == phase]


def run_id_of(result: Any) -> str:
    return str(result.report["run"]["id"])


def token_prepare(server: AgentServer) -> dict[str, Any]:
    return {
        "http": {
            "url": f"{server.url}/oauth/token",
            "form": {
                "grant_type": "client_credentials",
                "client_id": server.client_id,
                "client_secret": "{{env.CLIENT_SECRET}}",
            },
            "save": {"token": "access_token"},
        }
    }


def session_hooks(server: AgentServer) -> dict[str, Any]:
    base = f"{server.url}/api/sessions"
    return {
        "open": {
            "http": {
                "url": base,
                "body": {"user": "{{scenario}}"},
                "extract": {"conversation": "session.id"},
            }
        },
        "execute": {
            "http": {
                "url": base + "/{{conversation}}/messages",
                "body": {"text": "{{goal}}", "turn": "{{turn}}"},
                "extract": {
                    "output": "data.reply",
                    "usage": {"input": "data.tokens.in", "output": "data.tokens.out"},
                    "calls": "data.tool_calls[].{name: function, arguments: args}",
                    "evidence": {"trace_id": "data.trace_id"},
                },
            }
        },
        "close": {"http": {"url": base + "/{{conversation}}", "method": "DELETE"}},
        "collect": {
            "http": {
                "url": base + "/{{conversation}}/trace",
                "method": "GET",
                "extract": {"evidence": {"trace_url": "trace_url", "steps": "steps"}},
            }
        },
    }
