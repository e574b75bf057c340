import os
import sys
from pathlib import Path

import pytest

# tests/reference.py is imported as a plain module by the tests.
sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes more than a minute; still runs in CI")
    config.addinivalue_line(
        "markers",
        "release: full-length runs, skipped unless QOSLAB_RELEASE=1 (the release checklist "
        "runs them: QOSLAB_RELEASE=1 pytest -m release tests)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("QOSLAB_RELEASE") == "1":
        return
    skip = pytest.mark.skip(reason="full-length run: set QOSLAB_RELEASE=1 (release checklist)")
    for item in items:
        if "release" in item.keywords:
            item.add_marker(skip)
