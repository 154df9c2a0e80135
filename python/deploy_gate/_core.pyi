"""Type stubs of deploy_gate._core, the native module (a mapping layer over the Rust core)."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

Notify = Optional[Callable[[bool, str], object]]

def resolve_policy(
    policy: Optional[str] = None, policy_file: Optional[str] = None, overrides: Optional[str] = None
) -> str: ...
def policy_digest(policy: str) -> str: ...
def score_answers_by_position(
    expected: Sequence[str], kinds: Sequence[int], texts: Sequence[str]
) -> Tuple[Optional[float], int]: ...
def compare(
    old: Optional[float], new: Optional[float], num_cases: int, min_delta: float
) -> Tuple[float, float, float, int, bool, str]: ...
def decide_scores(
    task_old: Optional[float],
    task_new: Optional[float],
    trajectory_old: Optional[float],
    trajectory_new: Optional[float],
    num_cases: int,
    candidates: int,
    policy: str,
) -> str: ...
def trajectory_mean(results: Sequence[Tuple[float, float, float, float, float, float, float]]) -> Optional[float]: ...
def report_html_from_json(json: str) -> str: ...
def core_version() -> str: ...
def cli_main(argv: List[str]) -> int: ...
def read_endpoint(file: str, data: bytes) -> Tuple[str, str, str, List[str]]: ...
def run_endpoints(
    test_set: str,
    endpoints: List[str],
    outs: List[str],
    order_seed: int = 0,
    cache: Optional[str] = None,
    no_cache: bool = False,
    policy_file: Optional[str] = None,
    on_line: Optional[Callable[[str], Any]] = None,
    on_case: Optional[Callable[[int, bool], Any]] = None,
    outputs: bool = True,
) -> Tuple[Optional[str], str]: ...
def trajectory_fields() -> List[str]: ...
def sequential_units(policy: str, test_set: bytes) -> List[List[int]]: ...
def evaluate_cases(
    policy: str,
    test_set: bytes,
    old: Tuple[Sequence[Union[int, str]], Sequence[int], Sequence[str]],
    new: Tuple[Sequence[Union[int, str]], Sequence[int], Sequence[str]],
    old_trajectories: Optional[bytes] = None,
    new_trajectories: Optional[bytes] = None,
) -> str: ...
def model_digest(path: str) -> str: ...
def oms_digest(path: str, shard_size: Optional[int] = None) -> str: ...
def sign_report(
    report: str,
    key_pem: str,
    model: str,
    model_sha256: str,
    target: str,
    time_verified: int,
    digest_scheme: Optional[str],
    review: Optional[bytes] = None,
    review_name: str = "review",
) -> str: ...
def diff_documents(
    before: bytes,
    after: bytes,
    before_name: str,
    after_name: str,
    trusted_pems: Sequence[str],
    threshold: int,
    reviews: Optional[Tuple[Tuple[bytes, str], Tuple[bytes, str]]] = None,
) -> str: ...
def verify_envelope(
    envelope: bytes,
    trusted_pems: Sequence[str],
    threshold: int,
    subject_sha256: Optional[str],
    target: Optional[str],
    now: int,
    max_age: int,
) -> str: ...
def verify_model_envelope(
    envelope: bytes,
    trusted_pems: Sequence[str],
    threshold: int,
    model_path: str,
    target: Optional[str],
    now: int,
    max_age: int,
    signature: Optional[str] = None,
    trainer_pems: Sequence[str] = ...,
    root_pems: Sequence[str] = ...,
    trainer_identities: Sequence[Tuple[str, str]] = ...,
    sigstore_root: Optional[str] = None,
) -> str: ...
def deploy_config(
    config_path: str,
    trained_path: str,
    backend: str,
    stages: Sequence[Tuple[str, str]],
    notify: Notify = None,
    fail_at_step: Optional[str] = None,
) -> Tuple[bool, str, Optional[str]]: ...
def apply(
    envelope: str,
    trusted_keys: Sequence[str],
    model_path: str,
    config: str,
    target: Optional[str],
    ledger: Optional[str],
    threshold: int,
    max_age: int,
    max_statement_size: int,
    backend: str,
    stage_models: Sequence[Tuple[str, str]],
    deploy_cmd: Sequence[str],
    rollback_cmd: Sequence[str],
    dry_run: bool,
    notify: Notify = None,
    fail_at_step: Optional[str] = None,
    model_signature: Optional[str] = None,
    trainer_pems: Sequence[str] = ...,
    root_pems: Sequence[str] = ...,
    trainer_identities: Sequence[Tuple[str, str]] = ...,
    sigstore_root: Optional[str] = None,
) -> Tuple[str, str, str, Optional[str]]: ...
def apply_mlflow(
    envelope: str,
    trusted_keys: Sequence[str],
    mlflow: str,
    registered_model: str,
    alias: str,
    model_version: Optional[str],
    target: Optional[str],
    ledger: Optional[str],
    threshold: int,
    max_age: int,
    max_statement_size: int,
    dry_run: bool,
    restore: bool,
    ca_file: Optional[str] = None,
    allow_insecure_tls: bool = False,
    notify: Notify = None,
    trainer: bool = False,
    model_signature: Optional[str] = None,
    trainer_pems: Sequence[str] = ...,
    root_pems: Sequence[str] = ...,
    trainer_identities: Sequence[Tuple[str, str]] = ...,
    sigstore_root: Optional[str] = None,
) -> Tuple[str, str]: ...
def verify_mlflow(
    mlflow: str,
    model_uri: str,
    trusted_keys: Sequence[str],
    threshold: int,
    max_age: int,
    max_statement_size: int,
    ca_file: Optional[str] = None,
    allow_insecure_tls: bool = False,
    notify: Notify = None,
) -> str: ...
def rollback(
    config: str, ledger: Optional[str] = None, notify: Notify = None
) -> Tuple[str, str, bool, str, Optional[str], Optional[str]]: ...

class Session:
    def __init__(self, policy: str) -> None: ...
    def policy(self) -> str: ...
    def build_test_set(
        self,
        paths: Sequence[str],
        threads: int = 0,
        progress: Optional[Callable[[int, int], object]] = None,
        hash: bool = True,
    ) -> None: ...
    def scan(
        self,
        paths: Sequence[str],
        threads: int = 0,
        progress: Optional[Callable[[int, int], object]] = None,
        hash: bool = True,
    ) -> int: ...
    def read_test_set(self, positions: Optional[Sequence[int]] = None) -> None: ...
    def test_set_info(self) -> Tuple[int, int, bool, bool]: ...
    def case_lines(self) -> List[str]: ...
    def test_set_jsonl(self) -> str: ...
    def test_set_warnings(self) -> List[str]: ...
    def add_verdict_file(self, side: str, path: str) -> None: ...
    def add_verdict_bytes(self, side: str, name: str, data: bytes) -> None: ...
    def add_answers(
        self,
        side: str,
        name: str,
        ids: Sequence[Union[int, str]],
        kinds: Sequence[int],
        texts: Sequence[str],
        outputs: Optional[Sequence[Optional[str]]] = None,
    ) -> None: ...
    def answer_file(self, side: str) -> Optional[bytes]: ...
    def carries_outputs(self, side: str) -> bool: ...
    def case_outputs(self, side: str, data: bytes) -> List[Optional[Tuple[str, bool]]]: ...
    def case_outputs_of_file(self, side: str, path: str) -> List[Optional[Tuple[str, bool]]]: ...
    def case_answers(self, side: str, data: bytes, cases: List[int]) -> Dict[int, Tuple[str, bool]]: ...
    def case_answers_of_file(self, side: str, path: str, cases: List[int]) -> Dict[int, Tuple[str, bool]]: ...
    def add_trajectory_file(self, side: str, path: str) -> None: ...
    def add_trajectory_bytes(self, side: str, name: str, data: bytes) -> None: ...
    def report(self) -> Report: ...

class Report:
    approved: bool
    outcome: str
    def to_json(self) -> str: ...
    def to_html(
        self,
        review: Optional[bytes] = None,
        review_name: str = "review",
        old_answers: Optional[Dict[int, Tuple[str, bool]]] = None,
        new_answers: Optional[Dict[int, Tuple[str, bool]]] = None,
    ) -> str: ...
    def answer_cases(self) -> List[int]: ...
    def to_markdown(self, review: Optional[bytes] = None, review_name: str = "review") -> str: ...
    def to_junit(self) -> str: ...
