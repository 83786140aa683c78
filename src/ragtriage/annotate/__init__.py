"""Growing and auditing the labels: pooling, label import as new dataset versions, agreement, dataset checks."""

from ragtriage.annotate.agreement import Agreement, agreement, confusion_matrix, disagreements, kappa, label_pairs
from ragtriage.annotate.dataset_check import CHECK_CODES, dataset_check
from ragtriage.annotate.label_import import ImportReport, import_labels
from ragtriage.annotate.pool import build_pool, write_pool
from ragtriage.annotate.versions import fork_version, version_hash

__all__ = [
    "CHECK_CODES",
    "Agreement",
    "ImportReport",
    "agreement",
    "build_pool",
    "confusion_matrix",
    "dataset_check",
    "disagreements",
    "fork_version",
    "import_labels",
    "kappa",
    "label_pairs",
    "version_hash",
    "write_pool",
]
