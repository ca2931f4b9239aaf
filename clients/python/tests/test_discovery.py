"""Discovery through the client: with config discovery, a program finds a Python tool with
search(), reads it with describe() and calls it; declarations() takes a budget."""
import asyncio

import pytest

from ptc_client import AsyncPtcClient, PtcClient, PtcError, Tool


def tools(calls):
    def refund(args):
        calls.append(args)
        return {"refunded": args["amount"]}

    return {
        "billing.refundInvoice": Tool(refund, description="Refund a paid invoice to the customer's card.",
                                      input_schema={"type": "object", "properties": {"amount": {"type": "integer"}},
                                                    "required": ["amount"]}),
        "billing.sendInvoice": Tool(lambda args: None, description="Email an invoice to the customer."),
        # A long description, so that the whole declarations are well past what the short form takes.
        "calendar.createEvent": Tool(lambda args: None, description="Create a calendar event. " + "Details. " * 300),
    }


PROGRAM = """
const { matches } = await search('refund the invoice');
const text = await describe(matches[0].path);
inspect(matches[0].path);
return { declares: text.includes('function refundInvoice(args: {'), result: await billing.refundInvoice({ amount: 2n ** 60n }) };
"""


def test_a_program_finds_a_python_tool_with_search_and_describe_and_calls_it(binary):
    calls = []
    with PtcClient(binary=binary, config={"discovery": True, "timeoutMs": 30000}) as ptc:
        assert "search(" in ptc.info["executionInstructions"]
        result = ptc.run(PROGRAM, tools=tools(calls))
        assert result["status"] == "ok", result
        assert result["output"] == [{"type": "text", "text": "billing.refundInvoice\n", "stream": "stdout"}]
        assert result["value"] == {"declares": True, "result": {"refunded": 2 ** 60}}
        assert calls == [{"amount": 2 ** 60}]


def test_declarations_end_with_search_and_describe_and_list_namespaces_past_the_budget(binary):
    with PtcClient(binary=binary, config={"discovery": True}) as ptc:
        full = ptc.declarations(tools([]))
        assert "function refundInvoice(args: {" in full and "declare function search(" in full
        short = ptc.declarations(tools([]), budget=len(full) - 1)
        assert len(short) <= len(full) - 1
        assert "function refundInvoice" not in short
        assert "//   billing: 2 tools\n" in short and "declare function describe(name: string)" in short
        with pytest.raises(PtcError) as caught:
            ptc.declarations(tools([]), budget=0)
        assert caught.value.message == "declarations: budget must be a positive integer of characters, got 0"
    with PtcClient(binary=binary) as plain:
        assert "declare function search(" not in plain.declarations(tools([]))


def test_the_async_client_has_the_same_discovery(binary):
    async def main():
        calls = []
        async with AsyncPtcClient(binary=binary, config={"discovery": True}) as ptc:
            result = await ptc.run(PROGRAM, tools=tools(calls))
            assert result["value"] == {"declares": True, "result": {"refunded": 2 ** 60}}
            assert "billing: 2 tools" in await ptc.declarations(tools([]), budget=2000)

    asyncio.run(main())
