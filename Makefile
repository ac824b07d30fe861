# Two commands matter: `make demo` and `make test`. Each builds .venv itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck sshd clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch is pinned to the CPU build that pip finds on this machine's disk.
	$(BIN)/python -m pip install -q -e '.[torch,dev]'
	touch $(STAMP)

# The SSH tests need a real sshd binary; install Debian's when missing and we may.
sshd:
	@if ! command -v sshd >/dev/null 2>&1 && ! test -x /usr/sbin/sshd; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing openssh-server (needed by the SSH tests)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null; \
	  else echo "sshd missing and not root: SSH tests will skip (or fail with REQUIRE_ALL=1)"; fi; \
	fi

demo: $(STAMP)
	$(BIN)/dflash-doctor demo

test: $(STAMP) sshd
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check agent tools playbooks tests examples benchmarks
	$(BIN)/ruff format --check agent tools playbooks tests examples benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
