"""The worker's tools: bounded commands, background jobs, confined files, arXiv, GitHub, GPU status.

Heavy clients (arxiv, PyGithub, NVML) are imported only when a tool needs them, so importing the
package stays cheap (job runners import it too).
"""

from toolkit.commands import CommandResult
from toolkit.env import is_secret_name, scrubbed_env
from toolkit.errors import ToolkitError
from toolkit.jobs import JobStatus
from toolkit.procs import kill_process_group
from toolkit.sandbox import SandboxPolicy
from toolkit.toolkit import PhaseClock, Toolkit

__all__ = [
    "CommandResult",
    "JobStatus",
    "SandboxPolicy",
    "PhaseClock",
    "Toolkit",
    "ToolkitError",
    "is_secret_name",
    "kill_process_group",
    "scrubbed_env",
]
