"""End-to-end tests: the installed CLI as a process, real trainer runs on torch, a real sshd."""
