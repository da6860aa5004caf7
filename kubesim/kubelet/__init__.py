"""The simulated kubelet (scriptable pods on the simulator clock) and a Deployment controller."""

from kubesim.kubelet.node import Kubelet, KubeletSettings
from kubesim.kubelet.script import SCRIPT_ANNOTATION, ScriptError

__all__ = ["SCRIPT_ANNOTATION", "Kubelet", "KubeletSettings", "ScriptError"]
