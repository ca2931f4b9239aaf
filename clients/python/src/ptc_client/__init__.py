"""ptc_client: run model-written TypeScript programs in ptc, with Python functions as their tools.

    from ptc_client import PtcClient
    with PtcClient(binary="dist/ptc") as ptc:
        result = ptc.run("return await add(2, 3)", tools={"add": lambda a, b: a + b})
"""
from ._protocol import DEFAULT, PROTOCOL_VERSION, PtcError, Tool
from ._sync import PtcClient, RunHandle
from ._async import AsyncPtcClient, AsyncRunHandle

__all__ = ["PtcClient", "AsyncPtcClient", "RunHandle", "AsyncRunHandle", "PtcError", "Tool", "DEFAULT", "PROTOCOL_VERSION"]
