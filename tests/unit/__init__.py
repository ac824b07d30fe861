"""Fast tests: in-process, no trainer run, no sshd, no CLI process (`pytest tests/unit`)."""
