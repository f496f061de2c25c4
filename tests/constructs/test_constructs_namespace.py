"""constructs/ has no __init__.py: it merges into the `constructs` library's namespace."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_library_construct_and_project_modules_both_import() -> None:
    import constructs
    from constructs import Construct
    from constructs.inference_endpoint import InferenceEndpoint
    from constructs.serving_model import ServingModels

    assert Construct.__module__ == "constructs"  # the library's class, not a shadow
    assert issubclass(InferenceEndpoint, Construct) and issubclass(ServingModels, Construct)
    assert str(ROOT / "constructs") in list(constructs.__path__)


def test_project_constructs_dir_has_no_init_file() -> None:
    assert not (ROOT / "constructs" / "__init__.py").exists()
