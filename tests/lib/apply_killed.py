"""An apply that SIGKILLs itself at a chosen point, for tests/e2e/test_apply_recovery.py.

``python -m tests.lib.apply_killed WS KILL_AT`` plans and applies lock-warmup (hook route) on
the workspace's trainer through the real operations, and SIGKILLs its own process right
after the operation named by KILL_AT returns: ``step:NAME`` once the journal records
step NAME, ``op:NAME`` after the first NAME operation (``op:stop``: the trainer has been
stopped and nothing started yet), ``restore`` after the first file a rollback restored.
Nothing is cleaned up: that is the point. (The collaborator is injected: Transaction takes
any Remote, and this one only adds the kill.)"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
from typing import Any

from playbooks import LockWarmup, Remote, Transaction
from playbooks.site import site
from tools.transport import LocalTransport


class KillingRemote(Remote):
    kill_at = ""
    rolling_back = False

    def _op(self, *, limit_s: float = 60.0, **op: Any) -> dict[str, Any]:
        answer = super()._op(limit_s=limit_s, **op)
        kind = op["op"]
        if kind == "write" and str(op.get("path", "")).endswith("/apply.journal"):
            step = json.loads(base64.b64decode(op["data"]))["step"]
            self.rolling_back = step == "rolling_back"
            if self.kill_at == f"step:{step}":
                os.kill(os.getpid(), signal.SIGKILL)
        elif self.kill_at == f"op:{kind}" or (
            self.kill_at == "restore" and kind == "write" and self.rolling_back
        ):
            os.kill(os.getpid(), signal.SIGKILL)
        return answer


def transaction(ws: str, remote: Remote, **kw: Any) -> Transaction:
    the_site = site(
        workspace=ws,
        train_log=f"{ws}/logs/metrics.txt",
        stdout_log=f"{ws}/logs/console.txt",
        interpreter=sys.executable,
        launch="launch.sh",
        pid_file=f"{ws}/logs/train.pid",
    )
    return Transaction(LockWarmup(knob=None), the_site, remote, **kw)


def main(argv: list[str]) -> int:
    ws, kill_at = argv
    remote = KillingRemote(LocalTransport(), interpreter=sys.executable)
    remote.kill_at = kill_at
    # A baseline no run reaches: the apply always ends in a rollback, so every step,
    # the rollback's included, is reached by some KILL_AT.
    tx = transaction(ws, remote, baseline_tok_s=1e12, run_timeout=4)
    outcome = tx.apply(tx.plan())
    print(json.dumps(outcome.model_dump()))
    return 3  # not killed: the test asked for a point the apply never reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
