"""The command line that runs one of the sandbox's own programs (agent, pause, container init) in Python.

`python -m kubesim.kubelet.sandbox.agent` would first import kubesim.kubelet, which imports the whole
simulator: tens of MiB in every container's init. The bootstrap below registers the three parent packages
as empty namespaces instead, so a program imports only its own modules and the standard library (`-I -S`:
no site packages, no environment variables, no current directory on the path).
"""

from __future__ import annotations

import sys
from pathlib import Path

SOURCE_ROOT = str(Path(__file__).resolve().parents[3])  # the directory that holds kubesim/
PACKAGE = "kubesim.kubelet.sandbox"

_BOOTSTRAP = """\
import sys, types
root = sys.argv.pop(1)
for name in ("kubesim", "kubesim.kubelet", "kubesim.kubelet.sandbox"):
    package = types.ModuleType(name)
    package.__path__ = [root + "/" + name.replace(".", "/")]
    sys.modules[name] = package
program = sys.argv.pop(1)
__import__("kubesim.kubelet.sandbox." + program, fromlist=["main"]).main(sys.argv[1:])
"""


def python_argv(program: str, *args: str, python: str = sys.executable) -> list[str]:
    """argv that runs `kubesim.kubelet.sandbox.<program>.main(list(args))`."""
    return [python, "-I", "-S", "-c", _BOOTSTRAP, SOURCE_ROOT, program, *args]
