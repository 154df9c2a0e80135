"""The independent side of tests/it/yaml_oracle.rs: PyYAML (what the upstream bridge loads configs
with) and pathlib (how it names paths) judge deploy-gate's config edits.

Reads one JSON object on stdin and writes one JSON list on stdout:
- {"paths": [...]}: for each string, [str(PurePosixPath(s)), str(PurePosixPath(s).with_suffix(".yaml.backup")) or null]
- {"configs": [{"before", "after" (null when deploy-gate refused), "model", "backend", "stages": [[stage, path], ...]}]}:
  for each, what upstream does with `before` and whether `after` loads as exactly that.
"""

import json
import math
import sys
from pathlib import PurePosixPath

import yaml


def upstream_change(text, model, backend, stages):
    """The upstream bridge's change, as documented in its deploy_trained_model: the loaded
    config (an empty one if it loads as a false value), default_model and backend set, then the
    stage map applied to a non-empty list of stages by id, otherwise to a mapping of stages."""
    config = yaml.safe_load(text)
    if not config:
        config = {}
    config["default_model"] = str(PurePosixPath(model))
    config["backend"] = backend
    if stages:
        found = config.get("stages")
        if isinstance(found, list) and len(found) > 0:
            for item in found:
                if isinstance(item, dict) and item.get("id") in stages:
                    item["model"] = stages[item["id"]]
        else:
            if not isinstance(found, dict):
                found = {}
                config["stages"] = found
            for stage, path in stages.items():
                if stage not in found:
                    found[stage] = {}
                found[stage]["model"] = path
    return config


def same(a, b, where="top", assumed=None):
    """Strict equality: same types, same key order, NaN equal to NaN; a pair of containers met
    again (a recursive structure) is taken as equal. Returns a difference or None."""
    if assumed is None:
        assumed = set()
    if isinstance(a, (dict, list)):
        if (id(a), id(b)) in assumed:
            return None
        assumed.add((id(a), id(b)))
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        if len(a) != len(b):
            return f"{where}: {len(a)} keys vs {len(b)}: {list(a)} vs {list(b)}"
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            d = same(ka, kb, f"{where}.key", assumed) or same(va, vb, f"{where}.{ka}", assumed)
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, f"{where}[{i}]", assumed)
            if d:
                return d
        return None
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def duplicate_keys(text):
    """Whether some mapping holds one key twice, as the loader compares keys (merge keys aside)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return False
    seen_nodes = set()
    todo = [root] if root is not None else []
    while todo:
        node = todo.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys = []
            for k, v in node.value:
                todo.append(v)
                if k.tag == "tag:yaml.org,2002:merge":
                    continue
                try:
                    key = yaml.SafeLoader("").construct_object(k, deep=True)
                    hash(key)
                except Exception:
                    continue
                if not (isinstance(key, float) and math.isnan(key)) and key in keys:
                    return True
                keys.append(key)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
    return False


def judge_config(case):
    stages = dict((s, p) for s, p in case["stages"])
    out = {"upstream_ok": True, "upstream_error": None, "duplicates": duplicate_keys(case["before"]), "difference": None}
    try:
        want = upstream_change(case["before"], case["model"], case["backend"], stages)
    except Exception as e:  # upstream's bridge raises: the deploy fails, the config stays
        out["upstream_ok"] = False
        out["upstream_error"] = f"{type(e).__name__}: {e}"[:300]
        return out
    if case["after"] is not None:
        try:
            got = yaml.safe_load(case["after"])
        except Exception as e:
            out["difference"] = f"the result does not load: {type(e).__name__}: {e}"[:300]
            return out
        out["difference"] = same(want, got)
    return out


def judge_path(s):
    p = PurePosixPath(s)
    try:
        backup = str(p.with_suffix(".yaml.backup"))
    except ValueError:
        backup = None
    return [str(p), backup]


def main():
    request = json.load(sys.stdin)
    if "paths" in request:
        result = [judge_path(s) for s in request["paths"]]
    else:
        result = [judge_config(c) for c in request["configs"]]
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
