"""Node health: the active checks' parsers and verdicts, the check reporter and the remediation controller."""
