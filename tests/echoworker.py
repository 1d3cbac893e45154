"A fake execution worker for stateful_env tests: it runs nothing and echoes the literal the programs `respond` writes."
import re
from types import SimpleNamespace
from pettingllms_nb.envs.stateful import TOOL_MARKER


class EchoWorker:
    "Executes nothing: echoes the literal of the programs `respond` writes (full or compact); any other program 'crashes'."
    async def run(self, code, stdin="", expected=None, time_limit=None, memory_limit=None):
        m = re.fullmatch(r"actions = (.*)\nprint\('\*\*Actions List\*\*:', actions\)", code.strip())
        if m: return SimpleNamespace(verdict='OK', stdout=f"{TOOL_MARKER} {m.group(1)}\n", stderr='')
        m = re.fullmatch(r'print\("([\w ,]*)"\)', code.strip())
        if m: return SimpleNamespace(verdict='OK', stdout=f"{m.group(1)}\n", stderr='')
        return SimpleNamespace(verdict='RE', stdout='', stderr='Traceback (most recent call last): ...')
