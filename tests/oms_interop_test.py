"""Interoperability with the OpenSSF Model Signing reference implementation (`model-signing`).

`model_signing sign` signs many model trees; deploy-gate computes the same subject digest
(`deploy-gate digest --oms`) and verifies the bundle at the deploy step (`deploy-gate verify
--trainer-key`), and both refuse the same tampering. Run by scripts/test.sh:

    DEPLOY_GATE_BIN=target/release/deploy-gate python -m pytest -q tests/oms_interop_test.py

with `model-signing` (and pyOpenSSL, which it imports) installed in that Python.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("DEPLOY_GATE_BIN", str(ROOT / "target/release/deploy-gate"))
MODEL_SIGNING = [sys.executable, "-m", "model_signing"]
REPORT = ROOT / "tests/fixtures/compat/scenarios/point-default/report.json"


def run(args, check=True):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def subject_digest(sig: Path) -> str:
    bundle = json.loads(sig.read_text())
    statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    return statement["subject"][0]["digest"]["sha256"]


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    out = {}
    for curve, name in [("prime256v1", "p256"), ("secp384r1", "p384")]:
        key, pub = d / f"{name}.key.pem", d / f"{name}.pub.pem"
        run(["openssl", "ecparam", "-name", curve, "-genkey", "-noout", "-out", key])
        run(["openssl", "ec", "-in", key, "-pubout", "-out", pub])
        out[name] = (key, pub)
    run([BIN, "keygen", "--out", d / "reviewer"])
    out["reviewer"] = (d / "reviewer.key.pem", d / "reviewer.pub.pem")
    return out


def write(root: Path, rel: str, data: bytes):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def tree_nested(root):
    for i in range(3):
        for j in range(3):
            write(root, f"d{i}/e{j}/f{i}{j}.bin", os.urandom(1000 * (i + j + 1)))
    write(root, "a/b", b"1")
    write(root, "a.b/c", b"2")
    write(root, "a-b", b"3")


def tree_names(root):
    write(root, "tokenizer/ünïcödé/vocab é.txt", "é".encode())
    write(root, "weights/layer 0/part 0.bin", os.urandom(4096))
    write(root, "日本語/モデル.json", b"{}")
    write(root, "emoji 🙂.txt", b"smile")


def tree_empty_files(root):
    write(root, "empty.bin", b"")
    write(root, "sub/empty too", b"")
    write(root, "weights.bin", os.urandom(100))


def tree_ignored(root):
    write(root, "weights.bin", os.urandom(100))
    write(root, ".git/HEAD", b"ref: refs/heads/main\n")
    write(root, ".git/objects/ab/cdef", os.urandom(50))
    write(root, ".github/workflows/ci.yml", b"on: push\n")
    write(root, ".gitignore", b"*.tmp\n")
    write(root, ".gitattributes", b"*.bin binary\n")
    write(root, "sub/.git/not-ignored", b"only at the root")


def tree_large(root):
    # 1 GiB, sparse (a few blocks written), so it takes no disk to speak of.
    p = root / "weights.bin"
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "wb") as f:
        f.truncate(1 << 30)
        for off in (0, 123_456_789, (1 << 30) - 4096):
            f.seek(off)
            f.write(os.urandom(4096))
    write(root, "config.json", b"{}")


TREES = {
    "nested": tree_nested,
    "names": tree_names,
    "empty-files": tree_empty_files,
    "ignored-paths": tree_ignored,
    "large-1GiB": tree_large,
}


def decision(tmp: Path, model: Path, keys) -> Path:
    env = tmp / "decision.dsse.json"
    run([BIN, "sign", REPORT, "--key", keys["reviewer"][0], "--model", "m", "--model-path", model,
         "--target", "config.yaml", "--out", env])
    return env


def verify(env: Path, model: Path, keys, trainer: str, extra=()):
    return run([BIN, "verify", env, "--trusted-key", keys["reviewer"][1], "--model-path", model,
                "--target", "config.yaml", "--max-age", "100years", "--trainer-key", keys[trainer][1],
                *extra], check=False)


@pytest.mark.parametrize("curve", ["p256", "p384"])
@pytest.mark.parametrize("tree", sorted(TREES))
def test_model_signing_signs_deploy_gate_verifies(tmp_path, keys, tree, curve):
    if tree == "large-1GiB" and curve == "p384":
        pytest.skip("one large run is enough")
    model = tmp_path / "model"
    model.mkdir()
    TREES[tree](model)
    sig = model / "model.sig"
    run([*MODEL_SIGNING, "sign", "key", "--private_key", keys[curve][0], "--signature", sig, model])
    want = subject_digest(sig)
    got = run([BIN, "digest", "--oms", model]).stdout.strip()
    assert got == f"sha256:{want}"
    env = decision(tmp_path, model, keys)
    p = verify(env, model, keys, curve)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["trainer"]["model_digest"] == f"sha256:{want}"
    assert out["model_digest"] == f"sha256:{want}"
    assert out["trainer"]["same_model_by"] == "digest"
    # Both refuse a changed file.
    victim = sorted(p for p in model.rglob("*") if p.is_file() and p.name != "model.sig"
                    and not any(part.startswith(".git") for part in p.relative_to(model).parts))[0]
    with open(victim, "ab") as f:
        f.write(b"tampered")
    ref = run([*MODEL_SIGNING, "verify", "key", "--public_key", keys[curve][1], "--signature", sig, model],
              check=False)
    assert ref.returncode != 0
    p = verify(env, model, keys, curve)
    assert p.returncode == 2
    # The decision names the untampered model: its own check fails first, or the trainer's.
    assert json.loads(p.stdout)["check"] in ("file_digest", "subject_digest")


def test_single_file_model(tmp_path, keys):
    model = tmp_path / "model.safetensors"
    model.write_bytes(os.urandom(10_000))
    sig = tmp_path / "model.sig"
    run([*MODEL_SIGNING, "sign", "key", "--private_key", keys["p256"][0], "--signature", sig, model])
    assert run([BIN, "digest", "--oms", model]).stdout.strip() == f"sha256:{subject_digest(sig)}"
    env = decision(tmp_path, model, keys)
    p = verify(env, model, keys, "p256", ["--model-signature", sig])
    assert p.returncode == 0, p.stdout + p.stderr


def test_shards_digest(tmp_path, keys):
    model = tmp_path / "model"
    model.mkdir()
    tree_nested(model)
    write(model, "big.bin", os.urandom(300_000))
    sig = tmp_path / "shards.sig"
    code = (
        "import sys\n"
        "from model_signing import hashing, signing\n"
        "hc = hashing.Config().use_shard_serialization(shard_size=65536)\n"
        "signing.Config().use_elliptic_key_signer(private_key=sys.argv[1]).set_hashing_config(hc)"
        ".sign(sys.argv[2], sys.argv[3])\n"
    )
    run([sys.executable, "-c", code, keys["p256"][0], model, sig])
    got = run([BIN, "digest", "--oms", "--shard-size", "65536", model]).stdout.strip()
    assert got == f"sha256:{subject_digest(sig)}"
    env = decision(tmp_path, model, keys)
    p = verify(env, model, keys, "p256", ["--model-signature", sig])
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["trainer"]["same_model_by"] == "files"


def test_a_planted_symlink_is_refused_by_both(tmp_path, keys):
    model = tmp_path / "model"
    model.mkdir()
    tree_empty_files(model)
    sig = tmp_path / "model.sig"
    run([*MODEL_SIGNING, "sign", "key", "--private_key", keys["p256"][0], "--signature", sig, model])
    env = decision(tmp_path, model, keys)
    (model / "passwd").symlink_to("/etc/passwd")
    ref = run([*MODEL_SIGNING, "verify", "key", "--public_key", keys["p256"][1], "--signature", sig, model],
              check=False)
    assert ref.returncode != 0
    p = verify(env, model, keys, "p256", ["--model-signature", sig])
    assert p.returncode == 2
    assert json.loads(p.stdout)["check"] == "symlink"


def test_certificate_method(tmp_path, keys):
    d = tmp_path / "pki"
    d.mkdir()
    (d / "ca.ext").write_text("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n")
    (d / "leaf.ext").write_text("keyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\n")
    run(["openssl", "ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", d / "root.key"])
    run(["openssl", "req", "-x509", "-new", "-key", d / "root.key", "-subj", "/CN=Root", "-days", "30",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
         "-out", d / "root.pem"])
    run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", d / "int.key"])
    run(["openssl", "req", "-new", "-key", d / "int.key", "-subj", "/CN=Intermediate", "-out", d / "int.csr"])
    run(["openssl", "x509", "-req", "-in", d / "int.csr", "-CA", d / "root.pem", "-CAkey", d / "root.key",
         "-CAcreateserial", "-days", "30", "-extfile", d / "ca.ext", "-out", d / "int.pem"])
    run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", d / "leaf.key"])
    run(["openssl", "req", "-new", "-key", d / "leaf.key", "-subj", "/CN=trainer", "-out", d / "leaf.csr"])
    run(["openssl", "x509", "-req", "-in", d / "leaf.csr", "-CA", d / "int.pem", "-CAkey", d / "int.key",
         "-CAcreateserial", "-days", "30", "-extfile", d / "leaf.ext", "-out", d / "leaf.pem"])
    model = tmp_path / "model"
    model.mkdir()
    tree_names(model)
    sig = model / "model.sig"
    run([*MODEL_SIGNING, "sign", "certificate", "--private_key", d / "leaf.key", "--signing_certificate",
         d / "leaf.pem", "--certificate_chain", d / "int.pem", "--signature", sig, model])
    env = decision(tmp_path, model, keys)
    base = [BIN, "verify", env, "--trusted-key", keys["reviewer"][1], "--model-path", model,
            "--target", "config.yaml"]
    p = run([*base, "--trainer-root", d / "root.pem"], check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["trainer"]["signed_by"] == {"method": "certificate", "subject": "CN=trainer", "root": "CN=Root"}
    assert out["trainer"]["model_digest"] == f"sha256:{subject_digest(sig)}"
    # The intermediate is not a root the host trusts.
    p = run([*base, "--trainer-root", d / "int.pem"], check=False)
    assert p.returncode == 2 and json.loads(p.stdout)["check"] == "untrusted_key"


# The keyless method: the reference's own Sigstore bundles (model_signing sign, public-good
# Fulcio and Rekor; tests/fixtures/oms-keyless), verified offline by both. The reference is
# given the trust config explicitly (the bundled public-good root in a ClientTrustConfig): with
# no --trust_config it refreshes Sigstore's TUF metadata over the network first.
KEYLESS = ROOT / "tests/fixtures/oms-keyless"
KEYLESS_VERSIONS = ["v1.0.0", "v1.0.1", "v1.1.0"]
IDENTITY = "stefanb@us.ibm.com"
ISSUER = "https://sigstore.verify.ibm.com/oauth2"
TRUST_CONFIG = KEYLESS / "trust_config.json"
# Another instance's Fulcio CA (a conformance case's root): in place of the public-good CAs, it
# leaves a root that does not hold the CA of the bundles' certificates.
OTHER_ROOT = ROOT / "tests/fixtures/sigstore-conformance/bundle-verify/rekor2-dsse-happy-path/trusted_root.json"


def keyless_model(tmp: Path, version: str) -> Path:
    """The signed files and the bundle (`ignore-me`, left out only at the reference's own
    verification, is not copied)."""
    model = tmp / "model"
    model.mkdir()
    for name in ["model.sig", "signme-1", "signme-2"]:
        shutil.copy(KEYLESS / f"{version}-sigstore" / name, model / name)
    return model


def reference_keyless(model: Path, identity=IDENTITY, issuer=ISSUER, trust=TRUST_CONFIG):
    return run([*MODEL_SIGNING, "verify", "sigstore", "--signature", model / "model.sig", "--identity", identity,
                "--identity_provider", issuer, "--trust_config", trust, model], check=False)


def gate_keyless(env: Path, model: Path, keys, identity=IDENTITY, issuer=ISSUER, root=TRUST_CONFIG):
    extra = ["--sigstore-root", root] if root else []
    return run([BIN, "verify", env, "--trusted-key", keys["reviewer"][1], "--model-path", model,
                "--target", "config.yaml", "--max-age", "100years", "--trainer-identity", identity,
                "--trainer-issuer", issuer, *extra], check=False)


def reference_refused(ref, reason=None) -> str:
    """The reference's refusal, as its last line: a verification failure (never the TUF refresh
    of a run without --trust_config, which needs the network), for `reason` when given."""
    out = (ref.stdout + ref.stderr).strip()
    assert ref.returncode != 0, out
    last = out.splitlines()[-1] if out else ""
    assert last.startswith("Verification failed with error:"), out
    assert "TUF" not in out, out
    if reason:
        assert re.search(reason, last, re.I), f"the reference refused for another reason: {last}"
    return last


def agree(ref, gate, accepted: bool, check=None, reason=None):
    """Both accept, or both refuse: deploy-gate by the named check, the reference for `reason`
    (a pattern of its message), when given."""
    if accepted:
        assert ref.returncode == 0, ref.stdout + ref.stderr
    else:
        reference_refused(ref, reason)
    assert gate.returncode == (0 if accepted else 2), gate.stdout + gate.stderr
    if check:
        assert json.loads(gate.stdout)["check"] == check, gate.stdout


def other_trust_config(tmp: Path) -> Path:
    config = json.loads(TRUST_CONFIG.read_text())
    config["trustedRoot"]["certificateAuthorities"] = json.loads(OTHER_ROOT.read_text())["certificateAuthorities"]
    p = tmp / "other-trust-config.json"
    p.write_text(json.dumps(config))
    return p


def rewrite_bundle(model: Path, change):
    sig = model / "model.sig"
    bundle = json.loads(sig.read_text())
    change(bundle)
    sig.write_text(json.dumps(bundle))


@pytest.mark.parametrize("version", KEYLESS_VERSIONS)
def test_keyless_bundles_both_accept_the_signer_and_refuse_one_character_off(tmp_path, keys, version):
    model = keyless_model(tmp_path, version)
    env = decision(tmp_path, model, keys)
    agree(reference_keyless(model), gate_keyless(env, model, keys), True)
    out = json.loads(gate_keyless(env, model, keys, root=None).stdout)  # the bundled root
    assert out["trainer"]["identity"] == IDENTITY and out["trainer"]["issuer"] == ISSUER
    for identity, issuer in [(IDENTITY[:-1], ISSUER), (IDENTITY.replace("stefanb", "stefanc"), ISSUER),
                             (IDENTITY, ISSUER[:-1] + "3")]:
        agree(reference_keyless(model, identity, issuer), gate_keyless(env, model, keys, identity, issuer), False,
              "keyless_identity", r"SANs do not match|OIDCIssuer does not match")
    other = other_trust_config(tmp_path)
    agree(reference_keyless(model, trust=other), gate_keyless(env, model, keys, root=other), False,
          "certificate_chain", r"certificate chain")


@pytest.mark.parametrize("version", KEYLESS_VERSIONS)
def test_keyless_bundles_tampered_are_refused_by_both(tmp_path, keys, version):
    model = keyless_model(tmp_path, version)
    env = decision(tmp_path, model, keys)
    # A changed model file.
    with open(model / "signme-1", "ab") as f:
        f.write(b"tampered")
    gate = gate_keyless(env, model, keys)
    agree(reference_keyless(model), gate, False, reason=r"hash mismatch")
    assert json.loads(gate.stdout)["check"] in ("file_digest", "subject_digest")
    shutil.copy(KEYLESS / f"{version}-sigstore" / "signme-1", model / "signme-1")
    agree(reference_keyless(model), gate_keyless(env, model, keys), True)
    original = (model / "model.sig").read_text()

    # A changed payload: the statement names another digest for a file.
    def payload(bundle):
        statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
        resource = statement["predicate"]["resources"][0]
        resource["digest"] = resource["digest"][::-1]
        bundle["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()

    # The certificate of another bundle (another signing, the same signer).
    donor = "v1.0.0" if version != "v1.0.0" else "v1.1.0"
    donor_cert = json.loads((KEYLESS / f"{donor}-sigstore" / "model.sig").read_text())["verificationMaterial"]["certificate"]

    def certificate(bundle):
        bundle["verificationMaterial"]["certificate"] = donor_cert

    # The log entry's signed entry timestamp, its inclusion proof's root hash.
    def flip(b64: str) -> str:
        raw = bytearray(base64.b64decode(b64))
        raw[len(raw) // 2] ^= 1
        return base64.b64encode(bytes(raw)).decode()

    def promise(bundle):
        entry = bundle["verificationMaterial"]["tlogEntries"][0]
        entry["inclusionPromise"]["signedEntryTimestamp"] = flip(entry["inclusionPromise"]["signedEntryTimestamp"])

    def inclusion(bundle):
        proof = bundle["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]
        proof["rootHash"] = flip(proof["rootHash"])

    # deploy-gate's check for each (the inclusion proof's root hash no longer equals its
    # checkpoint's: tlog_inclusion).
    for name, change, check in [("payload", payload, "signature"), ("certificate", certificate, "certificate_chain"),
                                ("promise", promise, "tlog_promise"), ("inclusion", inclusion, "tlog_inclusion")]:
        (model / "model.sig").write_text(original)
        rewrite_bundle(model, change)
        ref, gate = reference_keyless(model), gate_keyless(env, model, keys)
        refused = reference_refused(ref)
        assert gate.returncode == 2, f"{name}: {gate.stdout}{gate.stderr}"
        assert json.loads(gate.stdout)["check"] == check, f"{name}: {gate.stdout}"
        print(f"{version} {name}: deploy-gate {json.loads(gate.stdout)['check']}; reference: {refused[:160]}")
