"""The commented ``doctor.toml`` that ``init`` writes (``tools.profile.write_template``):
every setting a target profile takes, each with what it is for and an example."""

TEMPLATE = """\
# dflash-doctor target profiles.
#
# One [targets.NAME] table per trainer. Paths are on the target. Anything left out
# is looked for under `workspace` (the `layout` probe says what it took and why):
#   checkpoints   a directory of entries named with a step or epoch: step_N/,
#                 checkpoint-N/, epoch_E_step_S/, global_stepN/, epoch=E-step=S.ckpt, ...
#   train_log     JSON lines / CSV with a step field, trainer_state.json, `Step N` text
#   stdout_log    *stdout*, nohup.out, *.log, *.out
#   scripts       *.py (with configs and launch files for checksums)
#   dataset       JSON lines with a text field, files under data/
# Environment variables override this file: DFLASH_DOCTOR_DEFAULT_TARGET,
# DFLASH_DOCTOR_TARGETS__TRAINER__INTERPRETER=/other/python, ...

# default_target = "trainer"

[targets.trainer]
# How to reach it: "local", "ssh://user@host[:port]", plus container hops after
# the host, e.g. "ssh://root@gpu-host/pct:200" (LXC 200 on a Proxmox host).
uri = "local"

# The Python the trainer runs with (a venv's, say): probes run on it, so versions
# and packages are the trainer's. Unset, it is found on the target: the running
# trainer's, else WORKSPACE/.venv (venv, env, a conda env), else the launch file's,
# else a python3 on PATH that can import torch, else python3.
# interpreter = "/workspace/.venv/bin/python"

workspace = "/workspace"
# checkpoints = "/workspace/checkpoints"
# checkpoint_pattern = '^ckpt_e(?P<epoch>\\d+)_s(?P<step>\\d+)$'   # names not recognised
# train_log = "/workspace/checkpoints/train_log.jsonl"
# stdout_log = "/workspace/checkpoints/train_stdout.log"
# scripts = ["/workspace/train_dflash.py", "/workspace/configs/*.yaml"]
# dataset = ["/workspace/data/prompts.jsonl"]
# Flight Recorder dumps (TORCH_FR_DUMP_TEMP_FILE's prefix and a rank) that lie outside
# the workspace, where no live trainer's environment names them:
# flight_recorder = ["/tmp/nccl_trace_rank_*"]
# torch's structured trace (TORCH_TRACE=DIR) outside the workspace:
# torch_trace = ["/var/tmp/torch_trace"]

# Compile caches when the trainer sets them itself (else TORCHINDUCTOR_CACHE_DIR /
# TRITON_CACHE_DIR of the login environment, else torch's and triton's defaults).
# inductor_cache = "/workspace/compile_cache"
# extra_caches = ["/workspace/compile_cache"]    # more caches it is set up to fill
# triton_cache = "/root/.triton/cache"

# The trainer's launch file (a shell script whose `exec` line starts it) or launch
# command; playbooks restart it with this (else with the running trainer's command
# line, working directory and environment). The script it runs also identifies its
# process unless process_match says otherwise.
# launch = "/workspace/launch.sh"
# launch = "cd /workspace && python train_dflash.py --resume"
# process_match = ["train_dflash.py"]
# py-spy on the target, for the live probe's stacks of the running trainer (unset: the
# target's PATH, or beside its Python). Where the target has none, diagnose and resume
# copy this machine's py-spy into a private temporary directory there and remove it after;
# health checks never do.
# py_spy = "/opt/tools/bin/py-spy"

# Checkpoint metadata file names, first found wins.
# metadata_names = ["metadata.json"]
# Where a checkpoint records a quantity under a name not read by default (dotted keys
# reach into nested records). Quantities: torch, torch_git, triton, cuda, python,
# transformers, lightning, dtype, dataset_size, tokens_per_s, config.
# metadata_keys = { torch = "env.pt_ver", dataset_size = "data.n_prompts" }
# Saved environment files (pip freeze, conda env export, torch's collect_env output):
# the versions the run was started with, a baseline when checkpoints record none.
# env_files = ["/workspace/pip-freeze.txt"]

# Package integrity (files against dist-info/RECORD): "py" hashes .py files, "all"
# hashes everything (several GB for a CUDA torch).
# integrity_packages = ["torch", "triton"]
# integrity_mode = "py"

# torch_runtime imports torch on the target (seconds): unset, it runs only when asked
# for by name (--only torch_runtime); true, in every sweep; false, never.
# torch_import = true

# Per-probe time limits in seconds, and probes run at once on the target.
# timeouts = { trainlog = 300, integrity = 600 }
# parallel = 4

[targets.trainer.log_fields]
# What the doctor inferred is in the trainlog fact's "schema" (format, which field is
# step, loss, throughput, time, groups, what it ignored); set here what it got wrong.
# Field names when they are not among the common ones (step/global_step/_step,
# loss/train/loss, tok/s/tokens_per_second(_per_gpu)/ktok_s/..., time/timestamp).
# format = "csv"                 # or "jsonl", "trainer_state", "text"
# step = "global_step"
# tokens = "num_input_tokens_seen"  # tokens/s derived from it when no field holds it
# throughput = "tps"
# throughput_unit = "tok/s"      # or "ktok/s", "mtok/s"
# group = ["role", "device"]     # one series per device; [] for one series

# Extra error signatures for train_stdout.log:
# [[targets.trainer.signatures]]
# id = "my_assert"
# pattern = "AssertionError: shapes"
# means = "the collate function produced mismatched shapes"
# needles = ["AssertionError"]
"""
