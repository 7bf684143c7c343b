"""The official MCP Python SDK (`mcp`, pinned in infra/requirements.txt) driving firmspace-mcp
over stdio in its default mode, as an integrator's assistant would. Prints one JSON document of
what it saw; `mcp/tests/sdk.rs` asserts on it."""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


def shown(result):
    return {
        "error": bool(result.is_error),
        "text": " ".join(getattr(c, "text", "") for c in result.content),
        "structured": result.structured_content,
    }


async def main(server, number):
    env = {name: os.environ[name] for name in ("FIRMSPACE_API_URL", "FIRMSPACE_API_KEY")}
    seen = {}
    async with Client(StdioServerParameters(command=server, env=env)) as client:
        seen["protocol"] = client.protocol_version
        tools = await client.list_tools()
        seen["tools"] = {t.name: bool(t.annotations and t.annotations.read_only_hint) for t in tools.tools}

        # The assistant's example ("Olena paid 10 UAH of inv-00012"), with the tools alone: the
        # invoice found by its number as a person writes it, then paid.
        found = await client.call_tool("find_invoices", {"number": number.lower()})
        seen["by_number"] = shown(found)
        invoice_id = found.structured_content["result"]["items"][0]["id"]
        seen["invoice_id"] = invoice_id

        async def pay(call_id, amount):
            args = {"invoice_id": invoice_id, "amount": amount}
            return shown(await client.call_tool("register_payment", args, meta={"call_id": call_id}))

        # Two payments the client names apart, with equal arguments; the first again; the first
        # id with another amount.
        seen["one"] = await pay("toolu_sdk_one", "10.00")
        seen["two"] = await pay("toolu_sdk_two", "10.00")
        seen["again"] = await pay("toolu_sdk_one", "10.00")
        seen["reused"] = await pay("toolu_sdk_one", "25.00")
        found = await client.call_tool("find_invoices", {"open": True})
        seen["found"] = shown(found)
    print(json.dumps(seen))


asyncio.run(main(sys.argv[1], sys.argv[2]))
