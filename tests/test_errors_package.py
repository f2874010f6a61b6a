"""The exception tree ``txsql.errors``: a package of one module per area, re-exported whole.

Users catch ``txsql.errors.<Name>`` and executors report errors as traceback text naming
that, so what the package exports, and under which name, is its contract.
"""

from __future__ import annotations

import ast
import pickle
import traceback
from pathlib import Path

import pytest

import txsql.errors as errors
from txsql.engine.failures import typed_engine_error

PACKAGE_DIR = Path(errors.__file__).parent

# Classes without a default hint: the roots and family bases (their hint, if any, comes with
# each raise), leaves whose fix depends on the case and is given where they are raised, and
# TableNotEnrolledError, which builds its hint from the tables it names. A new class needs a
# default hint or a place here.
HINT_GIVEN_WHERE_RAISED = {
    "TxSqlError",
    "StorageError",
    "SqlError",
    "TransactionError",
    "InvalidTablePropertyError",
    "MagicUsageError",
    "RetentionTooShortError",
    "UnsupportedStatementError",
    "TableNotEnrolledError",
}


def _submodules() -> list[Path]:
    return sorted(p for p in PACKAGE_DIR.glob("*.py") if p.name != "__init__.py")


def _classes_defined_in_submodules() -> set[str]:
    names: set[str] = set()
    for path in _submodules():
        tree = ast.parse(path.read_text())
        names.update(n.name for n in tree.body if isinstance(n, ast.ClassDef))
    return names


def _exported() -> list[type]:
    return [getattr(errors, name) for name in errors.__all__]


def test_all_exports_exactly_the_public_classes_of_the_submodules() -> None:
    defined = _classes_defined_in_submodules()
    assert len(defined) > 70, "the walk did not find the submodules"
    public = {name for name in defined if not name.startswith("_")}
    assert sorted(errors.__all__) == sorted(public)


def test_every_export_belongs_to_the_tree() -> None:
    for cls in _exported():
        assert isinstance(cls, type), cls
        assert issubclass(cls, (errors.TxSqlError, errors.TxSqlWarning)), cls


def test_every_error_has_a_hint_unless_it_is_given_where_raised() -> None:
    for cls in _exported():
        if not issubclass(cls, errors.TxSqlError):
            continue
        if cls.__name__ in HINT_GIVEN_WHERE_RAISED:
            continue
        assert cls.default_hint.strip(), f"{cls.__name__} has no default hint"
    enrolled = errors.TableNotEnrolledError(("a", "b"))
    assert "multiTableTransactions" in enrolled.hint
    # Leaves that compute their hint from what they report.
    vacuumed = errors.VacuumedVersionError("gone", path="p", oldest_readable=3, latest=5)
    assert "VERSION AS OF 3" in vacuumed.hint
    too_long = errors.PartitionValueTooLongError("c", "x" * 10, 300)
    assert "c" in too_long.hint and too_long.hint != errors.StorageWriteError.default_hint
    assert str(too_long).endswith("How to fix: " + too_long.hint)


def test_two_family_leaves_keep_both_families() -> None:
    assert errors.VacuumedVersionError.__mro__[1:3] == (
        errors.VersionNotFoundError,
        errors.DataFileError,
    )
    assert issubclass(errors.TableCreatedConcurrentlyError, errors.ProtocolChangedError)
    assert issubclass(errors.TableCreatedConcurrentlyError, errors.TableExistsError)


@pytest.mark.parametrize("path", _submodules(), ids=lambda p: p.name)
def test_submodules_import_nothing_from_txsql_but_the_package(path: Path) -> None:
    tree = ast.parse(path.read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    outside = [m for m in imported if m.split(".")[0] == "txsql" and m != "txsql.errors"]
    outside = [m for m in outside if not m.startswith("txsql.errors.")]
    assert not outside, f"{path.name} imports {outside}"


def test_every_class_is_named_where_users_import_it() -> None:
    for cls in _exported():
        assert f"{cls.__module__}.{cls.__qualname__}" == f"txsql.errors.{cls.__name__}"
        assert pickle.loads(pickle.dumps(cls)) is cls


def test_an_error_raised_on_a_worker_comes_back_as_its_own_class() -> None:
    # A Spark Python worker sends its traceback as text; the driver finds the class by the
    # "txsql.errors.<Name>: message" line Python prints for it.
    try:
        raise errors.CorruptDeletionVectorError("deletion vector file d.bin: truncated")
    except errors.TxSqlError as raised:
        worker_text = "".join(traceback.format_exception(raised))
    typed = typed_engine_error(RuntimeError(worker_text))
    assert type(typed) is errors.CorruptDeletionVectorError
    assert typed.message == "deletion vector file d.bin: truncated"
    assert typed.hint == errors.CorruptDeletionVectorError.default_hint
