#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/) from the repository's
fixtures, the example files and envelopes signed with the deploy-gate CLI.

Run from the repository root after `cargo build`: python3 fuzz/make_seeds.py
The envelopes are signed with the fuzz targets' fixed key (32 bytes of 7) and a fresh one.
"""
import base64, hashlib, json, os, pathlib, struct, subprocess, tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
CLI = ROOT / "target" / "debug" / "deploy-gate"
FIX = ROOT / "tests" / "fixtures" / "parity"


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def lines(path, n=None, skip=0):
    with open(path, "rb") as f:
        out = f.read().split(b"\n")
    return [l for l in out[skip:] if l.strip()][: n if n else None]


def head(path, limit):
    data = path.read_bytes()[:limit]
    return data[: data.rfind(b"\n") + 1] or data


audits = sorted(FIX.glob("*/audit.jsonl")) + [ROOT / "www/examples/audit.jsonl"]

# audit_line: a few lines of every shape (stages, completions, the writer's shape, broken ones).
for a in audits:
    for l in lines(a, 6) + lines(a, 4, skip=200):
        if len(l) <= 4096:
            put("audit_line", l)
for l in [b'{"pipeline_id":1,"verdict":"PASS","is_complete":true,"error":null}', b'{"pipeline_id":"\\u00e9","stage_id":"s","input":"a\\nb"}',
          b'{"pipeline_id":"x","stage_id":"s","state_snapshot":{"input_text":"t","stage_outputs":{"s":[1,{"a":null}]}}}', b'[1,2]', b'{"a":1e400,"s":-0}', b'\xef\xbb\xbf{"pipeline_id":"b"}', b'{"pipeline_id":"cut","stage_id"']:
    put("audit_line", l)

# audit_log: the head of each log (whole lines), and a tricky one (BOM, CRLF, invalid UTF-8).
for a in audits:
    put("audit_log", head(a, 12 << 10))
put("audit_log", b"\xef\xbb\xbf" + '{"pipeline_id":"é-1","stage_id":"s0","stage_type":"llm","input":"naïve 🚀"}\r\n'.encode()
    + b'{"pipeline_id":"bad","stage_id":"s0","input":"\xc3\x28"}\r\n\r\n  \n{"pipeline_id":"cut","stage_id"\n'
    + b'{"pipeline_id":"\xc3\xa9-1","verdict":"pass","is_complete":true,"error":null}\r\n{"pipeline_id":"tail","stage_id":"s","input":"x"}')

# segment_wire: segments in the wire format (DGS2), as Segment::to_bytes writes them.
def segment(file, counts, skips, pipelines):
    out = b"DGS2" + struct.pack("<I", file) + struct.pack("<7Q", *counts)
    out += struct.pack("<I", len(skips))
    for reason, count, first in skips:
        out += struct.pack("<BQI", reason, count, len(first)) + b"".join(struct.pack("<Q", x) for x in first)
    out += struct.pack("<I", len(pipelines))
    for text, numeric, has_input, u32s, u64s in pipelines:
        t = text.encode()
        out += struct.pack("<I", len(t)) + t + bytes([numeric, has_input]) + struct.pack("<4I", *u32s) + struct.pack("<5Q", *u64s)
    return out

put("segment_wire", segment(0, [1 << 28, 0, 0, 0, 0, 0, 0], [], []))
put("segment_wire", segment(0, [1 << 28, 5, 1, 2, 2, 1, 1], [(1, 1, [3])], [("p-1", 0, 1, [0, 0, 0, 40], [2, 0, 90, 0, 120]), ("42", 1, 0, [0, 0, 0, 0], [0, 0, 0, 2**64 - 1, 0])]))
put("segment_wire", segment(3, [4096, 9, 0, 3, 3, 2, 2], [(0, 2, [1, 4]), (5, 1, [7]), (6, 3, [2, 5, 8])], [("é", 0, 1, [3, 3, 3, 10], [1, 5, 6, 0, 7]), ("b", 0, 0, [3, 3, 3, 5], [1, 0, 0, 1, 9])]))

# verdicts: every format.
for v in sorted(FIX.glob("*/old_verdicts.jsonl"))[:3] + [ROOT / "www/examples/new_verdicts.jsonl"]:
    ls = lines(v, 8)
    put("verdicts", b"\n".join(ls) + b"\n")
    recs = [json.loads(l) for l in ls]
    put("verdicts", json.dumps(recs))
    put("verdicts", json.dumps({str(r["pipeline_id"]): r.get("verdict") for r in recs}, ensure_ascii=False))
    put("verdicts", "pipeline_id,verdict\n" + "".join(f'{r["pipeline_id"]},{r.get("verdict") or ""}\n' for r in recs))
    put("verdicts", "pipeline_id\tverdict\terror\n" + "".join(f'{r["pipeline_id"]}\t{r.get("verdict") or ""}\t\n' for r in recs))
put("verdicts", b'\xef\xbb\xbf{"pipeline_id":"a","verdict":9}\n{"pipeline_id":"a","verdict":true}\n{"pipeline_id":"b","error":"timeout"}\n{"pipeline_id":"c","stage_id":"s"}\r\n')
put("verdicts", '"pipeline_id","verdict"\r\n"a,1","PASS"\r\n"b ""q""",FAIL\r\n')
put("verdicts", lines(audits[0], 30)[-1] + b"\n")

# trajectory: JSONL and array.
for t in sorted(FIX.glob("*/old_trajectories.jsonl"))[:3] + [ROOT / "www/examples/new_trajectories.jsonl"]:
    ls = lines(t, 5)
    put("trajectory", b"\n".join(ls) + b"\n")
    put("trajectory", b"[" + b",\n".join(ls) + b"]")
put("trajectory", '{"trajectory_id":"t","overall_judge_score":0.9007499999999999,"lcf_score":1}\n{"goal_completion_score":1}\n')

# sniff: "name\nhead".
for name, path in [("audit.jsonl", audits[0]), ("old_verdicts.jsonl", FIX / "approved/old_verdicts.jsonl"), ("candidate-trajectories.jsonl", FIX / "approved/new_trajectories.jsonl"), ("baseline.csv", None), ("logs.jsonl.gz", None)]:
    body = head(path, 2048) if path else b"pipeline_id,verdict\na,PASS\n"
    put("sniff", name.encode() + b"\n" + body)
put("sniff", b'prod results.json\n\xef\xbb\xbf  [\n {"pipeline_id": "a",\n  "verdict": "PASS"}]')

# envelopes and statements, signed with the CLI.
with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    der = bytes([0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]) + bytes([7] * 32)
    fixed = tmp / "fixed.pem"
    fixed.write_text("-----BEGIN PRIVATE KEY-----\n" + base64.b64encode(der).decode() + "\n-----END PRIVATE KEY-----\n")
    other = tmp / "other.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", other], check=True)
    for key in (fixed, other):
        pub = subprocess.run(["openssl", "pkey", "-in", key, "-pubout"], check=True, capture_output=True).stdout
        put("pem_keys", key.read_bytes())
        put("pem_keys", pub)
    put("pem_keys", pub.replace(b"\n", b"\r\n"))
    envs = []
    for case, min_samples, model, digest, target in [("approved", "20", "agent-v2", "a" * 64, "config/serving.yaml"), ("both-regressed", "5", "m", "c" * 64, "gateway")]:
        f = FIX / case
        report = tmp / f"{case}.json"
        subprocess.run([CLI, "evaluate", "--audit", f / "audit.jsonl", "--old-verdicts", f / "old_verdicts.jsonl", "--new-verdicts", f / "new_verdicts.jsonl",
                        "--min-samples", min_samples, "--max-samples", "10", "--out", report], capture_output=True)
        env = tmp / f"{case}.dsse.json"
        common = ["--model", model, "--model-digest", "sha256:" + digest, "--target", target, report]
        subprocess.run([CLI, "sign", "--key", fixed, *common, "--out", env], check=True, capture_output=True)
        envs.append(env.read_bytes())
        both = tmp / f"{case}.2.dsse.json"
        subprocess.run([CLI, "sign", "--key", other, "--envelope", env, *common, "--out", both], check=True, capture_output=True)
        envs.append(both.read_bytes())
    for e in envs:
        put("envelope", e)
        payload = base64.b64decode(json.loads(e)["payload"])
        put("statement", payload)
    put("envelope", envs[0].replace(b'"payloadType"', b'"payloadType":"x","payloadType"', 1))
    # A small statement of the right shape (its report is not complete).
    put("statement", json.dumps({"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "m", "digest": {"sha256": "d" * 64}}],
                                 "predicateType": "https://slsa.dev/verification_summary/v1",
                                 "predicate": {"verifier": {"id": "https://deploy-gate.dev/verifier/v1"}, "timeVerified": "2026-11-30T07:23:55+01:00",
                                               "resourceUri": "gateway", "policy": {"uri": "https://deploy-gate.dev/policy/v1"}, "verificationResult": "PASSED",
                                               "verifiedLevels": ["DEPLOY_GATE_APPROVED"], "https://deploy-gate.dev/report/v1": {"decision": {"approved": True, "reason": "ok"}}}}))

# diff_report: reports of earlier builds (small ones), the envelopes signed with the fixed key.
for r in [ROOT / "tests/fixtures/diff/previous/typed-ids.report.json", ROOT / "tests/fixtures/diff/first-build/both-regressed.report.json"]:
    put("diff_report", r.read_bytes())
for e in envs[:2]:
    put("diff_report", e)

# timestamps.
for t in ["2026-11-29T20:33:17Z", "2000-02-29T12:00:00.123+02:00", "1970-01-01T00:00:00z", "2026-12-31t23:59:60-05:30", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00.000000001Z", "2026-11-30T07:23:55+01:00"]:
    put("timestamp", t)
put("timestamp", struct.pack("<q", 1_796_126_400) + b"2026-02-28T00:00:00Z")

# deploy_config: the shapes of the issue and the tests.
for c in ["# gateway config\nbackend: transformers  # was vllm\ndefault_model:\n  /models/old\nstages:\n  plan:\n    model: small\n\nlog_level: info\n",
          "a: 1\r\nb: [1, 2]\r\n", "", "x: 1", "stages:\n  s1:\n    default_model: keep\ndefault_model: old\n",
          "default_model:\n- a\n- b\nnext: 1\n", "{a: 1}\n", "a: 1\n---\nb: 2\n", "---\na: 1\n...\n",
          "default_model: &base /models/old\njudge_model: *base\nbackend: vllm\n", "- default_model: a\n- b\n",
          "\ufeffdefault_model: old\nbackend: api\n", "%YAML 1.1\n---\ndefault_model: old\n", "{default_model: old, backend: api}\n",
          "'default_model': \"old\"\n\"backend\": !!str vllm\nstages: {plan: {model: a}, respond: {model: b, temperature: 0.2}}\n",
          "default_model: a\ndefault_model: b\n", "default_model: |\n  multi\n  line\nbackend: >-\n  folded\n", "? default_model\n: old\nbase: &b {model: x}\nstages:\n  plan: *b\n  respond:\n    <<: *b\n"]:
    put("deploy_config", c)
