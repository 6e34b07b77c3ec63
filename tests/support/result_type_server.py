"""A 2026-07-28 server over stdio that answers with whatever ``resultType``
the test asks for, right or wrong: JSON lines written by hand, so that
nothing on this side fills in or checks what the client must handle.

``tools/call``, ``prompts/get`` and ``resources/read`` choose their answer by
the tool name, the prompt name or the resource URI's host:

* ``absent``: the final result without ``resultType`` (a server of an
  earlier revision);
* ``incomplete``: ``"resultType": "complete"`` without the fields the final
  result requires (all of them but ``resultType``);
* ``ttl-absent`` (resources/read): complete but for ``ttlMs``;
* ``input-required``: an ``InputRequiredResult`` asking for a name by
  elicitation, then, on the retry carrying the answer, the final result;
* ``bogus``: ``"resultType": "bogus"`` with a final result's fields.

``python result_type_server.py`` serves until its stdin closes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

# Each method's final result (resultType aside) and the key of the name it answers to.
FINAL: dict[str, tuple[str, dict[str, Any]]] = {
    "tools/call": ("name", {"content": [{"type": "text", "text": "{greeting}"}]}),
    "prompts/get": (
        "name",
        {"messages": [{"role": "user", "content": {"type": "text", "text": "{greeting}"}}]},
    ),
    "resources/read": (
        "uri",
        {
            "contents": [{"uri": "test://{scenario}", "text": "{greeting}"}],
            "ttlMs": 60000,
            "cacheScope": "private",
        },
    ),
}

ASK = {
    "resultType": "input_required",
    "inputRequests": {
        "who": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Who are you?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        }
    },
    "requestState": "asked-who",
}


def _fill(value: Any, scenario: str, greeting: str) -> Any:
    if isinstance(value, str):
        return value.replace("{scenario}", scenario).replace("{greeting}", greeting)
    if isinstance(value, list):
        return [_fill(item, scenario, greeting) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, scenario, greeting) for key, item in value.items()}
    return value


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "server/discover":
        return {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {SERVER_INFO_KEY: {"name": "result-type-server", "version": "0"}},
        }
    key, final = FINAL[method]
    scenario = str(params[key]).removeprefix("test://")
    greeting = f"{method} {scenario}"
    if scenario == "input-required":
        who = (params.get("inputResponses") or {}).get("who")
        if who is None:
            return ASK
        greeting += f" for {who['content']['name']} ({params.get('requestState')})"
    result = _fill(final, scenario, greeting)
    if scenario == "absent":
        return result
    if scenario == "incomplete":
        return {"resultType": "complete"}
    if scenario == "ttl-absent":
        del result["ttlMs"]
    return {"resultType": "bogus" if scenario == "bogus" else "complete", **result}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications (cancellation) need no answer
        result = answer(message["method"], message.get("params") or {})
        response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
