"""Registers model versions through MLflow's own Python client, for tests/it/mlflow_cli.rs.

One process serves a whole test run (importing mlflow takes seconds): each line on stdin is a
JSON command, each answer one JSON line on stdout.

  {"op": "register", "url": U, "name": N, "dir": D}   -> {"version": "3", "source": "..."}
      logs the files under D as a run's artifacts (`model/`) and registers them as a new
      version of N (the registered model is created when missing)
  {"op": "alias", "url": U, "name": N, "alias": A, "version": V}  -> {}
      points the alias at V (a plain client's move, no decision involved)
  {"op": "tags", "url": U, "name": N, "version": V}    -> {"tags": {...}}

Optional "user" and "password" give MLflow's basic-auth credentials for that command.
Errors answer {"error": "..."}.
"""

import json
import os
import sys

from mlflow import MlflowClient
from mlflow.exceptions import MlflowException


def client(cmd):
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        os.environ.pop(var, None)
    if cmd.get("user"):
        os.environ["MLFLOW_TRACKING_USERNAME"] = cmd["user"]
        os.environ["MLFLOW_TRACKING_PASSWORD"] = cmd["password"]
    return MlflowClient(tracking_uri=cmd["url"], registry_uri=cmd["url"])


def register(cmd):
    c = client(cmd)
    exp = c.get_experiment_by_name("deploy-gate-tests")
    eid = exp.experiment_id if exp else c.create_experiment("deploy-gate-tests")
    run = c.create_run(eid)
    c.log_artifacts(run.info.run_id, cmd["dir"], "model")
    c.set_terminated(run.info.run_id)
    source = run.info.artifact_uri + "/model"
    try:
        c.create_registered_model(cmd["name"])
    except MlflowException as e:
        if e.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
    mv = c.create_model_version(cmd["name"], source, run_id=run.info.run_id)
    return {"version": str(mv.version), "source": source}


def alias(cmd):
    client(cmd).set_registered_model_alias(cmd["name"], cmd["alias"], cmd["version"])
    return {}


def tags(cmd):
    mv = client(cmd).get_model_version(cmd["name"], cmd["version"])
    return {"tags": dict(mv.tags)}


OPS = {"register": register, "alias": alias, "tags": tags}

# MLflow prints links to the runs it ends: they go to stderr, the answers alone to stdout.
answers = sys.stdout
sys.stdout = sys.stderr
for line in sys.stdin:
    try:
        cmd = json.loads(line)
        out = OPS[cmd["op"]](cmd)
    except Exception as e:  # noqa: BLE001  (every error is the test's to see)
        out = {"error": f"{type(e).__name__}: {e}"}
    answers.write(json.dumps(out) + "\n")
    answers.flush()
