from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SumMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUM_MODE_UNSPECIFIED: _ClassVar[SumMode]
    SUM_MODE_RING: _ClassVar[SumMode]
    SUM_MODE_PAIRWISE: _ClassVar[SumMode]
    SUM_MODE_PAIRWISE_SPARSE: _ClassVar[SumMode]

class UnionPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNION_PHASE_UNSPECIFIED: _ClassVar[UnionPhase]
    UNION_PHASE_COLLECT: _ClassVar[UnionPhase]
    UNION_PHASE_STRIP: _ClassVar[UnionPhase]
    UNION_PHASE_MEASURE: _ClassVar[UnionPhase]
    UNION_PHASE_SHUFFLE_SHARE: _ClassVar[UnionPhase]
    UNION_PHASE_SHUFFLE_STEP: _ClassVar[UnionPhase]
    UNION_PHASE_FETCH: _ClassVar[UnionPhase]
SUM_MODE_UNSPECIFIED: SumMode
SUM_MODE_RING: SumMode
SUM_MODE_PAIRWISE: SumMode
SUM_MODE_PAIRWISE_SPARSE: SumMode
UNION_PHASE_UNSPECIFIED: UnionPhase
UNION_PHASE_COLLECT: UnionPhase
UNION_PHASE_STRIP: UnionPhase
UNION_PHASE_MEASURE: UnionPhase
UNION_PHASE_SHUFFLE_SHARE: UnionPhase
UNION_PHASE_SHUFFLE_STEP: UnionPhase
UNION_PHASE_FETCH: UnionPhase

class SessionRef(_message.Message):
    __slots__ = ("session_id", "iteration", "attempt")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ITERATION_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    iteration: int
    attempt: int
    def __init__(self, session_id: _Optional[str] = ..., iteration: _Optional[int] = ..., attempt: _Optional[int] = ...) -> None: ...

class Vector(_message.Message):
    __slots__ = ("data", "length", "dtype")
    DATA_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    length: int
    dtype: str
    def __init__(self, data: _Optional[bytes] = ..., length: _Optional[int] = ..., dtype: _Optional[str] = ...) -> None: ...

class SensitiveValue(_message.Message):
    __slots__ = ("column", "value")
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    column: str
    value: str
    def __init__(self, column: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class LKCJob(_message.Message):
    __slots__ = ("L", "K", "C", "score", "qids", "sensitive", "class_column", "class_values", "drop_columns", "suppress", "drop_suppressed")
    L_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    C_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    QIDS_FIELD_NUMBER: _ClassVar[int]
    SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    CLASS_COLUMN_FIELD_NUMBER: _ClassVar[int]
    CLASS_VALUES_FIELD_NUMBER: _ClassVar[int]
    DROP_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_FIELD_NUMBER: _ClassVar[int]
    DROP_SUPPRESSED_FIELD_NUMBER: _ClassVar[int]
    L: int
    K: int
    C: str
    score: str
    qids: _containers.RepeatedScalarFieldContainer[str]
    sensitive: _containers.RepeatedCompositeFieldContainer[SensitiveValue]
    class_column: str
    class_values: _containers.RepeatedScalarFieldContainer[str]
    drop_columns: _containers.RepeatedScalarFieldContainer[str]
    suppress: str
    drop_suppressed: bool
    def __init__(self, L: _Optional[int] = ..., K: _Optional[int] = ..., C: _Optional[str] = ..., score: _Optional[str] = ..., qids: _Optional[_Iterable[str]] = ..., sensitive: _Optional[_Iterable[_Union[SensitiveValue, _Mapping]]] = ..., class_column: _Optional[str] = ..., class_values: _Optional[_Iterable[str]] = ..., drop_columns: _Optional[_Iterable[str]] = ..., suppress: _Optional[str] = ..., drop_suppressed: _Optional[bool] = ...) -> None: ...

class DRBTJob(_message.Message):
    __slots__ = ("id_column", "matrix", "k_dims", "rescale")
    ID_COLUMN_FIELD_NUMBER: _ClassVar[int]
    MATRIX_FIELD_NUMBER: _ClassVar[int]
    K_DIMS_FIELD_NUMBER: _ClassVar[int]
    RESCALE_FIELD_NUMBER: _ClassVar[int]
    id_column: str
    matrix: str
    k_dims: int
    rescale: bool
    def __init__(self, id_column: _Optional[str] = ..., matrix: _Optional[str] = ..., k_dims: _Optional[int] = ..., rescale: _Optional[bool] = ...) -> None: ...

class QIDDomain(_message.Message):
    __slots__ = ("column", "values")
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    column: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, column: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class RandomizeJob(_message.Message):
    __slots__ = ("qids", "method", "attrs", "p", "p_values", "keep_at_parties")
    QIDS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    ATTRS_FIELD_NUMBER: _ClassVar[int]
    P_FIELD_NUMBER: _ClassVar[int]
    P_VALUES_FIELD_NUMBER: _ClassVar[int]
    KEEP_AT_PARTIES_FIELD_NUMBER: _ClassVar[int]
    qids: _containers.RepeatedCompositeFieldContainer[QIDDomain]
    method: str
    attrs: int
    p: str
    p_values: _containers.RepeatedScalarFieldContainer[float]
    keep_at_parties: bool
    def __init__(self, qids: _Optional[_Iterable[_Union[QIDDomain, _Mapping]]] = ..., method: _Optional[str] = ..., attrs: _Optional[int] = ..., p: _Optional[str] = ..., p_values: _Optional[_Iterable[float]] = ..., keep_at_parties: _Optional[bool] = ...) -> None: ...

class Matrix(_message.Message):
    __slots__ = ("data", "rows", "cols", "dtype")
    DATA_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    rows: int
    cols: int
    dtype: str
    def __init__(self, data: _Optional[bytes] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., dtype: _Optional[str] = ...) -> None: ...

class C45Job(_message.Message):
    __slots__ = ("features", "numeric", "class_column")
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    NUMERIC_FIELD_NUMBER: _ClassVar[int]
    CLASS_COLUMN_FIELD_NUMBER: _ClassVar[int]
    features: _containers.RepeatedScalarFieldContainer[str]
    numeric: _containers.RepeatedScalarFieldContainer[str]
    class_column: str
    def __init__(self, features: _Optional[_Iterable[str]] = ..., numeric: _Optional[_Iterable[str]] = ..., class_column: _Optional[str] = ...) -> None: ...

class C45QueryBatch(_message.Message):
    __slots__ = ("parent", "test_feature", "test_branch", "test_threshold", "path", "kind", "feature", "threshold", "narrowed", "support_sizes", "support")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    TEST_FEATURE_FIELD_NUMBER: _ClassVar[int]
    TEST_BRANCH_FIELD_NUMBER: _ClassVar[int]
    TEST_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    NARROWED_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_SIZES_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    parent: _containers.RepeatedScalarFieldContainer[int]
    test_feature: _containers.RepeatedScalarFieldContainer[int]
    test_branch: _containers.RepeatedScalarFieldContainer[int]
    test_threshold: _containers.RepeatedScalarFieldContainer[float]
    path: _containers.RepeatedScalarFieldContainer[int]
    kind: _containers.RepeatedScalarFieldContainer[int]
    feature: _containers.RepeatedScalarFieldContainer[int]
    threshold: _containers.RepeatedScalarFieldContainer[float]
    narrowed: _containers.RepeatedScalarFieldContainer[bool]
    support_sizes: _containers.RepeatedScalarFieldContainer[int]
    support: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, parent: _Optional[_Iterable[int]] = ..., test_feature: _Optional[_Iterable[int]] = ..., test_branch: _Optional[_Iterable[int]] = ..., test_threshold: _Optional[_Iterable[float]] = ..., path: _Optional[_Iterable[int]] = ..., kind: _Optional[_Iterable[int]] = ..., feature: _Optional[_Iterable[int]] = ..., threshold: _Optional[_Iterable[float]] = ..., narrowed: _Optional[_Iterable[bool]] = ..., support_sizes: _Optional[_Iterable[int]] = ..., support: _Optional[_Iterable[int]] = ...) -> None: ...

class C45CountRequest(_message.Message):
    __slots__ = ("ref", "domain_items", "count_bits", "batch")
    REF_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    COUNT_BITS_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    domain_items: _containers.RepeatedScalarFieldContainer[bytes]
    count_bits: int
    batch: C45QueryBatch
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., domain_items: _Optional[_Iterable[bytes]] = ..., count_bits: _Optional[int] = ..., batch: _Optional[_Union[C45QueryBatch, _Mapping]] = ...) -> None: ...

class C45CountReply(_message.Message):
    __slots__ = ("length",)
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    length: int
    def __init__(self, length: _Optional[int] = ...) -> None: ...

class KactusJob(_message.Message):
    __slots__ = ("qids", "class_column", "k", "marker", "numeric", "prune", "narrow")
    QIDS_FIELD_NUMBER: _ClassVar[int]
    CLASS_COLUMN_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    MARKER_FIELD_NUMBER: _ClassVar[int]
    NUMERIC_FIELD_NUMBER: _ClassVar[int]
    PRUNE_FIELD_NUMBER: _ClassVar[int]
    NARROW_FIELD_NUMBER: _ClassVar[int]
    qids: _containers.RepeatedScalarFieldContainer[str]
    class_column: str
    k: int
    marker: str
    numeric: str
    prune: bool
    narrow: bool
    def __init__(self, qids: _Optional[_Iterable[str]] = ..., class_column: _Optional[str] = ..., k: _Optional[int] = ..., marker: _Optional[str] = ..., numeric: _Optional[str] = ..., prune: _Optional[bool] = ..., narrow: _Optional[bool] = ...) -> None: ...

class KactusStepRequest(_message.Message):
    __slots__ = ("ref", "step", "ints", "floats", "items", "batch", "count_bits")
    REF_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    INTS_FIELD_NUMBER: _ClassVar[int]
    FLOATS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    COUNT_BITS_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    step: str
    ints: _containers.RepeatedScalarFieldContainer[int]
    floats: _containers.RepeatedScalarFieldContainer[float]
    items: _containers.RepeatedScalarFieldContainer[bytes]
    batch: C45QueryBatch
    count_bits: int
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., step: _Optional[str] = ..., ints: _Optional[_Iterable[int]] = ..., floats: _Optional[_Iterable[float]] = ..., items: _Optional[_Iterable[bytes]] = ..., batch: _Optional[_Union[C45QueryBatch, _Mapping]] = ..., count_bits: _Optional[int] = ...) -> None: ...

class KactusStepReply(_message.Message):
    __slots__ = ("length",)
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    length: int
    def __init__(self, length: _Optional[int] = ...) -> None: ...

class EvaluateJob(_message.Message):
    __slots__ = ("features", "qids", "numeric_qids", "numeric_other", "class_column", "cut", "dtypes", "test_fraction", "seed")
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    QIDS_FIELD_NUMBER: _ClassVar[int]
    NUMERIC_QIDS_FIELD_NUMBER: _ClassVar[int]
    NUMERIC_OTHER_FIELD_NUMBER: _ClassVar[int]
    CLASS_COLUMN_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    DTYPES_FIELD_NUMBER: _ClassVar[int]
    TEST_FRACTION_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    features: _containers.RepeatedScalarFieldContainer[str]
    qids: _containers.RepeatedScalarFieldContainer[str]
    numeric_qids: _containers.RepeatedScalarFieldContainer[str]
    numeric_other: _containers.RepeatedScalarFieldContainer[str]
    class_column: str
    cut: _containers.RepeatedCompositeFieldContainer[EvaluateCut]
    dtypes: _containers.RepeatedCompositeFieldContainer[EvaluateColumn]
    test_fraction: float
    seed: int
    def __init__(self, features: _Optional[_Iterable[str]] = ..., qids: _Optional[_Iterable[str]] = ..., numeric_qids: _Optional[_Iterable[str]] = ..., numeric_other: _Optional[_Iterable[str]] = ..., class_column: _Optional[str] = ..., cut: _Optional[_Iterable[_Union[EvaluateCut, _Mapping]]] = ..., dtypes: _Optional[_Iterable[_Union[EvaluateColumn, _Mapping]]] = ..., test_fraction: _Optional[float] = ..., seed: _Optional[int] = ...) -> None: ...

class EvaluateColumn(_message.Message):
    __slots__ = ("column", "dtype")
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    column: str
    dtype: str
    def __init__(self, column: _Optional[str] = ..., dtype: _Optional[str] = ...) -> None: ...

class EvaluateCut(_message.Message):
    __slots__ = ("qid", "labels")
    QID_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    qid: str
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, qid: _Optional[str] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class EvaluateTree(_message.Message):
    __slots__ = ("features", "numeric", "values", "classes", "nodes")
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    NUMERIC_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    CLASSES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    features: _containers.RepeatedScalarFieldContainer[str]
    numeric: _containers.RepeatedScalarFieldContainer[bool]
    values: _containers.RepeatedScalarFieldContainer[bytes]
    classes: _containers.RepeatedScalarFieldContainer[bytes]
    nodes: _containers.RepeatedCompositeFieldContainer[EvaluateNode]
    def __init__(self, features: _Optional[_Iterable[str]] = ..., numeric: _Optional[_Iterable[bool]] = ..., values: _Optional[_Iterable[bytes]] = ..., classes: _Optional[_Iterable[bytes]] = ..., nodes: _Optional[_Iterable[_Union[EvaluateNode, _Mapping]]] = ...) -> None: ...

class EvaluateNode(_message.Message):
    __slots__ = ("feature", "threshold", "branches", "child_branch", "child_node", "counts", "best")
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    BRANCHES_FIELD_NUMBER: _ClassVar[int]
    CHILD_BRANCH_FIELD_NUMBER: _ClassVar[int]
    CHILD_NODE_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    BEST_FIELD_NUMBER: _ClassVar[int]
    feature: int
    threshold: float
    branches: int
    child_branch: _containers.RepeatedScalarFieldContainer[int]
    child_node: _containers.RepeatedScalarFieldContainer[int]
    counts: _containers.RepeatedScalarFieldContainer[float]
    best: int
    def __init__(self, feature: _Optional[int] = ..., threshold: _Optional[float] = ..., branches: _Optional[int] = ..., child_branch: _Optional[_Iterable[int]] = ..., child_node: _Optional[_Iterable[int]] = ..., counts: _Optional[_Iterable[float]] = ..., best: _Optional[int] = ...) -> None: ...

class EvaluateClassifyRequest(_message.Message):
    __slots__ = ("ref", "figure", "tree")
    REF_FIELD_NUMBER: _ClassVar[int]
    FIGURE_FIELD_NUMBER: _ClassVar[int]
    TREE_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    figure: str
    tree: EvaluateTree
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., figure: _Optional[str] = ..., tree: _Optional[_Union[EvaluateTree, _Mapping]] = ...) -> None: ...

class EvaluateClassifyReply(_message.Message):
    __slots__ = ("length",)
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    length: int
    def __init__(self, length: _Optional[int] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("ref", "lkc", "drbt", "randomize", "c45", "kactus", "evaluate", "ring", "sum_mode", "versions")
    REF_FIELD_NUMBER: _ClassVar[int]
    LKC_FIELD_NUMBER: _ClassVar[int]
    DRBT_FIELD_NUMBER: _ClassVar[int]
    RANDOMIZE_FIELD_NUMBER: _ClassVar[int]
    C45_FIELD_NUMBER: _ClassVar[int]
    KACTUS_FIELD_NUMBER: _ClassVar[int]
    EVALUATE_FIELD_NUMBER: _ClassVar[int]
    RING_FIELD_NUMBER: _ClassVar[int]
    SUM_MODE_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    lkc: LKCJob
    drbt: DRBTJob
    randomize: RandomizeJob
    c45: C45Job
    kactus: KactusJob
    evaluate: EvaluateJob
    ring: _containers.RepeatedScalarFieldContainer[str]
    sum_mode: SumMode
    versions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., lkc: _Optional[_Union[LKCJob, _Mapping]] = ..., drbt: _Optional[_Union[DRBTJob, _Mapping]] = ..., randomize: _Optional[_Union[RandomizeJob, _Mapping]] = ..., c45: _Optional[_Union[C45Job, _Mapping]] = ..., kactus: _Optional[_Union[KactusJob, _Mapping]] = ..., evaluate: _Optional[_Union[EvaluateJob, _Mapping]] = ..., ring: _Optional[_Iterable[str]] = ..., sum_mode: _Optional[_Union[SumMode, str]] = ..., versions: _Optional[_Iterable[str]] = ...) -> None: ...

class KeyShare(_message.Message):
    __slots__ = ("holder", "role", "purpose", "share")
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    holder: str
    role: str
    purpose: str
    share: bytes
    def __init__(self, holder: _Optional[str] = ..., role: _Optional[str] = ..., purpose: _Optional[str] = ..., share: _Optional[bytes] = ...) -> None: ...

class OpenSessionReply(_message.Message):
    __slots__ = ("party", "fingerprint", "fingerprint_items", "columns", "keys", "attributes", "lease_seconds", "allow_exclusion")
    PARTY_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_ITEMS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_EXCLUSION_FIELD_NUMBER: _ClassVar[int]
    party: str
    fingerprint: str
    fingerprint_items: _containers.RepeatedScalarFieldContainer[str]
    columns: _containers.RepeatedScalarFieldContainer[str]
    keys: _containers.RepeatedCompositeFieldContainer[KeyShare]
    attributes: _containers.RepeatedScalarFieldContainer[str]
    lease_seconds: float
    allow_exclusion: bool
    def __init__(self, party: _Optional[str] = ..., fingerprint: _Optional[str] = ..., fingerprint_items: _Optional[_Iterable[str]] = ..., columns: _Optional[_Iterable[str]] = ..., keys: _Optional[_Iterable[_Union[KeyShare, _Mapping]]] = ..., attributes: _Optional[_Iterable[str]] = ..., lease_seconds: _Optional[float] = ..., allow_exclusion: _Optional[bool] = ...) -> None: ...

class ShareKeysRequest(_message.Message):
    __slots__ = ("ref", "keys", "prepare_union", "prepare_items")
    REF_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    PREPARE_UNION_FIELD_NUMBER: _ClassVar[int]
    PREPARE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    keys: _containers.RepeatedCompositeFieldContainer[KeyShare]
    prepare_union: bool
    prepare_items: int
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., keys: _Optional[_Iterable[_Union[KeyShare, _Mapping]]] = ..., prepare_union: _Optional[bool] = ..., prepare_items: _Optional[int] = ...) -> None: ...

class ShareKeysReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DynamicSplit(_message.Message):
    __slots__ = ("attr", "node", "first_right_atom")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    FIRST_RIGHT_ATOM_FIELD_NUMBER: _ClassVar[int]
    attr: int
    node: int
    first_right_atom: int
    def __init__(self, attr: _Optional[int] = ..., node: _Optional[int] = ..., first_right_atom: _Optional[int] = ...) -> None: ...

class Instruction(_message.Message):
    __slots__ = ("attr", "node", "nonempty", "nonempty_bits", "splits")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    NONEMPTY_FIELD_NUMBER: _ClassVar[int]
    NONEMPTY_BITS_FIELD_NUMBER: _ClassVar[int]
    SPLITS_FIELD_NUMBER: _ClassVar[int]
    attr: int
    node: int
    nonempty: bytes
    nonempty_bits: int
    splits: _containers.RepeatedCompositeFieldContainer[DynamicSplit]
    def __init__(self, attr: _Optional[int] = ..., node: _Optional[int] = ..., nonempty: _Optional[bytes] = ..., nonempty_bits: _Optional[int] = ..., splits: _Optional[_Iterable[_Union[DynamicSplit, _Mapping]]] = ...) -> None: ...

class SumRequest(_message.Message):
    __slots__ = ("ref", "instruction", "partial", "prefix_probe", "prefix_adopt")
    REF_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    PREFIX_PROBE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_ADOPT_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    instruction: Instruction
    partial: Vector
    prefix_probe: PrefixProbe
    prefix_adopt: PrefixAdopt
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., instruction: _Optional[_Union[Instruction, _Mapping]] = ..., partial: _Optional[_Union[Vector, _Mapping]] = ..., prefix_probe: _Optional[_Union[PrefixProbe, _Mapping]] = ..., prefix_adopt: _Optional[_Union[PrefixAdopt, _Mapping]] = ...) -> None: ...

class PrefixProbe(_message.Message):
    __slots__ = ("instructions",)
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    instructions: _containers.RepeatedCompositeFieldContainer[Instruction]
    def __init__(self, instructions: _Optional[_Iterable[_Union[Instruction, _Mapping]]] = ...) -> None: ...

class PrefixAdopt(_message.Message):
    __slots__ = ("instructions",)
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    instructions: _containers.RepeatedCompositeFieldContainer[Instruction]
    def __init__(self, instructions: _Optional[_Iterable[_Union[Instruction, _Mapping]]] = ...) -> None: ...

class SumReply(_message.Message):
    __slots__ = ("sealed_total", "pairwise_share")
    SEALED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PAIRWISE_SHARE_FIELD_NUMBER: _ClassVar[int]
    sealed_total: bytes
    pairwise_share: bytes
    def __init__(self, sealed_total: _Optional[bytes] = ..., pairwise_share: _Optional[bytes] = ...) -> None: ...

class EndRequest(_message.Message):
    __slots__ = ("ref", "abort", "reason")
    REF_FIELD_NUMBER: _ClassVar[int]
    ABORT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    abort: bool
    reason: str
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., abort: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class EndReply(_message.Message):
    __slots__ = ("bytes_sent", "bytes_received")
    BYTES_SENT_FIELD_NUMBER: _ClassVar[int]
    BYTES_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    bytes_sent: int
    bytes_received: int
    def __init__(self, bytes_sent: _Optional[int] = ..., bytes_received: _Optional[int] = ...) -> None: ...

class UnionRequest(_message.Message):
    __slots__ = ("ref", "phase", "packed", "item_size", "record_size", "pad_to", "block_sizes", "step", "suppressed", "chunk", "chunks", "chunk_bytes", "fetch_phase", "forward_kept")
    REF_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    PACKED_FIELD_NUMBER: _ClassVar[int]
    ITEM_SIZE_FIELD_NUMBER: _ClassVar[int]
    RECORD_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAD_TO_FIELD_NUMBER: _ClassVar[int]
    BLOCK_SIZES_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SUPPRESSED_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    FETCH_PHASE_FIELD_NUMBER: _ClassVar[int]
    FORWARD_KEPT_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    phase: UnionPhase
    packed: bytes
    item_size: int
    record_size: int
    pad_to: int
    block_sizes: _containers.RepeatedScalarFieldContainer[int]
    step: int
    suppressed: _containers.RepeatedScalarFieldContainer[int]
    chunk: int
    chunks: int
    chunk_bytes: int
    fetch_phase: UnionPhase
    forward_kept: bool
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., phase: _Optional[_Union[UnionPhase, str]] = ..., packed: _Optional[bytes] = ..., item_size: _Optional[int] = ..., record_size: _Optional[int] = ..., pad_to: _Optional[int] = ..., block_sizes: _Optional[_Iterable[int]] = ..., step: _Optional[int] = ..., suppressed: _Optional[_Iterable[int]] = ..., chunk: _Optional[int] = ..., chunks: _Optional[int] = ..., chunk_bytes: _Optional[int] = ..., fetch_phase: _Optional[_Union[UnionPhase, str]] = ..., forward_kept: _Optional[bool] = ...) -> None: ...

class UnionReply(_message.Message):
    __slots__ = ("packed", "item_size", "record_size", "count", "chunks")
    PACKED_FIELD_NUMBER: _ClassVar[int]
    ITEM_SIZE_FIELD_NUMBER: _ClassVar[int]
    RECORD_SIZE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    packed: bytes
    item_size: int
    record_size: int
    count: int
    chunks: int
    def __init__(self, packed: _Optional[bytes] = ..., item_size: _Optional[int] = ..., record_size: _Optional[int] = ..., count: _Optional[int] = ..., chunks: _Optional[int] = ...) -> None: ...

class ReleasedRecord(_message.Message):
    __slots__ = ("values", "dummy")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    DUMMY_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    dummy: bool
    def __init__(self, values: _Optional[_Iterable[str]] = ..., dummy: _Optional[bool] = ...) -> None: ...

class IdsRequest(_message.Message):
    __slots__ = ("ref", "ids", "send_yours")
    REF_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    SEND_YOURS_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    ids: _containers.RepeatedScalarFieldContainer[str]
    send_yours: bool
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., ids: _Optional[_Iterable[str]] = ..., send_yours: _Optional[bool] = ...) -> None: ...

class IdsReply(_message.Message):
    __slots__ = ("missing", "ids")
    MISSING_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    missing: int
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, missing: _Optional[int] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ProjectRequest(_message.Message):
    __slots__ = ("ref",)
    REF_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ...) -> None: ...

class ProjectReply(_message.Message):
    __slots__ = ("block",)
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    block: Matrix
    def __init__(self, block: _Optional[_Union[Matrix, _Mapping]] = ...) -> None: ...

class AssignRequest(_message.Message):
    __slots__ = ("ref", "clusters")
    REF_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    clusters: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., clusters: _Optional[_Iterable[int]] = ...) -> None: ...

class AssignReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RenewRequest(_message.Message):
    __slots__ = ("ref",)
    REF_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ...) -> None: ...

class RenewReply(_message.Message):
    __slots__ = ("lease_seconds",)
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    lease_seconds: float
    def __init__(self, lease_seconds: _Optional[float] = ...) -> None: ...

class RandomizeRequest(_message.Message):
    __slots__ = ("ref", "marginals", "p")
    REF_FIELD_NUMBER: _ClassVar[int]
    MARGINALS_FIELD_NUMBER: _ClassVar[int]
    P_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    marginals: Vector
    p: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., marginals: _Optional[_Union[Vector, _Mapping]] = ..., p: _Optional[_Iterable[float]] = ...) -> None: ...

class RandomizeReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusReply(_message.Message):
    __slots__ = ("party", "session_id", "iteration", "last_error", "sessions_served", "attempt", "key_sharings", "lease_left_seconds")
    PARTY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ITERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_SERVED_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    KEY_SHARINGS_FIELD_NUMBER: _ClassVar[int]
    LEASE_LEFT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    party: str
    session_id: str
    iteration: int
    last_error: str
    sessions_served: int
    attempt: int
    key_sharings: int
    lease_left_seconds: float
    def __init__(self, party: _Optional[str] = ..., session_id: _Optional[str] = ..., iteration: _Optional[int] = ..., last_error: _Optional[str] = ..., sessions_served: _Optional[int] = ..., attempt: _Optional[int] = ..., key_sharings: _Optional[int] = ..., lease_left_seconds: _Optional[float] = ...) -> None: ...

class RekeyRerunRequest(_message.Message):
    __slots__ = ("ref", "ring", "excluded")
    REF_FIELD_NUMBER: _ClassVar[int]
    RING_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    ring: _containers.RepeatedScalarFieldContainer[str]
    excluded: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., ring: _Optional[_Iterable[str]] = ..., excluded: _Optional[_Iterable[str]] = ...) -> None: ...

class RekeyRerunReply(_message.Message):
    __slots__ = ("party",)
    PARTY_FIELD_NUMBER: _ClassVar[int]
    party: str
    def __init__(self, party: _Optional[str] = ...) -> None: ...

class RejoinRequest(_message.Message):
    __slots__ = ("ref", "instructions", "union_round", "prefix_probe", "prefix_adopt", "rerun_ring")
    REF_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    UNION_ROUND_FIELD_NUMBER: _ClassVar[int]
    PREFIX_PROBE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_ADOPT_FIELD_NUMBER: _ClassVar[int]
    RERUN_RING_FIELD_NUMBER: _ClassVar[int]
    ref: SessionRef
    instructions: _containers.RepeatedCompositeFieldContainer[Instruction]
    union_round: int
    prefix_probe: PrefixProbe
    prefix_adopt: PrefixAdopt
    rerun_ring: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ref: _Optional[_Union[SessionRef, _Mapping]] = ..., instructions: _Optional[_Iterable[_Union[Instruction, _Mapping]]] = ..., union_round: _Optional[int] = ..., prefix_probe: _Optional[_Union[PrefixProbe, _Mapping]] = ..., prefix_adopt: _Optional[_Union[PrefixAdopt, _Mapping]] = ..., rerun_ring: _Optional[_Iterable[str]] = ...) -> None: ...

class RejoinReply(_message.Message):
    __slots__ = ("party", "restored")
    PARTY_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    party: str
    restored: bool
    def __init__(self, party: _Optional[str] = ..., restored: _Optional[bool] = ...) -> None: ...

class TunnelFrame(_message.Message):
    __slots__ = ("call", "reply", "hello_certificate")
    CALL_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    HELLO_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    call: TunnelCall
    reply: TunnelReply
    hello_certificate: bytes
    def __init__(self, call: _Optional[_Union[TunnelCall, _Mapping]] = ..., reply: _Optional[_Union[TunnelReply, _Mapping]] = ..., hello_certificate: _Optional[bytes] = ...) -> None: ...

class TunnelCall(_message.Message):
    __slots__ = ("call_id", "method", "request", "timeout_seconds", "peer", "hop")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    HOP_FIELD_NUMBER: _ClassVar[int]
    call_id: int
    method: str
    request: bytes
    timeout_seconds: float
    peer: str
    hop: HopHeader
    def __init__(self, call_id: _Optional[int] = ..., method: _Optional[str] = ..., request: _Optional[bytes] = ..., timeout_seconds: _Optional[float] = ..., peer: _Optional[str] = ..., hop: _Optional[_Union[HopHeader, _Mapping]] = ...) -> None: ...

class TunnelReply(_message.Message):
    __slots__ = ("call_id", "code", "details", "reply")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    call_id: int
    code: int
    details: str
    reply: bytes
    def __init__(self, call_id: _Optional[int] = ..., code: _Optional[int] = ..., details: _Optional[str] = ..., reply: _Optional[bytes] = ...) -> None: ...

class HopHeader(_message.Message):
    __slots__ = ("session_id", "iteration", "counter")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ITERATION_FIELD_NUMBER: _ClassVar[int]
    COUNTER_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    iteration: int
    counter: int
    def __init__(self, session_id: _Optional[str] = ..., iteration: _Optional[int] = ..., counter: _Optional[int] = ...) -> None: ...

class HopHandshake(_message.Message):
    __slots__ = ("session_id", "sender", "receiver", "public_key", "certificate", "signature")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    sender: str
    receiver: str
    public_key: bytes
    certificate: bytes
    signature: bytes
    def __init__(self, session_id: _Optional[str] = ..., sender: _Optional[str] = ..., receiver: _Optional[str] = ..., public_key: _Optional[bytes] = ..., certificate: _Optional[bytes] = ..., signature: _Optional[bytes] = ...) -> None: ...
