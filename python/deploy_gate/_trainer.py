"""The trainer's OpenSSF Model Signing signature as ``verify`` and ``apply`` take it: the CLI's
``--model-signature``, ``--trainer-key``, ``--trainer-root``, ``--trainer-identity`` with
``--trainer-issuer`` and ``--sigstore-root`` resolved the same way."""

from __future__ import annotations

import os
import tempfile
from typing import List, Optional, Sequence, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

SIGNATURE_FILE = "model.sig"

TrainerKeys = Sequence[Union[str, bytes, PathLike]]

TrainerIdentities = Sequence[Tuple[str, str]]

_Signature = Tuple[Optional[Union[str, bytes]], List[str], List[str], List[Tuple[str, str]], Optional[str]]


def _text(value: Union[str, bytes, PathLike], inline: str = "-----BEGIN") -> str:
    """A key, root or document given as its text or bytes, or a path to it: a string is the
    text itself when it starts (after whitespace) with ``inline`` (a PEM block's
    ``-----BEGIN``, a JSON object's ``{``), else a path."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str) and value.lstrip().startswith(inline):
        return value
    with open(os.fspath(value), encoding="utf-8") as f:
        return f.read()


def _pems(values: TrainerKeys, what: str) -> List[str]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what}: a list of PEM keys or files, not one")
    return [_text(v) for v in values]


def _model_signature(
    model_path: Optional[PathLike],
    model_signature: Optional[Union[str, bytes, PathLike]],
    trainer_keys: TrainerKeys,
    trainer_roots: TrainerKeys,
    trainer_identities: TrainerIdentities = (),
    sigstore_root: Optional[Union[str, bytes, PathLike]] = None,
    in_files: bool = False,
) -> Optional[_Signature]:
    """The trainer's signature to check, as the CLI's ``--model-signature``, ``--trainer-key``,
    ``--trainer-root``, ``--trainer-identity``/``--trainer-issuer`` and ``--sigstore-root``
    resolve it: (its path, or its bytes; the trainer keys' and roots' PEM texts; the keyless
    (identity, issuer) pairs; the Sigstore trusted root's JSON text or None for the bundled
    public-good one), or None when no trainer key, root or identity is given. ``in_files``: the
    files are a registry version's (no ``model_path``); without ``model_signature`` the path is
    None, for ``model.sig`` among them."""
    keys = _pems(trainer_keys, "trainer_keys")
    roots = _pems(trainer_roots, "trainer_roots")
    identities = _identities(trainer_identities)
    root_text = None if sigstore_root is None else _text(sigstore_root, "{")
    if root_text is not None and not identities:
        raise ValueError("sigstore_root needs trainer_identities: whom the keyless signature must name")
    if not keys and not roots and not identities:
        if model_signature is not None:
            raise ValueError(
                "model_signature needs trainer_keys, trainer_roots or trainer_identities: what the trainer's signature is checked against"
            )
        return None
    if model_path is None and not in_files:
        raise ValueError("the trainer's model signature is checked against the files: give model_path")
    if model_signature is None and in_files:
        # `model.sig` among the registry version's files, looked for once they are downloaded.
        return None, keys, roots, identities, root_text
    if model_signature is None:
        assert model_path is not None
        default = os.path.join(os.fspath(model_path), SIGNATURE_FILE)
        if not os.path.isdir(os.fspath(model_path)) or not os.path.lexists(default):
            raise ValueError(f"no model signature: {default} is not there; give model_signature")
        return default, keys, roots, identities, root_text
    if isinstance(model_signature, (bytes, bytearray)):
        return bytes(model_signature), keys, roots, identities, root_text
    if isinstance(model_signature, str) and model_signature.lstrip().startswith("{"):
        return model_signature.encode("utf-8"), keys, roots, identities, root_text
    return os.fspath(model_signature), keys, roots, identities, root_text


def _identities(values: TrainerIdentities) -> List[Tuple[str, str]]:
    if isinstance(values, (str, bytes)):
        raise TypeError("trainer_identities: a list of (identity, issuer) pairs")
    out = []
    for v in values:
        if not (isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, str) for x in v)):
            raise TypeError(f"trainer_identities: {v!r} is not an (identity, issuer) pair of strings")
        out.append((v[0], v[1]))
    return out


class _Bundle:
    """A model signature given in memory, written to a private temporary directory (the native
    check reads a file)."""

    def __init__(self, value: Union[str, bytes]) -> None:
        self._dir: Optional["tempfile.TemporaryDirectory[str]"] = None
        if isinstance(value, bytes):
            self._dir = tempfile.TemporaryDirectory(prefix="deploy-gate-")
            self.path = os.path.join(self._dir.name, SIGNATURE_FILE)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(value)
        else:
            self.path = value

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
