# Two commands matter: `make demo` and `make test`. Each builds .venv itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck system-deps bytecode clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch is pinned to the CPU build that pip finds on this machine's disk.
	$(BIN)/python -m pip install -q -e '.[torch,dev,foreign]'
	touch $(STAMP)

# The SSH tests need a real sshd, the HTML report test a real headless browser, the live
# health test a real strace, the guided-terminal test a real tmux: install Debian's
# packages when they are missing and we may (root with apt-get).
DEBS_NEEDED := $(if $(wildcard /usr/sbin/sshd),,openssh-server) $(if $(shell command -v chromium),,chromium) $(if $(shell command -v strace),,strace) $(if $(shell command -v tmux),,tmux)
system-deps:
	@if [ -n "$(strip $(DEBS_NEEDED))" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $(strip $(DEBS_NEEDED)) (needed by the SSH, browser, strace and terminal tests)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBS_NEEDED) >/dev/null; \
	  else echo "missing $(DEBS_NEEDED) and not root: those tests skip (or fail with REQUIRE_ALL=1)"; fi; \
	fi

# The project's own bytecode, as a wheel install has it: an editable install has none, and
# where PYTHONDONTWRITEBYTECODE is set (this machine kind sets it) Python never writes it,
# so every command compiled its modules again, about 50 ms of `exec`'s start-up
# (BENCHMARKS.md, issue 15). compileall rewrites only what changed.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q agent tools playbooks

demo: $(STAMP) bytecode
	$(BIN)/python -m examples.demo

# Three workers on two cores, a group of test files each at a time: the suite's time is
# real trainer runs and CLI processes, much of it waiting (a stalled log's 30 s of quiet,
# a callback's sleep, a trainer polled until it reaches a step), so a third worker uses
# cores two would leave idle (BENCHMARKS.md: at three, user+sys 1,418 s over 854 s). Files
# stay whole on one worker, and files sharing a costly session fixture share a worker
# (tests/conftest.py's groups, handed out costliest first; xdist's own reordering by test
# count is off), so each fixture is built once. One file alone:
# `.venv/bin/python -m pytest tests/e2e/test_cli.py`.
TEST_WORKERS ?= 3
test: $(STAMP) system-deps bytecode
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check agent tools playbooks tests examples benchmarks
	$(BIN)/ruff format --check agent tools playbooks tests examples benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
