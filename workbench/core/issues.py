"""Issues: what a pass could not do as asked, or decided on the user's behalf (never silent).

Every preparation step, plan pass, guard and writer reports through :class:`PlanIssue`: the node
it concerns, a :class:`Severity`, a human-readable message and a machine-readable
:class:`IssueCode`. Front ends decide by ``severity`` and ``code``, never by message text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """How much an issue matters. A ``StrEnum``: compares equal to its value ("info", ...)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class IssueCode(StrEnum):
    """What kind of issue it is, for programs (filters, the app's Problems list, tests)."""

    GENERIC = "generic"


@dataclass
class PlanIssue:
    """Something a pass could not do as asked, or a decision it made (``node`` may be "")."""

    node: str
    severity: Severity
    message: str
    code: IssueCode = IssueCode.GENERIC

    def __post_init__(self) -> None:
        self.severity = Severity(self.severity)
        self.code = IssueCode(self.code)

    def record(self) -> dict[str, str]:
        """The human record stamped into a written model's ``workbench.issues`` metadata: node,
        severity and message (the code is for programs in this process)."""
        return {"node": self.node, "severity": str(self.severity), "message": self.message}
